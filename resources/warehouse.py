"""The DuckDB warehouse: where it lives, the IO manager that writes assets into it, and read helpers.

`EYT_DATA_DIR` (default ./data) holds the warehouse `eyt.duckdb`, the call cache and the Dagster
instance. Schemas are the asset key prefixes (`dialogue`, `speech`), tables the asset names.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
from dagster import InputContext, IOManager, OutputContext, partition_loading_context
from dagster_duckdb_pandas import DuckDBPandasIOManager

from eyt_dagster.slate_settings import SETTINGS_KEY

WAREHOUSE_FILE = "eyt.duckdb"


def data_dir() -> Path:
    return Path(os.environ.get("EYT_DATA_DIR") or "data").resolve()


def warehouse_path() -> Path:
    return data_dir() / WAREHOUSE_FILE


class _InstanceScopedIOManager(IOManager):
    """Runs the stock DuckDB IO manager with the run's instance as the dynamic-partitions store.

    The stock manager resolves multi-partition keys that have a dynamic dimension (our `target`) with no
    instance in scope and fails with "The instance is not available to load partitions"
    (DAGSTER_NOTES.md). `partition_loading_context` is Dagster's public way to provide it.
    """

    def __init__(self, inner: IOManager, database: str) -> None:
        self._inner = inner
        self._database = database

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        settings = (context.definition_metadata or {}).get(SETTINGS_KEY)
        if settings is not None:  # the slate settings this output was computed with (docs/operations.md)
            context.add_output_metadata({SETTINGS_KEY: settings})
        if isinstance(obj, pd.DataFrame) and len(obj.columns):
            obj = self._align_schema(context, obj)
        if isinstance(obj, pd.DataFrame) and obj.empty and not context.has_asset_partitions:
            # The stock manager skips an empty frame, which would leave the previous run's rows in an
            # unpartitioned table (e.g. a report whose input file was removed from the slate): replace them.
            self._create_empty_table(context, obj, replace=True)
            return
        with partition_loading_context(dynamic_partitions_store=context.step_context.instance):
            self._inner.handle_output(context, obj)
        if isinstance(obj, pd.DataFrame) and obj.empty:
            self._create_empty_table(context, obj)

    def _align_schema(self, context: OutputContext, obj: pd.DataFrame) -> pd.DataFrame:
        """Let a table's columns change between versions of the code. The stock manager fixes the columns
        at the first write and inserts by position, so a new column would fail the write (DAGSTER_NOTES.md).
        An unpartitioned table is rewritten whole, so it is dropped and recreated; a partitioned one gains
        the new columns (NULL in its other partitions) and keeps columns the code no longer writes."""
        schema, table = context.asset_key.path[-2], context.asset_key.path[-1]
        con = duckdb.connect(self._database)
        try:
            existing = [r[0] for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                "ORDER BY ordinal_position", [schema, table]).fetchall()]
            if not existing or existing == list(obj.columns):
                return obj
            if not context.has_asset_partitions:
                con.execute(f'DROP TABLE "{schema}"."{table}"')
                context.log.info(f"{schema}.{table}: columns changed; the table is recreated")
                return obj
            con.register("incoming", obj)
            types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM incoming)").fetchall())
            added = [c for c in obj.columns if c not in existing]
            for column in added:
                con.execute(f'ALTER TABLE "{schema}"."{table}" ADD COLUMN "{column}" {types[column]}')
            if added:
                context.log.info(f"{schema}.{table}: added column(s) {added}; older partitions hold NULL there")
            return obj.reindex(columns=existing + added)
        finally:
            con.close()

    def _create_empty_table(self, context: OutputContext, obj: pd.DataFrame, replace: bool = False) -> None:
        """The stock manager writes nothing for an empty frame, so a table with no rows yet would be
        missing for SQL users; create it with the frame's columns (DAGSTER_NOTES.md, IO manager), or
        replace an unpartitioned table's old rows."""
        schema, table = context.asset_key.path[-2], context.asset_key.path[-1]
        con = duckdb.connect(self._database)
        try:
            con.register("empty_frame", obj)
            con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            create = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE IF NOT EXISTS"
            con.execute(f'{create} "{schema}"."{table}" AS SELECT * FROM empty_frame')
        finally:
            con.close()

    def load_input(self, context: InputContext) -> Any:
        with partition_loading_context(dynamic_partitions_store=context.instance):
            return self._inner.load_input(context)


class WarehouseIOManager(DuckDBPandasIOManager):
    """DuckDBPandasIOManager with the dynamic-partition fix; writes a partition delete-then-insert."""

    def create_io_manager(self, context) -> IOManager:  # type: ignore[override]
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)
        return _InstanceScopedIOManager(super().create_io_manager(context), self.database)


@contextmanager
def connect(path: Path | None = None, *, read_only: bool = True):
    """A short-lived connection; close it promptly, since an open one blocks the IO manager's writes."""
    con = duckdb.connect(str(path or warehouse_path()), read_only=read_only)
    try:
        yield con
    finally:
        con.close()


def read_partition(
    table: str, filters: dict[str, Sequence[str] | str], path: Path | None = None
) -> pd.DataFrame:
    """Rows of `schema.table` matching the filters, or an empty frame when the table does not exist yet."""
    path = path or warehouse_path()
    if not path.exists():
        return pd.DataFrame()
    where, params = [], []
    for column, value in filters.items():
        values = [value] if isinstance(value, str) else list(value)
        where.append(f"{column} IN ({', '.join('?' for _ in values)})")
        params.extend(values)
    sql = f"SELECT * FROM {table}" + (f" WHERE {' AND '.join(where)}" if where else "")
    with connect(path) as con:
        try:
            return con.execute(sql, params).df()
        except duckdb.CatalogException:
            return pd.DataFrame()
