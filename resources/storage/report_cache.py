"""The reports' result cache: per-cell and per-pair parts of the report tables, kept under a key of exactly their
inputs (eyt_dagster/core/result_cache.py), so the `eyt_reports` run after adding a target computes that target's
cells and pairs and reads the rest (docs/throughput.md, "The reports' result cache").

One SQLite file under the data directory's cache folder (`cache/report_results.sqlite`, beside the call cache), in
WAL mode, so several processes read and write it at once. A write is one short transaction of `INSERT OR IGNORE`:
a crashed writer leaves the file as it was, and two processes storing the same key store the same bytes (the key is
a hash of everything the value is computed from), so the first one kept is the right one. Delete the file to clear
it; `EYT_REPORT_CACHE=off` computes everything afresh (nothing read, nothing stored).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from eyt_dagster.core import env_settings
from eyt_dagster.core.result_cache import CacheCounters, MemoryStore, ResultStore
from resources.storage.sqlite_files import SharedDatabase
from resources.storage.warehouse_files import is_remote

REPORT_CACHE_FILE = "cache/report_results.sqlite"
CACHE_SWITCH = env_settings.REPORT_CACHE.name

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID
"""
_LOOKUP_CHUNK = 500  # keys per SELECT (older SQLite builds allow 999 parameters)


def cache_enabled() -> bool:
    return env_settings.REPORT_CACHE.get()


class ReportCache:
    """Stored report parts by (kind, key) in one SQLite file; safe to share between threads and processes.
    `counters` says how many keys this process found and computed, per kind."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = SharedDatabase(self.path, _SCHEMA)
        self.counters = CacheCounters()

    def __repr__(self) -> str:
        return f"ReportCache({str(self.path)!r})"

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._db.use() as db:
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = list(keys[start : start + _LOOKUP_CHUNK])
                marks = ",".join("?" * len(chunk))
                found.update(
                    db.execute(f"SELECT key, value FROM results WHERE kind = ? AND key IN ({marks})", (kind, *chunk))
                )
        return found

    def put_many(self, kind: str, items: Mapping[str, bytes]) -> None:
        if not items:
            return
        with self._db.use() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT OR IGNORE INTO results VALUES (?, ?, ?)", [(kind, k, v) for k, v in items.items()]
                )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def stored(self) -> dict[str, int]:
        """Keys stored per kind (all processes')."""
        with self._db.use() as db:
            return dict(db.execute("SELECT kind, count(*) FROM results GROUP BY kind").fetchall())

    def close(self) -> None:
        self._db.close()


def open_report_cache(data_dir: str | Path, shared_by_machines: bool = False) -> ResultStore:
    """The report cache of a data directory; a store that keeps nothing past this process when the cache is
    switched off, the data directory is an object store, or machines share it (`shared_by_machines`: the Dagster
    instance is on Postgres, docs/storage.md#the-call-cache-on-postgres: SQLite's locks do not hold on a network
    file system, so the reports compute from scratch there)."""
    if not cache_enabled() or is_remote(data_dir) or shared_by_machines:
        return MemoryStore()
    return ReportCache(Path(data_dir) / REPORT_CACHE_FILE)
