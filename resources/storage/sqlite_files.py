"""Opening a SQLite file that several threads and processes share (the call cache, the embedding cache)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def _switch_to_wal(conn: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Put the file in WAL mode. Two processes opening a new file at once can get "database is locked" here
    at once, without SQLite's busy wait (seen with two workers starting together), so it is retried."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def open_shared(path: Path, schema: str) -> sqlite3.Connection:
    """A connection to `path` (created with its folder if missing) in WAL mode, autocommit, usable from any
    thread of this process (callers hold their own lock), with `schema` (CREATE ... IF NOT EXISTS) applied."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False, isolation_level=None)
    _switch_to_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(schema)
    return conn


class SharedDatabase:
    """One connection per process to a shared SQLite file: opened on first use, opened again in a forked child
    (a SQLite handle must not cross a fork), and used by one thread at a time. `prepare` runs once per opening,
    after the schema (e.g. a migration of an older file)."""

    def __init__(self, path: Path, schema: str, prepare: Callable[[sqlite3.Connection], None] | None = None) -> None:
        self.path, self._schema, self._prepare = path, schema, prepare
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None

    @contextmanager
    def use(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None or self._pid != os.getpid():
                conn = open_shared(self.path, self._schema)
                if self._prepare is not None:
                    self._prepare(conn)
                self._conn, self._pid = conn, os.getpid()
            yield self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
