"""Opening a Postgres database that several threads, processes and machines share (the call cache, the call ledger
and the embedding cache when the Dagster instance is on Postgres: resources/models/cache_backend.py).

One connection per process and database, in autocommit (every statement is its own short transaction), used by one
thread at a time, opened on first use, opened again in a forked child (a connection must not cross a fork) and
after the server dropped it. The URL carries the password: it is never logged, put in an error message or
`repr`; errors name the database as `host:port/db` (`describe_url`).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

# Serialises the creation of the schema between processes: two sessions running CREATE ... IF NOT EXISTS at once
# can both pass the check and one fails on a unique key of the catalog.
_SCHEMA_LOCK_ID = int.from_bytes(hashlib.sha256(b"eyt schema").digest()[:8], "big", signed=True)
CONNECT_TIMEOUT_S = 10


class PostgresCacheError(RuntimeError):
    """The cache's Postgres database cannot be used (unreachable, refused, no right to create its tables)."""


def libpq_url(url: str) -> str:
    """A SQLAlchemy URL (`postgresql+psycopg2://...`, as a Dagster instance holds it) as libpq reads it."""
    return re.sub(r"^postgres(ql)?(\+[a-z0-9_]+)?://", "postgresql://", url, count=1)


def describe_url(url: str) -> str:
    """`host:port/db` of a Postgres URL, without user or password (a unix socket folder stands for the host)."""
    parts = urlsplit(libpq_url(url))
    query = parse_qs(parts.query)
    host = parts.hostname or (query.get("host") or ["localhost"])[0]
    port = parts.port or int((query.get("port") or ["5432"])[0])
    return f"{unquote(host)}:{port}/{unquote(parts.path.lstrip('/')) or '(default database)'}"


def advisory_key(text: str) -> int:
    """A 64-bit advisory-lock key for a text (two texts sharing a key only wait on each other, harmlessly)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def redact(message: str, url: str) -> str:
    password = urlsplit(libpq_url(url)).password
    if password:
        message = message.replace(unquote(password), "***").replace(password, "***")
    return message.strip()


class PostgresDatabase:
    """One connection per process to `url`. `tables` names the tables of `schema` (DDL, `CREATE ... IF NOT EXISTS`),
    which is applied once per process unless every table is there already (so a user who may not create tables can
    use tables an owner created)."""

    def __init__(self, url: str, *, schema_name: str, tables: Sequence[str], schema: str) -> None:
        self._url = url
        self.where = describe_url(url)
        self.schema_name, self._tables, self._schema = schema_name, tuple(tables), schema
        self._lock = threading.Lock()
        self._conn: Any = None
        self._pid: int | None = None
        self.generation = 0  # counts connections opened; advisory locks do not survive a new one

    def __repr__(self) -> str:
        return f"PostgresDatabase({self.where!r})"

    # -- connection ------------------------------------------------------------------------------

    def _connect(self) -> Any:
        import psycopg2

        try:
            conn = psycopg2.connect(
                libpq_url(self._url), connect_timeout=CONNECT_TIMEOUT_S, application_name="eyt-cache"
            )
        except psycopg2.Error as exc:
            raise PostgresCacheError(
                f"the cache database {self.where} (the Dagster instance's Postgres storage) cannot be reached: "
                f"{redact(str(exc), self._url)}. Check the instance's storage settings (DAGSTER_PG_* or the "
                f"postgres_url in DAGSTER_HOME/dagster.yaml); see docs/deploy.md"
            ) from None
        conn.autocommit = True
        with conn.cursor() as cur:
            # A commit returns before its WAL record is on disk, as SQLite's WAL with synchronous=NORMAL does: a
            # crash of the server can lose the last fraction of a second of rows, never corrupt the tables; without
            # it every row waits for an fsync (3 ms here, against 0.2 ms).
            cur.execute("SET synchronous_commit = off")
        try:
            self._create_schema(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _create_schema(self, conn: Any) -> None:
        import psycopg2

        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s AND table_name = ANY(%s)",
                (self.schema_name, list(self._tables)),
            )
            if cur.fetchone()[0] == len(self._tables):
                return
            try:
                cur.execute("BEGIN")
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_ID,))
                cur.execute(self._schema)
                cur.execute("COMMIT")
            except psycopg2.errors.InsufficientPrivilege as exc:
                cur.execute("ROLLBACK")
                raise PostgresCacheError(
                    f"the cache database {self.where}: the instance's user may not create schema "
                    f"'{self.schema_name}' and its tables ({exc.diag.message_primary or exc}). Grant it CREATE on the "
                    f"database, or have the owner create them once (docs/deploy.md)"
                ) from None
            except BaseException:
                if not conn.closed:
                    cur.execute("ROLLBACK")
                raise

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        with self._lock:
            if self._conn is None or self._conn.closed or self._pid != os.getpid():
                self._conn, self._pid = self._connect(), os.getpid()
                self.generation += 1
            yield self._conn

    def run(self, work: Callable[[Any], Any]) -> Any:
        """`work(cursor)` on this process's connection, by one thread at a time. When the connection turns out to be
        gone (a server restart, a dropped socket), it is opened again and `work` runs once more."""
        import psycopg2

        for attempt in (1, 2):
            with self._connection() as conn:
                try:
                    with conn.cursor() as cur:
                        return work(cur)
                except (psycopg2.OperationalError, psycopg2.InterfaceError):
                    if attempt == 2 or not conn.closed:
                        raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid() and not self._conn.closed:
                self._conn.close()
            self._conn = None

    # -- a lock shared by every process on the server ----------------------------------------------

    @contextmanager
    def advisory_lock(self, key: int, *, poll_s: float = 0.01, max_poll_s: float = 0.2) -> Iterator[None]:
        """Hold the session-level advisory lock `key` for the block; wait (polling, so the shared connection stays
        free for other threads) while another session holds it. The server releases it if this process dies. Callers
        must not enter it twice for one key in one process at once (a session's advisory locks are re-entrant)."""
        delay = poll_s
        while True:
            generation, taken = self.run(lambda cur: (self.generation, _fetch_one(cur, key)))
            if taken:
                break
            time.sleep(delay)
            delay = min(delay * 2, max_poll_s)
        try:
            yield
        finally:
            if self.generation == generation:  # a new connection holds no lock of the old one

                def unlock(cur: Any) -> None:
                    cur.execute("SELECT pg_advisory_unlock(%s)", (key,))

                self.run(unlock)


def _fetch_one(cur: Any, key: int) -> bool:
    cur.execute("SELECT pg_try_advisory_lock(%s)", (key,))
    return bool(cur.fetchone()[0])
