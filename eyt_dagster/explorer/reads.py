"""Read-only access to the warehouse and the call cache, for the explorer.

Each query gets a fresh in-memory DuckDB connection with one view per table it names, over that table's Parquet
files as they are at that moment (eyt.duckdb is never opened, so no lock is taken or awaited: docs/storage.md).
The call cache's SQLite file is opened read-only (`mode=ro`), so a run writing to it is never held up."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import duckdb
import pandas as pd

from eyt_dagster.table_registry import catalog
from resources.cache_backend import CALL_CACHE_FILE
from resources.warehouse_files import SCHEMA_FILE, as_path, data_files, reader, table_dir, warehouse_root


class Warehouse:
    """The data directory an explorer reads: its Parquet files and its call cache file."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.root = warehouse_root(self.data_dir)

    @property
    def call_cache_file(self) -> Path:
        return self.data_dir / CALL_CACHE_FILE

    def files(self, table: str) -> list[str]:
        """The table's schema file (its columns, zero rows) first, then its data files."""
        folder = table_dir(self.root, table)
        schema = as_path(folder) / SCHEMA_FILE
        return ([str(schema)] if schema.exists() else []) + [str(f) for f in data_files(folder)]

    @contextmanager
    def sql(self, tables: Iterable[str]) -> Iterator[duckdb.DuckDBPyConnection]:
        """An in-memory connection where `dialogue.leaderboard` is the view `leaderboard`, and so on; a table
        with no file yet is an empty view with its contract's columns."""
        con = reader(self.root)
        try:
            for table in tables:
                name = table.split(".")[-1]
                files = self.files(table)
                if files:
                    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
                    con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet([{listed}], union_by_name = true)")
                else:
                    con.register(f"{name}_empty", _empty(table))
                    con.execute(f"CREATE VIEW {name} AS SELECT * FROM {name}_empty")
            yield con
        finally:
            con.close()

    def query(self, tables: Iterable[str], sql: str, params: list | None = None) -> pd.DataFrame:
        with self.sql(tables) as con:
            return con.execute(sql, params or []).df()

    @contextmanager
    def calls(self) -> Iterator[sqlite3.Connection | None]:
        """The call cache and ledger, read-only; None when this data directory has no call cache file (a
        warehouse of embedded baselines makes no model call, and one whose cache is on Postgres keeps it there)."""
        if not self.call_cache_file.exists():
            yield None
            return
        con = sqlite3.connect(f"{self.call_cache_file.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
        con.row_factory = sqlite3.Row
        with closing(con):
            yield con


def _empty(table: str) -> pd.DataFrame:
    declared = catalog().declared(table) or {}
    return pd.DataFrame({column: pd.Series(dtype=dtype) for column, dtype in declared.items()})
