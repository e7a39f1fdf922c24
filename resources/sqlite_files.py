"""Opening a SQLite file that several threads and processes share (the call cache, the embedding cache)."""

from __future__ import annotations

import sqlite3
import time
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
