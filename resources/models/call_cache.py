"""The call cache and call ledger: one SQLite file next to (never inside) the DuckDB warehouse, or, when the Dagster
instance is on Postgres, tables in its database (resources/models/cache_backend.py chooses; resources/models/postgres_stores.py).

Why not the warehouse: DuckDB lets only one process open a database for writing, and during a
run that writer is the Dagster IO manager. Model calls happen inside many concurrent steps (and
threads within a step); if they wrote to the warehouse they would fight the IO manager for its lock.
SQLite in WAL mode lets many processes and threads of one machine read and write one file safely (writers take
turns under a busy timeout), so every call can be cached and logged the moment it finishes. A crash
loses nothing: a rerun finds the finished calls here and re-issues none of them. WAL needs memory shared by the
writers and SQLite's locks are unreliable on network file systems, so machines that share a data directory share
the Postgres tables instead (docs/storage.md#the-call-cache-on-postgres).

What is stored:

* `replies`: the raw reply of every successful HTTP call (its answer text; a thinking model's reasoning in its own
  column, with its tokens; the adaptation notes of the request), keyed by `CallCache.key(...)` (a sha256
  of the canonical JSON of model, base URL, messages, settings and seed). Only a usable reply is served from here:
  one that did not validate, or was cut at max_tokens, is moved to `rejected_replies` by the client (`reject`), so a
  later run asks again. The re-ask within a run carries the bad reply and the error, so its messages (and key)
  differ and it is cached on its own.
* `rejected_replies`: the replies that came back but could not be used, numbered per key (attempt 1, 2, ...), with
  why. They are evidence (the explorer's call page lists them), never an answer; after ModelRef.reply_attempts of
  them across runs, the client stops asking and the last one stands.
* `requests`: the request behind each key, stored once when it is first sent over the network: the JSON that the
  key hashes (model, base URL, messages, settings, seed), zlib-compressed. `eyt view` shows it on a call's page and
  checks that it hashes to the key. A key whose call was made before this table existed has no row.
* `json_modes`: the structured-output mode an endpoint accepted after a fallback (json_object or
  none), so a rerun goes straight to it and replays from the cache without touching the network.
  Delete the row (or the file) to try json_schema again.
* `adaptations`: what an endpoint taught by refusing a parameter (rename max_tokens, drop temperature, ...;
  eyt_dagster/core/provider_profiles.py), one row per endpoint, model and parameter, so every later process sends the
  adapted request at once. Delete a row to try the parameter as the slate asks again.

Identical requests in flight at once (threads of one process; on Postgres also processes on any machine) are sent
once: `CallCache.one_flight(key)` lets the first through and holds the others until it has finished, so they find its
reply here, as they would had they come one after another (the network calls and cache hits do not depend on the
schedule).
* `ledger`: one row per call, cached or not, ok or not: who (run, role, model, purpose), tokens,
  cost, latency, the HTTP retries the SDK made (also for a call that failed), and for a failed call
  its kind (`failure`, one of FAILURE_KINDS) and a short error. See docs/remote-models.md.

No table holds an API key or any request header. A request is stored with the user name and password of its base
URL (if any) removed and any occurrence of the model's key masked; such a request no longer hashes to its key, and
the call's page says so.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from eyt_dagster.core.errors import FAILURE_KINDS
from eyt_dagster.core.provider_profiles import Adaptation, split_notes
from resources.models.call_counters import count_call
from resources.storage.sqlite_files import SharedDatabase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    tokens_in INTEGER NOT NULL,
    tokens_out INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    finish_reason TEXT,
    created_at TEXT NOT NULL,
    reasoning TEXT,
    reasoning_tokens INTEGER,
    adaptations TEXT
);
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts TEXT NOT NULL,
    run_id TEXT,
    role TEXT NOT NULL,
    model_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    cache_key TEXT,
    cached INTEGER NOT NULL,
    tokens_in INTEGER NOT NULL,
    tokens_out INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    latency_s REAL NOT NULL,
    retries INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    error TEXT,
    failure TEXT,
    reasoning_tokens INTEGER,
    adaptations TEXT
);
CREATE INDEX IF NOT EXISTS ledger_run ON ledger (run_id);
-- how eyt view finds a row's call (by model and purpose) and a key's ledger rows, without reading the whole ledger
CREATE INDEX IF NOT EXISTS ledger_call ON ledger (model_id, purpose);
CREATE INDEX IF NOT EXISTS ledger_key ON ledger (cache_key);
CREATE TABLE IF NOT EXISTS requests (
    key TEXT PRIMARY KEY,
    request BLOB NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS json_modes (
    model TEXT NOT NULL,
    base_url TEXT NOT NULL,
    mode TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (model, base_url)
);
"""
# The adaptations table's columns, the same in SQLite and Postgres (resources/models/postgres_stores.py).
ADAPTATIONS_TABLE = """(
    model TEXT NOT NULL,
    base_url TEXT NOT NULL,
    param TEXT NOT NULL,
    action TEXT NOT NULL,
    value TEXT,
    source TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (model, base_url, param)
)"""
_SCHEMA += f"CREATE TABLE IF NOT EXISTS adaptations {ADAPTATIONS_TABLE};\n"
# Replies that came back but could not be used (they did not validate, or were cut at max_tokens): moved here out of
# `replies`, so a later run asks again, and kept as evidence, numbered per key (attempt 1 is the first unusable reply).
# The same columns in SQLite and Postgres (resources/models/postgres_stores.py).
REJECTED_TABLE = """(
    key TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    tokens_in INTEGER NOT NULL,
    tokens_out INTEGER NOT NULL,
    latency_s DOUBLE PRECISION NOT NULL,
    finish_reason TEXT,
    created_at TEXT NOT NULL,
    reasoning TEXT,
    reasoning_tokens INTEGER,
    adaptations TEXT,
    failure TEXT NOT NULL,
    error TEXT,
    rejected_at TEXT NOT NULL,
    PRIMARY KEY (key, attempt)
)"""
_SCHEMA += f"CREATE TABLE IF NOT EXISTS rejected_replies {REJECTED_TABLE};\n"

# Columns added after the first release of each table: a file written before gets them (old rows: NULL).
ADDED_COLUMNS = {
    "ledger": (("failure", "TEXT"), ("reasoning_tokens", "INTEGER"), ("adaptations", "TEXT")),
    "replies": (("reasoning", "TEXT"), ("reasoning_tokens", "INTEGER"), ("adaptations", "TEXT")),
}
REPLY_COLUMNS = (
    "key",
    "model",
    "text",
    "tokens_in",
    "tokens_out",
    "latency_s",
    "finish_reason",
    "created_at",
    "reasoning",
    "reasoning_tokens",
    "adaptations",
)
REPLY_READ = "text, tokens_in, tokens_out, latency_s, finish_reason, reasoning, reasoning_tokens, adaptations"

# Move a reply into rejected_replies as the key's next attempt ({p}: the tables' schema prefix); parameters: failure,
# error, rejected_at, key. INSERT OR IGNORE / ON CONFLICT: two processes rejecting one reply at once store it once.
REJECT_SQL = (
    "INSERT INTO {p}rejected_replies ("
    + ", ".join(REPLY_COLUMNS[:1])
    + ", attempt, "
    + ", ".join(REPLY_COLUMNS[1:])
    + ", failure, error, rejected_at) SELECT key, "
    "(SELECT COALESCE(MAX(attempt), 0) + 1 FROM {p}rejected_replies WHERE key = r.key), "
    + ", ".join(REPLY_COLUMNS[1:])
    + ", ?, ?, ? FROM {p}replies r WHERE r.key = ? ON CONFLICT (key, attempt) DO NOTHING"
)
REJECTED_READ = f"SELECT attempt, {REPLY_READ}, failure, error, rejected_at FROM {{p}}rejected_replies WHERE key = ? ORDER BY attempt"

ERROR_MAX_CHARS = 500

# Why a ledger row is not ok (column `failure`, NULL for an ok row): FAILURE_KINDS of eyt_dagster/core/errors.py.


@dataclass(frozen=True)
class CachedReply:
    """A reply as the server sent it (its answer text and usage), with the latency of the original call; a thinking
    model's reasoning apart (`reasoning`, with `reasoning_tokens` of `tokens_out`), and `adaptations`, the notes of
    what the request's profile or a refusal changed (join_notes of eyt_dagster/core/provider_profiles.py)."""

    text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    finish_reason: str | None = None
    reasoning: str | None = None
    reasoning_tokens: int | None = None
    adaptations: str | None = None

    @property
    def notes(self) -> tuple[str, ...]:
        """The adaptation notes, one each."""
        return split_notes(self.adaptations)


@dataclass(frozen=True)
class RejectedReply:
    """A reply that came back and could not be used: attempt n of its key, why (`failure`: invalid_reply or cut_reply,
    with `error`), when it was rejected."""

    attempt: int
    reply: CachedReply
    failure: str
    error: str | None
    rejected_at: str


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, unicode kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def decode_request(blob: bytes) -> dict[str, Any]:
    """A `requests` row's request (zlib-compressed canonical JSON)."""
    return json.loads(zlib.decompress(blob).decode())


def without_credentials(url: str) -> str:
    """`url` without a user name and password (scheme://user:pass@host -> scheme://host)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=netloc))


# The network calls after a ledger id, per model: what spend caps count (eyt_dagster/core/budget.py). One range scan
# of the primary key, so a process reading it before every call reads only the rows written since its last look.
PAID_SINCE = (
    "SELECT model_id, SUM(cost_usd) AS cost_usd, COUNT(*) AS calls, MAX(id) AS last_id FROM {p}ledger "
    "WHERE id > ? AND cached = 0 GROUP BY model_id"
)


def paid_since_rows(rows: Sequence[Row], after_id: int) -> tuple[int, list[Row]]:
    last = max((int(r[3]) for r in rows), default=after_id)
    return last, [(str(r[0]), float(r[1] or 0.0), int(r[2])) for r in rows]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _add_columns(conn: sqlite3.Connection) -> None:
    """A file written before a column of ADDED_COLUMNS existed gets it (its old rows have NULL there)."""
    for table, added in ADDED_COLUMNS.items():
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for name, kind in added:
            if name in columns:
                continue
            try:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise


_FLIGHTS: dict[str, list[Any]] = {}  # cache key -> [lock, holders]
_FLIGHTS_LOCK = threading.Lock()


@contextmanager
def one_flight(key: str) -> Iterator[None]:
    """Hold the block while another thread of this process holds it for the same key (see the module
    docstring); different keys never wait on each other. `CallCache.one_flight` adds other processes."""
    with _FLIGHTS_LOCK:
        entry = _FLIGHTS.setdefault(key, [threading.Lock(), 0])
        entry[1] += 1
    try:
        with entry[0]:
            yield
    finally:
        with _FLIGHTS_LOCK:
            entry[1] -= 1
            if entry[1] == 0:
                del _FLIGHTS[key]


LEDGER_COLUMNS = (
    "ts",
    "run_id",
    "role",
    "model_id",
    "purpose",
    "cache_key",
    "cached",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "latency_s",
    "retries",
    "ok",
    "error",
    "failure",
    "reasoning_tokens",
    "adaptations",
)


Row = tuple[Any, ...]  # one row of a store's table, its values as the database hands them back


class CallStore(Protocol):
    """Where CallCache keeps its rows: SqliteCallStore (below) or PostgresCallStore (resources/models/postgres_stores.py).
    A reply row holds REPLY_COLUMNS; a json_modes row is (model, base_url, mode, updated_at); an adaptations row
    (model, base_url, param, action, value as JSON, source, updated_at)."""

    where: str

    def get_reply(self, key: str) -> Row | None: ...
    def put_reply(self, row: Row) -> None: ...  # the first row stored under a key is kept
    def count_replies(self) -> int: ...
    # move the key's reply to rejected_replies as its next attempt (row: failure, error, rejected_at); False when the
    # key had no reply (another process rejected it first)
    def reject_reply(self, key: str, row: Row) -> bool: ...
    def rejected_replies(self, key: str) -> list[Row]: ...  # (attempt, *REPLY_READ, failure, error, rejected_at)
    def put_request(self, row: Row) -> None: ...  # (key, zlib bytes, created_at); the first row is kept
    def get_request(self, key: str) -> bytes | None: ...
    def get_json_mode(self, model: str, base_url: str) -> str | None: ...
    def set_json_mode(self, row: Row) -> None: ...  # replaces the endpoint's row
    def get_adaptations(self, model: str, base_url: str) -> list[Row]: ...  # (param, action, value, source)
    def set_adaptation(self, row: Row) -> None: ...  # replaces the endpoint's row for the parameter
    def append_ledger(self, columns: Sequence[str], row: Row) -> None: ...
    # names, rows in call order (one run's, or all runs'; only those with an id above `after_id`)
    def ledger_rows(self, run_id: str | None, after_id: int = 0) -> tuple[list[str], list[Row]]: ...
    # (the last ledger id read, [(model_id, USD, network calls)] of the network calls after `after_id`)
    def paid_since(self, after_id: int) -> tuple[int, list[Row]]: ...
    def flight(self, key: str) -> AbstractContextManager[None]: ...  # across processes, where the store can
    def close(self) -> None: ...


class SqliteCallStore:
    """The rows of CallCache in one SQLite file (WAL), for one machine."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)
        self._shared = SharedDatabase(path, _SCHEMA, prepare=_add_columns)

    def _db(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._shared.use()

    def get_reply(self, key: str) -> Row | None:
        with self._db() as db:
            return db.execute(f"SELECT {REPLY_READ} FROM replies WHERE key = ?", (key,)).fetchone()

    def put_reply(self, row: Row) -> None:
        with self._db() as db:
            db.execute(
                f"INSERT OR IGNORE INTO replies ({', '.join(REPLY_COLUMNS)}) VALUES ({', '.join('?' * len(row))})", row
            )

    def count_replies(self) -> int:
        with self._db() as db:
            return int(db.execute("SELECT count(*) FROM replies").fetchone()[0])

    def reject_reply(self, key: str, row: Row) -> bool:
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")  # one transaction: the reply is in exactly one of the two tables
            try:
                moved = db.execute(REJECT_SQL.format(p=""), (*row, key)).rowcount
                db.execute("DELETE FROM replies WHERE key = ?", (key,))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        return moved > 0

    def rejected_replies(self, key: str) -> list[Row]:
        with self._db() as db:
            return db.execute(REJECTED_READ.format(p=""), (key,)).fetchall()

    def put_request(self, row: Row) -> None:
        with self._db() as db:
            db.execute("INSERT OR IGNORE INTO requests VALUES (?, ?, ?)", row)

    def get_request(self, key: str) -> bytes | None:
        with self._db() as db:
            row = db.execute("SELECT request FROM requests WHERE key = ?", (key,)).fetchone()
        return bytes(row[0]) if row else None

    def get_json_mode(self, model: str, base_url: str) -> str | None:
        with self._db() as db:
            row = db.execute(
                "SELECT mode FROM json_modes WHERE model = ? AND base_url = ?", (model, base_url)
            ).fetchone()
        return row[0] if row else None

    def set_json_mode(self, row: Row) -> None:
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO json_modes VALUES (?, ?, ?, ?)", row)

    def get_adaptations(self, model: str, base_url: str) -> list[Row]:
        with self._db() as db:
            return db.execute(
                "SELECT param, action, value, source FROM adaptations WHERE model = ? AND base_url = ? ORDER BY param",
                (model, base_url),
            ).fetchall()

    def set_adaptation(self, row: Row) -> None:
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO adaptations VALUES (?, ?, ?, ?, ?, ?, ?)", row)

    def append_ledger(self, columns: Sequence[str], row: Row) -> None:
        with self._db() as db:
            db.execute(f"INSERT INTO ledger ({', '.join(columns)}) VALUES ({', '.join('?' * len(row))})", row)

    def ledger_rows(self, run_id: str | None, after_id: int = 0) -> tuple[list[str], list[Row]]:
        query = "SELECT * FROM ledger WHERE id > ?" + (" AND run_id = ?" if run_id is not None else "") + " ORDER BY id"
        with self._db() as db:
            cursor = db.execute(query, (after_id, run_id) if run_id is not None else (after_id,))
            return [d[0] for d in cursor.description], cursor.fetchall()

    def paid_since(self, after_id: int) -> tuple[int, list[Row]]:
        with self._db() as db:
            return paid_since_rows(db.execute(PAID_SINCE.format(p=""), (after_id,)).fetchall(), after_id)

    def flight(self, key: str) -> AbstractContextManager[None]:
        """Nothing across processes: on one machine, processes sending one request at once each send it."""
        return nullcontext()

    def close(self) -> None:
        self._shared.close()


class CallCache:
    """Cached replies and the call ledger; safe to share between threads and processes. `CallCache(path)` keeps them
    in a SQLite file, `CallCache(store=...)` wherever the store does (resources/models/cache_backend.py opens the one the
    Dagster instance calls for)."""

    def __init__(self, path: str | Path | None = None, *, store: CallStore | None = None) -> None:
        self.path = Path(path) if path is not None else None  # None: not a SQLite file
        if self.path is not None and store is None:
            self._store: CallStore = SqliteCallStore(self.path)
        elif store is not None and self.path is None:
            self._store = store
        else:
            raise ValueError("CallCache needs either a SQLite file path or a store")

    @property
    def where(self) -> str:
        """Where the rows are: the SQLite file, or the Postgres database (host, port, database; no credentials)."""
        return self._store.where

    def __repr__(self) -> str:
        return f"CallCache({self.where!r})"

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- replies ----------------------------------------------------------------------------

    @staticmethod
    def request(
        *,
        model: str,
        base_url: str,
        messages: list[dict[str, Any]],
        settings: dict[str, Any],
        seed: int | None,
        repeat: int = 0,
    ) -> dict[str, Any]:
        """Everything that decides a reply, as the key hashes it. `settings` holds temperature, max_tokens,
        reasoning_effort, extra_body and response_format (kind and schema). Never pass a key here. `repeat` is
        the sample's index when the slate asks for repeats; it is in the key from repeat 1 on, so repeat 0 has
        the key a call had before repeats existed, and no two repeats share a reply even on a server that ignores
        the seed."""
        request = {
            "model": model,
            "base_url": base_url.rstrip("/"),
            "messages": messages,
            "settings": settings,
            "seed": seed,
        }
        return {**request, "repeat": repeat} if repeat else request

    @staticmethod
    def key_of(request: dict[str, Any]) -> str:
        """The cache key of a request (CallCache.request): sha256 of its canonical JSON."""
        return hashlib.sha256(canonical_json(request).encode()).hexdigest()

    @staticmethod
    def key(
        *, model: str, base_url: str, messages: list[dict[str, Any]], settings: dict[str, Any], seed: int | None
    ) -> str:
        """sha256 of everything that decides a reply (CallCache.request)."""
        return CallCache.key_of(
            CallCache.request(model=model, base_url=base_url, messages=messages, settings=settings, seed=seed)
        )

    def put_request(self, key: str, request: dict[str, Any], redact: Callable[[str], str] = str) -> None:
        """Keep the request behind `key` (the first one stored is kept), without the base URL's user name and
        password and with `redact` applied to its JSON (it masks the model's key, should a setting hold it)."""
        shown = {**request, "base_url": without_credentials(str(request.get("base_url", "")))}
        self._store.put_request((key, zlib.compress(redact(canonical_json(shown)).encode()), _now()))

    def stored_request(self, key: str) -> dict[str, Any] | None:
        """The request stored under `key`, or None (never sent from this cache, or sent before requests were kept)."""
        blob = self._store.get_request(key)
        return None if blob is None else decode_request(blob)

    def get(self, key: str) -> CachedReply | None:
        row = self._store.get_reply(key)
        return CachedReply(*row) if row else None

    def put(
        self,
        key: str,
        *,
        model: str,
        text: str,
        tokens_in: int,
        tokens_out: int,
        latency_s: float,
        finish_reason: str | None = None,
        reasoning: str | None = None,
        reasoning_tokens: int | None = None,
        adaptations: str | None = None,
    ) -> None:
        """Store a raw HTTP reply. The first reply stored under a key is kept (replays stay stable)."""
        self._store.put_reply(
            (
                key,
                model,
                text,
                tokens_in,
                tokens_out,
                latency_s,
                finish_reason,
                _now(),
                reasoning or None,
                reasoning_tokens,
                adaptations or None,
            )
        )

    def __len__(self) -> int:
        return self._store.count_replies()

    def reject(self, key: str, failure: str, error: str | None) -> bool:
        """The reply under `key` could not be used (`failure`: invalid_reply or cut_reply): it leaves the replies a
        lookup serves and is kept in rejected_replies as the key's next attempt. False when there was none to move."""
        return self._store.reject_reply(key, (failure, (error or "")[:ERROR_MAX_CHARS] or None, _now()))

    def rejected(self, key: str) -> list[RejectedReply]:
        """The unusable replies of `key`, first attempt first."""
        return [
            RejectedReply(row[0], CachedReply(*row[1:9]), row[9], row[10], row[11])
            for row in self._store.rejected_replies(key)
        ]

    @contextmanager
    def one_flight(self, key: str) -> Iterator[None]:
        """Hold the block while another thread of this process, or (on Postgres) another process, holds it for the
        same key; different keys never wait on each other (see the module docstring)."""
        with one_flight(key), self._store.flight(key):
            yield

    # -- structured-output modes -------------------------------------------------------------

    def json_mode(self, model: str, base_url: str) -> str | None:
        """The structured-output mode remembered for this endpoint and model, if a fallback happened."""
        return self._store.get_json_mode(model, base_url.rstrip("/"))

    def set_json_mode(self, model: str, base_url: str, mode: str) -> None:
        self._store.set_json_mode((model, base_url.rstrip("/"), mode, _now()))

    # -- provider adaptations learned from refusals --------------------------------------------

    def adaptations(self, model: str, base_url: str) -> list[Adaptation]:
        """The adaptations this endpoint and model taught by refusing a parameter (eyt_dagster/core/provider_profiles.py),
        kept for every later process. Delete the endpoint's rows of the `adaptations` table to try the parameters again."""
        rows = self._store.get_adaptations(model, base_url.rstrip("/"))
        return [Adaptation(p, action, json.loads(v) if v else None, source) for p, action, v, source in rows]

    def set_adaptation(self, model: str, base_url: str, adaptation: Adaptation) -> None:
        value = json.dumps(adaptation.value) if adaptation.value is not None else None
        row = (model, base_url.rstrip("/"), adaptation.param, adaptation.action, value, adaptation.source, _now())
        self._store.set_adaptation(row)

    # -- ledger -----------------------------------------------------------------------------

    def record(
        self,
        *,
        role: str,
        model_id: str,
        purpose: str,
        cached: bool,
        ok: bool = True,
        tokens_in: int = 0,
        tokens_out: int = 0,
        cost_usd: float = 0.0,
        latency_s: float = 0.0,
        retries: int = 0,
        error: str | None = None,
        failure: str | None = None,
        run_id: str | None = None,
        cache_key: str | None = None,
        reasoning_tokens: int = 0,
        adaptations: str | None = None,
    ) -> None:
        """Append one call to the ledger. `error` must already be free of secrets; it is truncated.
        `failure` is the kind of a failed call (a key of FAILURE_KINDS); `adaptations` the notes of what the provider's
        profile or refusals changed in the request."""
        if failure is not None and failure not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind '{failure}'; the kinds are {sorted(FAILURE_KINDS)}")
        if error is not None:
            error = error[:ERROR_MAX_CHARS]
        row = (
            _now(),
            run_id,
            role,
            model_id,
            purpose,
            cache_key,
            int(cached),
            tokens_in,
            tokens_out,
            cost_usd,
            latency_s,
            retries,
            int(ok),
            error,
            failure,
            reasoning_tokens,
            adaptations or None,
        )
        self._store.append_ledger(LEDGER_COLUMNS, row)
        failed = None if ok else failure or "unknown"
        count_call(cached=cached, tokens=tokens_in + tokens_out, cost_usd=cost_usd, retries=retries, failure=failed)

    def paid_since(self, after_id: int) -> tuple[int, list[Row]]:
        """The last ledger id read, and (model_id, USD, network calls) of the network calls after `after_id`."""
        return self._store.paid_since(after_id)

    def ledger(self, run_id: str | None = None, after_id: int = 0) -> list[dict[str, Any]]:
        """Ledger rows in call order, all runs or one run, those with an id above `after_id` (0: all); `cached` and
        `ok` come back as bools."""
        names, values = self._store.ledger_rows(run_id, after_id)
        rows = [dict(zip(names, row)) for row in values]
        for row in rows:
            row["cached"], row["ok"] = bool(row["cached"]), bool(row["ok"])
        return rows

    def summary(self, run_id: str | None = None, *, by_model: bool = False) -> dict[str, dict[str, Any]]:
        """Totals per role (or per 'role/model_id'): calls, network_calls, cache_hits, failures (and
        `failures_by_kind`, e.g. {"timeout": 2}), retries, tokens, cost_usd (every reply's cost, cached or
        not) and spent_usd (network calls only)."""
        totals: dict[str, dict[str, Any]] = {}
        for row in self.ledger(run_id):
            name = f"{row['role']}/{row['model_id']}" if by_model else row["role"]
            t = totals.setdefault(
                name,
                dict.fromkeys(
                    ("calls", "network_calls", "cache_hits", "failures", "retries", "tokens_in", "tokens_out"), 0
                )
                | {"cost_usd": 0.0, "spent_usd": 0.0, "latency_s": 0.0, "failures_by_kind": {}},
            )
            t["calls"] += 1
            if not row["ok"]:
                kind = row["failure"] or "unknown"
                t["failures_by_kind"][kind] = t["failures_by_kind"].get(kind, 0) + 1
            t["cache_hits" if row["cached"] else "network_calls"] += 1
            t["failures"] += 0 if row["ok"] else 1
            t["retries"] += row["retries"]
            t["tokens_in"] += row["tokens_in"]
            t["tokens_out"] += row["tokens_out"]
            t["cost_usd"] += row["cost_usd"]
            t["spent_usd"] += 0.0 if row["cached"] else row["cost_usd"]
            t["latency_s"] += row["latency_s"]
        return totals
