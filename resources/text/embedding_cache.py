"""A persistent store of sentence embeddings, keyed by (model name, sha256 of the text): one SQLite file, or, when
the Dagster instance is on Postgres, a table in its database (resources/models/cache_backend.py chooses;
resources/models/postgres_stores.py).

The file sits under the data directory's cache folder (`cache/embeddings.sqlite`, beside the call cache), so a rerun
and the other partitions' worker processes reuse vectors instead of encoding the same texts again. SQLite in
WAL mode lets several processes of one machine read and write the file at once; every write is one short transaction
of `INSERT OR IGNORE` (on Postgres, one `INSERT ... ON CONFLICT DO NOTHING`), so the first vector stored for a key is
kept and two workers storing the same text do not conflict. Vectors are stored as float32 bytes, exactly as the
encoder returned them (see docs/throughput.md for what reusing a vector does to the numbers).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from eyt_dagster.core import env_settings
from resources.storage.sqlite_files import SharedDatabase

EMBEDDING_CACHE_FILE = "cache/embeddings.sqlite"

# Off by default: a reused vector can differ from a fresh encoding in the last bits (its batch differs), and
# which worker stores a shared text first depends on scheduling, so two fresh runs would not be bit-identical.
# Set to "on" (or "1", "true", "yes") to trade that for speed (docs/throughput.md#cpu-work-embeddings).
CACHE_SWITCH = env_settings.EMBEDDING_CACHE.name

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
    return env_settings.EMBEDDING_CACHE.get()


class EmbeddingStore(Protocol):
    """Where EmbeddingCache keeps its rows (model, text_sha256, dim, vector bytes): SqliteEmbeddingStore (below) or
    PostgresEmbeddingStore (resources/models/postgres_stores.py)."""

    where: str

    def get_many(self, model: str, keys: Sequence[str]) -> list[tuple[str, int, bytes]]: ...
    def put_many(self, rows: Sequence[tuple[str, str, int, bytes]]) -> None: ...  # all or none; first kept
    def close(self) -> None: ...


class SqliteEmbeddingStore:
    def __init__(self, path: Path) -> None:
        self.where = str(path)
        self._db = SharedDatabase(path, _SCHEMA)

    def get_many(self, model: str, keys: Sequence[str]) -> list[tuple[str, int, bytes]]:
        found: list[tuple[str, int, bytes]] = []
        with self._db.use() as db:
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                found += db.execute(
                    f"SELECT text_sha256, dim, vector FROM embeddings WHERE model = ? AND text_sha256 IN ({marks})",
                    (model, *chunk),
                ).fetchall()
        return found

    def put_many(self, rows: Sequence[tuple[str, str, int, bytes]]) -> None:
        with self._db.use() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?, ?)", rows)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()


class EmbeddingCache:
    """Embedding vectors by (model, text); safe to share between threads and processes. `EmbeddingCache(path)` keeps
    them in a SQLite file, `EmbeddingCache(store=...)` wherever the store does."""

    def __init__(self, path: str | Path | None = None, *, store: EmbeddingStore | None = None) -> None:
        self.path = Path(path) if path is not None else None  # None: not a SQLite file
        if self.path is not None and store is None:
            self._store: EmbeddingStore = SqliteEmbeddingStore(self.path)
        elif store is not None and self.path is None:
            self._store = store
        else:
            raise ValueError("EmbeddingCache needs either a SQLite file path or a store")

    def __repr__(self) -> str:
        return f"EmbeddingCache({self._store.where!r})"

    def close(self) -> None:
        self._store.close()

    def get_many(self, model: str, texts: Sequence[str]) -> dict[int, np.ndarray]:
        """The stored vectors of `texts`, by position in `texts`; positions with none stored are absent."""
        keys = [text_key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        for key, dim, blob in self._store.get_many(model, keys):
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape != (dim,):
                raise ValueError(
                    f"embedding cache {self._store.where}: a stored vector of model '{model}' has "
                    f"{vector.size} values, not {dim}; delete the file (or the rows) to rebuild it"
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
        if rows:
            self._store.put_many(rows)
