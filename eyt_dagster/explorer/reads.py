"""Read-only access to the warehouse and the call cache, for the explorer.

Each query gets a fresh connection (to the explorer's one in-memory DuckDB database) with one temporary view per
table it names, over that table's Parquet files as they are at that moment (eyt.duckdb is never opened, so no lock is taken or awaited: docs/storage.md).
The call cache is read read-only where the Dagster instance keeps it (resources/models/call_reads.py): its SQLite file with
`mode=ro`, so a run writing to it is never held up, or the instance's Postgres database in read-only transactions.

A page about one target (or one pool) names it as a partition filter: the views then read only the files of the
matching partition folders (`<column>=<value>/`, resources/storage/warehouse_files.py), not every target's. Nothing is
cached between pages but what was computed from a file version (the distinct values of Warehouse.distinct, the
leaderboard's explanations in explain.py), so a partition a run writes is seen by the next page."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from eyt_dagster.table_registry import catalog
from resources.models.cache_backend import CacheBackend
from resources.models.call_reads import CallReads, open_call_reads
from resources.storage.warehouse_files import (
    SCHEMA_FILE,
    as_path,
    data_files,
    decode_value,
    reader,
    table_dir,
    warehouse_root,
)

# A partition filter: column -> the value, or the values, whose partition folders are read.
Partitions = Mapping[str, str | Iterable[str]]

# Warehouse.distinct's values per file version: (path, size, mtime, inode, columns) -> the distinct rows
_DISTINCT: dict[tuple[Any, ...], frozenset[tuple[Any, ...]]] = {}
_DISTINCT_MAX = 20_000


class Warehouse:
    """The data directory an explorer reads: its Parquet files, and its call cache on `call_backend` (the SQLite
    file under the data directory unless said otherwise)."""

    def __init__(self, data_dir: Path, call_backend: CacheBackend | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.call_backend = call_backend or CacheBackend("sqlite")
        self.root = warehouse_root(self.data_dir)
        self._database: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> duckdb.DuckDBPyConnection:
        """A new connection to this explorer's one in-memory database (opening a database costs ~30 ms, a
        connection to an open one ~0.5 ms). Its views are TEMP, so each connection sees only its own."""
        with self._lock:
            if self._database is None:
                self._database = reader(self.root)
            return self._database.cursor()

    def files(self, table: str, partitions: Partitions | None = None) -> list[str]:
        """The table's schema file (its columns, zero rows) first, then its data files: with `partitions`, only
        those in folders of the named values (a folder of a column not named is read whatever its value)."""
        folder = as_path(table_dir(self.root, table))
        schema = folder / SCHEMA_FILE
        wanted = {c: {v} if isinstance(v, str) else set(v) for c, v in (partitions or {}).items()}
        return ([str(schema)] if schema.exists() else []) + sorted(map(str, _walk(folder, wanted)))

    def hidden_targets(self) -> set[str]:
        """Targets this reader must not name where a table lists models rather than targets (reports.run_costs):
        none here; a static export's reader hides the targets it did not select."""
        return set()

    def partition_values(self, table: str, column: str, partitions: Partitions | None = None) -> set[str] | None:
        """The values of `column` a table has partition folders of (among the folders of `partitions`' values),
        read from the folder names alone; None when some of its data files lie outside such folders (then only a
        query can tell)."""
        folder = as_path(table_dir(self.root, table))
        found: set[str] = set()
        if partitions:
            wanted = {c: {v} if isinstance(v, str) else set(v) for c, v in partitions.items()}
            paths: Iterable[Path] = _walk(folder, wanted)
        else:
            paths = data_files(folder)
        for path in paths:
            parts = [p for p in path.relative_to(folder).parts[:-1] if p.startswith(f"{column}=")]
            if not parts:
                return None
            found.add(decode_value(parts[0].split("=", 1)[1]))
        return found

    @contextmanager
    def sql(self, tables: Iterable[str], partitions: Partitions | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """An in-memory connection where `dialogue.leaderboard` is the view `leaderboard`, and so on; a table
        with no file yet is an empty view with its contract's columns. `partitions` only spares reading other
        partitions' files: a query still filters its rows itself."""
        con = self._connection()
        try:
            for table in tables:
                name = table.split(".")[-1]
                files = self.files(table, partitions)
                # the contract's columns always: files written before a column was added lack it (NULL here); a
                # table without a contract here (its code not installed) is its files' columns alone
                empty = _empty(table)
                if len(empty.columns):
                    con.register(f"{name}_empty", empty)
                if files:
                    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
                    contract = f" UNION ALL BY NAME SELECT * FROM {name}_empty" if len(empty.columns) else ""
                    con.execute(
                        f"CREATE TEMP VIEW {name} AS SELECT * FROM read_parquet([{listed}], union_by_name = true)"
                        + contract
                    )
                else:
                    con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM {name}_empty")
            yield con
        finally:
            con.close()

    def query(
        self, tables: Iterable[str], sql: str, params: list[Any] | None = None, partitions: Partitions | None = None
    ) -> pd.DataFrame:
        with self.sql(tables, partitions) as con:
            return con.execute(sql, params or []).df()

    def distinct(
        self, table: str, columns: tuple[str, ...], partitions: Partitions | None = None
    ) -> set[tuple[Any, ...]]:
        """The distinct values of `columns` in the table's files (of `partitions`' folders). Each file's values are
        kept in memory under its path, size, modification time and inode: a file is written once and replaced by a
        rename, so a changed partition is a new key and is read again, and an unchanged one is not read twice."""
        found: set[tuple[Any, ...]] = set()
        unread: dict[str, tuple[Any, ...]] = {}
        for name in self.files(table, partitions):
            path = as_path(name)
            if path.name == SCHEMA_FILE:
                continue
            try:
                st = path.stat()
            except FileNotFoundError:  # replaced or removed since it was listed
                continue
            key = (name, st.st_size, st.st_mtime_ns, st.st_ino, columns)
            cached = _DISTINCT.get(key)
            if cached is None:
                unread[name] = key
            else:
                found |= cached
        if unread:
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in unread)
            shown = ", ".join(columns)
            sql = f"SELECT DISTINCT filename, {shown} FROM read_parquet([{listed}], filename = true, union_by_name = true)"
            per_file: dict[str, set[tuple[Any, ...]]] = {name: set() for name in unread}
            con = self._connection()
            try:
                for row in con.execute(sql).fetchall():
                    per_file.setdefault(str(row[0]), set()).add(tuple(row[1:]))
            finally:
                con.close()
            if len(_DISTINCT) > _DISTINCT_MAX:
                _DISTINCT.clear()
            for name, values in per_file.items():
                if name in unread:
                    _DISTINCT[unread[name]] = frozenset(values)
                found |= values
        return found

    @property
    def calls_where(self) -> str:
        """Where the call cache is read from, for a page (no credentials)."""
        return self.call_backend.describe(self.data_dir)

    @contextmanager
    def calls(self) -> Iterator[CallReads]:
        """The call cache and ledger, read-only (resources/models/call_reads.py); one that is not there reads as empty and
        says why (a warehouse of embedded baselines makes no model call)."""
        with open_call_reads(self.data_dir, self.call_backend) as reads:
            yield reads


def _walk(folder: Path, wanted: dict[str, set[str]]) -> Iterator[Path]:
    """The data files under `folder` (no schema file, no temporary file), skipping every partition folder
    `<column>=<value>` whose column is in `wanted` with another value."""
    try:
        entries = sorted(folder.iterdir(), key=str)
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            column, eq, value = entry.name.partition("=")
            if eq and column in wanted and decode_value(value) not in wanted[column]:
                continue
            yield from _walk(entry, wanted)
        elif entry.name.endswith(".parquet") and entry.name != SCHEMA_FILE:
            yield entry


def _empty(table: str) -> pd.DataFrame:
    declared = catalog().declared(table) or {}
    return pd.DataFrame({column: pd.Series(dtype=dtype) for column, dtype in declared.items()})
