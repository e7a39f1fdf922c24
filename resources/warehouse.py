"""The DuckDB warehouse: where it lives, the IO manager that writes assets into it, and read helpers.

`EYT_DATA_DIR` (default ./data) holds the warehouse `eyt.duckdb`, the call cache and the Dagster
instance. Schemas are the asset key prefixes (`dialogue`, `speech`), tables the asset names.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
from dagster import (
    InputContext,
    IOManager,
    MetadataValue,
    OutputContext,
    TableColumn,
    TableSchema,
    partition_loading_context,
)
# DbIOManager / TableSlice / TableMetadataSet are what dagster-duckdb itself builds on (not exported by dagster)
from dagster._core.definitions.metadata import TableMetadataSet
from dagster._core.storage.db_io_manager import DbIOManager, TableSlice
from dagster_duckdb.io_manager import DuckDbClient
from dagster_duckdb_pandas import DuckDBPandasIOManager, DuckDBPandasTypeHandler

from eyt_dagster.storage_types import conform, duckdb_columns
from eyt_dagster.slate_settings import SETTINGS_KEY
from eyt_dagster.warehouse_tables import declared_columns

WAREHOUSE_FILE = "eyt.duckdb"


def data_dir() -> Path:
    return Path(os.environ.get("EYT_DATA_DIR") or "data").resolve()


def warehouse_path() -> Path:
    return data_dir() / WAREHOUSE_FILE


NULL_TYPE = '"NULL"'  # DuckDB's type for a column inferred from nothing but missing values
_RETRIES = 10  # a locked file (another process writing) is retried with growing waits, about 100 s in all


class _InstanceScopedIOManager(IOManager):
    """Runs the DuckDB IO manager with the run's instance as the dynamic-partitions store.

    The stock manager resolves multi-partition keys that have a dynamic dimension (our `target`) with no
    instance in scope and fails with "The instance is not available to load partitions".
    `partition_loading_context` is Dagster's public way to provide it.
    """

    def __init__(self, inner: IOManager) -> None:
        self._inner = inner

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        settings = (context.definition_metadata or {}).get(SETTINGS_KEY)
        if settings is not None:  # the slate settings this output was computed with (docs/operations.md)
            context.add_output_metadata({SETTINGS_KEY: settings})
        with partition_loading_context(dynamic_partitions_store=context.step_context.instance):
            self._inner.handle_output(context, obj)

    def load_input(self, context: InputContext) -> Any:
        with partition_loading_context(dynamic_partitions_store=context.instance):
            return self._inner.load_input(context)


def _connect_with_retries(database: str, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
    for attempt in range(_RETRIES + 1):
        try:
            return duckdb.connect(database, read_only=False, config=config)
        except (duckdb.IOException, RuntimeError):  # the file is locked by another process
            if attempt == _RETRIES:
                raise
            time.sleep(min(0.2 * 2**attempt, 30.0))
    raise AssertionError("unreachable")


class _WarehouseClient(DuckDbClient):
    """The stock DuckDB client with two changes. The connection is closed whatever happens: the stock client
    leaves it open when a load or a write raises, and every later connection to the file from this process
    with another configuration (a read-only one, say) then fails with "Can't open a connection to same
    database file with a different configuration". And a write (delete the partition's rows, insert the new
    ones) is one transaction, so a write that fails leaves the previous rows in place."""

    @staticmethod
    def delete_table_slice(context: OutputContext, table_slice: TableSlice, connection) -> None:  # noqa: ANN001
        # checked rather than caught: a failed statement would abort the write's transaction
        if table_types(connection, table_slice.schema, table_slice.table):
            DuckDbClient.delete_table_slice(context, table_slice, connection)

    @staticmethod
    @contextmanager
    def connect(context, _):  # noqa: ANN001, ANN205 - DbClient signature
        con = _connect_with_retries(context.resource_config["database"],
                                    dict(context.resource_config.get("connection_config") or {}))
        try:
            con.begin()
            yield con
            con.commit()
        except BaseException:
            with suppress(duckdb.Error):
                con.rollback()
            raise
        finally:
            con.close()


class _ContractTypeHandler(DuckDBPandasTypeHandler):
    """Stores a DataFrame with the column types of its table's contract (see `write_frame`)."""

    def handle_output(
        self, context: OutputContext, table_slice: TableSlice, obj: pd.DataFrame, connection  # noqa: ANN001
    ) -> None:
        stored = write_frame(connection, table_slice.schema, table_slice.table, obj,
                             partitioned=bool(table_slice.partition_dimensions), log=context.log)
        rows = TableMetadataSet(partition_row_count=len(stored)) if context.has_partition_key \
            else TableMetadataSet(row_count=len(stored))
        context.add_output_metadata({
            **rows,
            "dataframe_columns": MetadataValue.table_schema(TableSchema(columns=[
                TableColumn(name=name, type=column_type)
                for name, column_type in table_types(connection, table_slice.schema, table_slice.table).items()
            ])),
        })

    def load_input(self, context: InputContext, table_slice: TableSlice, connection) -> pd.DataFrame:  # noqa: ANN001
        if not table_types(connection, table_slice.schema, table_slice.table):
            raise MissingTableError(
                f"{table_slice.schema}.{table_slice.table} is not in the warehouse yet: materialise the asset "
                f"{table_slice.schema}/{table_slice.table} (at least one partition) before the assets that read it"
            )
        return super().load_input(context, table_slice, connection)


class MissingTableError(RuntimeError):
    """An asset reads a table that no run has written yet."""


def table_types(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> dict[str, str]:
    """Column -> DuckDB type of an existing table, in order; empty when the table does not exist."""
    return dict(con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
        "ORDER BY ordinal_position", [schema, table]).fetchall())


def _frame_types(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> dict[str, str]:
    """Types of a table without a contract: as DuckDB reads the frame, an all-missing column as text."""
    con.register("eyt_frame_types", frame)
    try:
        described = con.execute("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM eyt_frame_types)")
        return {name: "VARCHAR" if column_type == NULL_TYPE else column_type
                for name, column_type in described.fetchall()}
    finally:
        con.unregister("eyt_frame_types")


def write_frame(con: duckdb.DuckDBPyConnection, schema: str, table: str, frame: pd.DataFrame, *,
                partitioned: bool, log: Any = None) -> pd.DataFrame:
    """Insert `frame` into schema.table (the partition's old rows are already deleted) and return the rows as
    stored. A table with a contract (eyt_dagster/warehouse_tables.py) gets the contract's columns and types,
    and the frame is cast to them; any other table gets the frame's types, an all-missing column as text.

    An unpartitioned table is rewritten whole, so it is recreated on every write (columns may change between
    versions of the code). A partitioned table keeps its other partitions: a declared column it lacks is
    added (missing in the older partitions), a column stored with DuckDB's type NULL (an older warehouse typed
    it from an all-missing first write) gets its declared type, columns the code no longer writes stay."""
    full_name, quoted = f"{schema}.{table}", f'"{schema}"."{table}"'
    declared = declared_columns(full_name)
    if declared is not None:
        frame = conform(frame, declared, full_name)
        types = duckdb_columns(declared)
    else:
        types = _frame_types(con, frame)
    existing = table_types(con, schema, table)
    if not partitioned or not existing:
        columns = ", ".join(f'"{name}" {column_type}' for name, column_type in types.items())
        con.execute(f"CREATE OR REPLACE TABLE {quoted} ({columns})")
    else:
        added = [name for name in types if name not in existing]
        for name in added:
            con.execute(f'ALTER TABLE {quoted} ADD COLUMN "{name}" {types[name]}')
        retyped = [name for name in types if existing.get(name) == NULL_TYPE and types[name] != NULL_TYPE]
        for name in retyped:
            con.execute(f'ALTER TABLE {quoted} ALTER COLUMN "{name}" SET DATA TYPE {types[name]}')
        if log is not None and (added or retyped):
            log.info(f"{full_name}: added column(s) {added} (missing in older partitions); "
                     f"typed column(s) {retyped} from the contract")
    if len(frame):
        con.register("eyt_incoming", frame)
        try:
            con.execute(f"INSERT INTO {quoted} BY NAME SELECT * FROM eyt_incoming")
        finally:
            con.unregister("eyt_incoming")
    return frame


class WarehouseIOManager(DuckDBPandasIOManager):
    """The DuckDB pandas IO manager with the dynamic-partition fix, contract-typed tables, connections that
    are always closed and transactional writes (a partition is written delete-then-insert)."""

    def create_io_manager(self, context) -> IOManager:  # type: ignore[override]  # noqa: ANN001
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)
        inner = DbIOManager(
            db_client=_WarehouseClient(), database=self.database, schema=self.schema_,
            type_handlers=[_ContractTypeHandler()], default_load_type=pd.DataFrame,
            io_manager_name="WarehouseIOManager",
        )
        return _InstanceScopedIOManager(inner)


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
