"""A persistent store of sentence embeddings, keyed by (model name, sha256 of the text), in one SQLite file.

It sits under the data directory's cache folder (`cache/embeddings.sqlite`, beside the call cache), so a rerun
and the other partitions' worker processes reuse vectors instead of encoding the same texts again. SQLite in
WAL mode lets several processes read and write the file at once; every write is one short transaction of
`INSERT OR IGNORE`, so the first vector stored for a key is kept and two workers storing the same text do not
conflict. Vectors are stored as float32 bytes, exactly as the encoder returned them (see docs/throughput.md
for what reusing a vector does to the numbers).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from resources.sqlite_files import SharedDatabase

EMBEDDING_CACHE_FILE = "cache/embeddings.sqlite"

# Off by default: a reused vector can differ from a fresh encoding in the last bits (its batch differs), and
# which worker stores a shared text first depends on scheduling, so two fresh runs would not be bit-identical.
# Set to "on" (or "1", "true", "yes") to trade that for speed (docs/throughput.md#cpu-work-embeddings).
CACHE_SWITCH = "EYT_EMBEDDING_CACHE"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_sha256)
)
"""

# SQLite allows at most 999 parameters in one statement in older builds; one lookup asks for fewer.
_LOOKUP_CHUNK = 500


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_enabled() -> bool:
    return os.environ.get(CACHE_SWITCH, "off").strip().lower() in {"on", "1", "true", "yes"}


class EmbeddingCache:
    """Embedding vectors by (model, text); safe to share between threads and processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = SharedDatabase(self.path, _SCHEMA)

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.path)!r})"

    def close(self) -> None:
        self._db.close()

    def get_many(self, model: str, texts: Sequence[str]) -> dict[int, np.ndarray]:
        """The stored vectors of `texts`, by position in `texts`; positions with none stored are absent."""
        keys = [text_key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._db.use() as db:
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT text_sha256, dim, vector FROM embeddings WHERE model = ? AND text_sha256 IN ({marks})",
                    (model, *chunk),
                ).fetchall()
                for key, dim, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape != (dim,):
                        raise ValueError(
                            f"embedding cache {self.path}: a stored vector of model '{model}' has "
                            f"{vector.size} values, not {dim}; delete the file to rebuild it"
                        )
                    found[key] = vector
        return {i: found[k] for i, k in enumerate(keys) if k in found}

    def put_many(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store one vector per text, in one short transaction; a key already stored keeps its vector."""
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        rows = [
            (model, text_key(t), int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
            for t, v in zip(texts, vectors)
        ]
        if not rows:
            return
        with self._db.use() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?, ?)", rows)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
