"""Reading the call cache and ledger without writing to them, on either backend (resources/models/cache_backend.py): the
explorer's view of which call made a row, and what was sent and answered.

The SQLite file is opened read-only (`mode=ro`); the Postgres tables of schema `eyt` through a connection whose
transactions are read-only (`default_transaction_read_only`). Both hold the same columns (resources/models/postgres_stores.py
mirrors the SQLite file), so one set of queries serves both, with the backend's placeholder and table prefix. A
source that is not there (no cache file yet, a database whose tables no run has created) reads as empty and says
why (`missing`); a database that cannot be reached raises PostgresCacheError naming it without its password.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from resources.models.cache_backend import CALL_CACHE_FILE, CacheBackend
from resources.models.call_cache import PAID_SINCE

Row = dict[str, Any]


class CallReads:
    """Read-only queries over one call cache, each written once with `?` placeholders and `{p}` before a table name,
    run on the backend's connection with its placeholder and schema prefix. Without a connection (a source that is
    not there) every query reads as empty and `missing` says why."""

    def __init__(self, connection: Any = None, *, placeholder: str = "?", prefix: str = "", missing: str = "") -> None:
        self._connection = connection
        self._placeholder, self._prefix = placeholder, prefix
        self.missing = missing if connection is None else ""

    def _rows(self, sql: str, params: Sequence[Any], missing_table_ok: bool = False) -> list[Row]:
        if self._connection is None:
            return []
        text = sql.replace("?", self._placeholder).format(p=self._prefix)
        cursor = self._connection.cursor()
        try:
            try:
                cursor.execute(text, tuple(params))
            except Exception as exc:
                if missing_table_ok and _no_such_table(exc):
                    self._connection.rollback()  # Postgres: a failed statement aborts the transaction
                    return []
                raise
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def replies_for(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str, str, str]]:
        """(model id, purpose, cache key, reply text) of every ledger call of the given (model id, purpose) pairs
        whose reply is cached."""
        if not pairs:
            return []
        where = " OR ".join("(l.model_id = ? AND l.purpose = ?)" for _ in pairs)
        sql = (
            "SELECT DISTINCT l.model_id, l.purpose, l.cache_key, r.text FROM {p}ledger l "
            f"JOIN {{p}}replies r ON r.key = l.cache_key WHERE {where}"
        )
        rows = self._rows(sql, [v for pair in pairs for v in pair])
        return [(r["model_id"], r["purpose"], r["cache_key"], r["text"]) for r in rows]

    def calls_of_roles(self, roles: Sequence[str]) -> list[Row]:
        """The figures of every ledger call of the given roles (role, model_id, purpose, run_id, cached, tokens,
        latency), in call order: the history `eyt plan` estimates from."""
        if not roles:
            return []
        sql = (
            "SELECT role, model_id, purpose, run_id, cached, tokens_in, tokens_out, reasoning_tokens, latency_s "
            f"FROM {{p}}ledger WHERE role IN ({', '.join('?' for _ in roles)}) ORDER BY id"
        )
        return self._rows(sql, list(roles))

    def paid_by_model(self) -> dict[str, tuple[float, int]]:
        """Each model id's network calls in the ledger: (USD, calls), what the spend caps count."""
        rows = self._rows(PAID_SINCE, [0])
        return {str(r["model_id"]): (float(r["cost_usd"] or 0.0), int(r["calls"])) for r in rows}

    def last_ledger_id(self) -> int:
        """The id of the ledger's newest row (0 for an empty ledger): where a command's own calls will start."""
        rows = self._rows("SELECT MAX(id) AS last FROM {p}ledger", [])
        return int(rows[0]["last"] or 0) if rows else 0

    def reply(self, key: str) -> Row | None:
        """The replies row of `key` (model, text, tokens, latency, finish_reason, created_at), or None."""
        rows = self._rows("SELECT * FROM {p}replies WHERE key = ?", [key])
        return rows[0] if rows else None

    def rejected(self, key: str) -> list[Row]:
        """The unusable replies of `key` (rejected_replies), first attempt first; none in a cache file older than the
        table."""
        return self._rows(
            "SELECT * FROM {p}rejected_replies WHERE key = ? ORDER BY attempt", [key], missing_table_ok=True
        )

    def ledger(self, key: str) -> list[Row]:
        """Every ledger row of `key`, in call order (cached or not, ok or not)."""
        return self._rows("SELECT * FROM {p}ledger WHERE cache_key = ? ORDER BY id", [key])

    def request(self, key: str) -> bytes | None:
        """The stored request of `key` (zlib-compressed JSON), or None (also in a cache file older than the
        table)."""
        rows = self._rows("SELECT request FROM {p}requests WHERE key = ?", [key], missing_table_ok=True)
        return bytes(rows[0]["request"]) if rows else None


def _no_such_table(exc: Exception) -> bool:
    text = str(exc).lower()
    return "no such table" in text or ("relation" in text and "does not exist" in text)


@contextmanager
def open_call_reads(data_dir: str | Path, backend: CacheBackend) -> Iterator[CallReads]:
    """The call cache of `data_dir` on `backend`, read-only, for the length of the block."""
    if backend.kind == "postgres":
        with _postgres(backend) as reads:
            yield reads
        return
    path = Path(data_dir) / CALL_CACHE_FILE
    if not path.exists():
        yield CallReads(missing="no call cache in this data directory")
        return
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    with closing(con):
        yield CallReads(con)


@contextmanager
def _postgres(backend: CacheBackend) -> Iterator[CallReads]:
    import psycopg2

    from resources.models.postgres_stores import SCHEMA_NAME
    from resources.storage.postgres_db import CONNECT_TIMEOUT_S, PostgresCacheError, describe_url, libpq_url, redact

    url = backend.postgres_url
    assert url is not None
    try:
        con = psycopg2.connect(
            libpq_url(url),
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="eyt-view",
            options="-c default_transaction_read_only=on",
        )
    except psycopg2.Error as exc:
        raise PostgresCacheError(
            f"the call cache database {describe_url(url)} (the Dagster instance's Postgres storage) cannot be "
            f"reached: {redact(str(exc), url)}. Check the instance's storage settings in DAGSTER_HOME/dagster.yaml"
        ) from None
    with closing(con):
        with con.cursor() as cur:
            cur.execute("SELECT to_regclass(%s)", (f"{SCHEMA_NAME}.ledger",))
            found = cur.fetchone()
        table = found[0] if found else None
        con.rollback()
        if table is None:
            yield CallReads(missing=f"no call cache yet in {describe_url(url)} (no run has made a model call)")
            return
        yield CallReads(con, placeholder="%s", prefix=f"{SCHEMA_NAME}.")
