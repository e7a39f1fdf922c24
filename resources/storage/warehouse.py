"""The warehouse: where it lives, the IO manager that writes assets into it, and read helpers.

`EYT_DATA_DIR` (default ./data) holds the results as Parquet files under `warehouse/` (one file per
partition, resources/storage/warehouse_files.py), `eyt.duckdb` with one view per table over them (the SQL entry point,
resources/storage/warehouse_views.py), the call cache and the Dagster instance. Schemas are the asset key prefixes
(`dialogue`, `speech`), tables the asset names. Why files and not tables in one DuckDB file: docs/storage.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pandas as pd
from dagster import (
    ConfigurableIOManagerFactory,
    InitResourceContext,
    InputContext,
    IOManager,
    MetadataValue,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    OutputContext,
    TableColumn,
    TableSchema,
    UPathIOManager,
    partition_loading_context,
)

from eyt_dagster.core.env_settings import data_dir
from eyt_dagster.core.storage_types import SETTINGS_KEY
from resources.storage.shared_reads import shared_read
from resources.storage.warehouse_catalog import NO_CONTRACTS, Catalog
from resources.storage.warehouse_files import (
    PARTITION_FILE,
    SCHEMA_FILE,
    TABLE_FILE,
    arrow_table,
    as_path,
    data_files,
    partition_folder,
    read_files,
    register_filesystem,
    scratch,
    table_dir,
    warehouse_root,
    write_file,
)
from resources.storage.warehouse_views import WAREHOUSE_FILE, ensure_views, stored_tables

if TYPE_CHECKING:  # universal_pathlib is imported where a path is made
    from upath import UPath

_log = logging.getLogger(__name__)


def warehouse_path() -> Path:
    return data_dir() / WAREHOUSE_FILE


class MissingTableError(RuntimeError):
    """An asset reads a table that no run has written yet."""


_VIEWED: set[tuple[str, str]] = set()  # (data dir, table) whose view this process has seen current


def prepare(database: Path, catalog: Catalog = NO_CONTRACTS, log: Any = None, table: str | None = None) -> bool:
    """Views (and, for an older warehouse, the migration) once per process and data directory, and again for a
    table this process has not seen a view of; a blocked update is logged and retried on the next call. The
    code location's catalog (its IO manager's, and what `eyt` passes: eyt_dagster/table_registry.py) gives every
    contract table a view before its first partition, and the migration its partition columns."""
    database = Path(database).resolve()
    key = str(database)
    if (key, table or "") in _VIEWED:
        return True
    ok = ensure_views(database, catalog, log=log)
    if ok:
        _VIEWED.update({(key, t) for t in [*catalog.tables, *stored_tables(warehouse_root(database.parent)), ""]})
    return ok


class _InstanceScopedIOManager(IOManager):
    """Runs the IO manager with the run's instance as the dynamic-partitions store: multi-partition keys with a
    dynamic dimension (our `target`) need one, and `partition_loading_context` is Dagster's public way to
    provide it. Also records the slate settings an output was computed with (docs/operations.md)."""

    def __init__(self, inner: IOManager) -> None:
        self._inner = inner

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        settings = (context.definition_metadata or {}).get(SETTINGS_KEY)
        if settings is not None:
            context.add_output_metadata({SETTINGS_KEY: settings})
        with partition_loading_context(dynamic_partitions_store=context.step_context.instance):
            self._inner.handle_output(context, obj)

    def load_input(self, context: InputContext) -> Any:
        with partition_loading_context(dynamic_partitions_store=context.instance):
            return self._inner.load_input(context)


def _table(context: InputContext | OutputContext) -> str:
    return ".".join(context.asset_key.path)


def _partition_columns(context: InputContext | OutputContext, key: Any) -> dict[str, str]:
    """Partition key -> {column: value} in dimension-name order, columns named by the asset's partition_expr."""
    output = context.upstream_output if isinstance(context, InputContext) else context
    assert output is not None  # an asset's input is loaded from its upstream asset's output
    meta = output.definition_metadata or {}
    expr = meta.get("partition_expr")
    pdef = context.asset_partitions_def
    if isinstance(pdef, MultiPartitionsDefinition):
        if not isinstance(key, MultiPartitionKey):
            key = pdef.get_partition_key_from_str(str(key))
        by_dim = key.keys_by_dimension
        return {(expr or {}).get(d, d) if isinstance(expr, dict) else d: by_dim[d] for d in sorted(by_dim)}
    return {expr if isinstance(expr, str) else "partition": str(key)}


class ParquetWarehouse(UPathIOManager):
    """Dagster's path-based IO manager writing one Parquet file per partition (an atomic replace, so readers
    and other writers never wait) and reading exactly the requested partitions back as one DataFrame."""

    extension = ".parquet"

    def __init__(
        self, database: Path, catalog: Catalog = NO_CONTRACTS, keep: Callable[[Any, Any], bool] | None = None
    ) -> None:
        from upath import UPath

        self.database = Path(database)
        self.catalog = catalog
        # which upstream partitions an input that reads many of them (a report) reads: (partitions def, key) -> bool;
        # None: all of them. The code location keeps the slate's targets and pools (eyt_dagster/definitions.py).
        self.keep = keep
        self.directory = self.database.parent
        root = warehouse_root(self.directory)
        super().__init__(base_path=root if isinstance(root, UPath) else UPath(str(root)))

    def get_asset_relative_path(self, context: InputContext | OutputContext) -> UPath:
        from upath import UPath

        if context.has_asset_partitions:
            return UPath(*context.asset_key.path)
        return UPath(*context.asset_key.path, Path(TABLE_FILE).stem)

    def get_path_for_partition(self, context: InputContext | OutputContext, path: UPath, partition: str) -> UPath:
        if isinstance(context, OutputContext):
            key = context.asset_partition_key
        else:
            keys = [k for k in context.asset_partition_keys if _formatted(k) == partition]
            if len(keys) != 1:
                raise ValueError(f"{_table(context)}: cannot tell which partition '{partition}' is")
            key = keys[0]
        return path / str(partition_folder(_partition_columns(context, key))) / Path(PARTITION_FILE).stem

    def dump_to_path(self, context: OutputContext, obj: pd.DataFrame, path: UPath) -> None:
        table = _table(context)
        data = arrow_table(obj, table, self.catalog.declared(table))
        write_file(data, as_path(path))
        # Dagster's standard row-count metadata keys (the UI shows them as the table's row count)
        count = "dagster/partition_row_count" if context.has_asset_partitions else "dagster/row_count"
        rows = {count: MetadataValue.int(data.num_rows)}
        query = f"SELECT * FROM {table}"  # how to read what was written, through eyt.duckdb's views
        if context.has_asset_partitions:
            where = _partition_columns(context, context.asset_partition_key).items()
            query += " WHERE " + " AND ".join(f"{c} = '{v.replace(chr(39), chr(39) * 2)}'" for c, v in where)
        context.add_output_metadata(
            {
                **rows,
                "Query": query,
                "dataframe_columns": MetadataValue.table_schema(
                    TableSchema(columns=[TableColumn(name=f.name, type=str(f.type)) for f in data.schema])
                ),
            }
        )
        prepare(self.database, self.catalog, context.log, table)

    def _folder(self, context: InputContext) -> Path:
        return table_dir(warehouse_root(self.directory), _table(context))

    def _missing(self, context: InputContext) -> MissingTableError:
        table = _table(context)
        return MissingTableError(
            f"{table} is not in the warehouse yet: materialise the asset "
            f"{table.replace('.', '/')} (at least one partition) before the assets that read it"
        )

    def load_from_path(self, context: InputContext, path: UPath) -> pd.DataFrame:
        folder = self._folder(context)
        file = as_path(path)
        if not file.exists() and not (folder / SCHEMA_FILE).exists():
            raise self._missing(context)
        return read_files([file], folder)

    def load_partitions(self, context: InputContext) -> pd.DataFrame:
        """The requested partitions' files (the ones written so far) in one frame: one partition, the
        `pool|target` keys of a multi-partition, or every partition a report reads."""
        folder = self._folder(context)
        if not folder.is_dir() or not any(folder.rglob("*.parquet")):
            raise self._missing(context)
        keys = context.asset_partition_keys
        if self.keep is not None:
            pdef = context.asset_partitions_def
            keys = [k for k in keys if self.keep(pdef, k)]
            if not keys:  # every partition it has lies outside the slate: its columns, no rows
                return read_files([], folder)
        files = [folder / partition_folder(_partition_columns(context, k)) / PARTITION_FILE for k in keys]
        return shared_read(files, folder, [folder / SCHEMA_FILE], lambda: read_files(files, folder))


def _formatted(key: Any) -> str:
    """How UPathIOManager formats a partition key into a path string."""
    if isinstance(key, MultiPartitionKey):
        return "/".join(v for _, v in sorted(key.keys_by_dimension.items()))
    return str(key)


class WarehouseIOManager(ConfigurableIOManagerFactory[IOManager]):
    """The warehouse IO manager. `database` is the path of eyt.duckdb; its folder is the data directory."""

    database: str

    def catalog(self) -> Catalog:
        """What the warehouse knows of its tables: none here (each typed from its frame); the code location's
        subclass hands it its tables' contracts and partition layouts (eyt_dagster/definitions.py)."""
        return NO_CONTRACTS

    def partitions_kept(self) -> Callable[[Any, Any], bool] | None:
        """Which upstream partitions a report reads ((partitions def, key) -> bool); None here: all of them. The code
        location's subclass keeps the slate's targets and pools."""
        return None

    def create_io_manager(self, context: InitResourceContext) -> IOManager:
        database = Path(self.database).resolve()
        catalog = self.catalog()
        prepare(database, catalog, getattr(context, "log", None) or _log)
        return _InstanceScopedIOManager(ParquetWarehouse(database, catalog, self.partitions_kept()))


def store_frame(
    directory: Path, table: str, frame: pd.DataFrame, partition_by: Sequence[str] = (), catalog: Catalog = NO_CONTRACTS
) -> list[Path]:
    """Write a frame into the warehouse outside Dagster: one file per distinct value of `partition_by`
    (whole partitions replaced), or the whole unpartitioned table; typed by its contract in `catalog`."""
    root = warehouse_root(directory)
    declared = catalog.declared(table)
    if not partition_by:
        return [write_file(arrow_table(frame, table, declared), table_dir(root, table) / TABLE_FILE)]
    written = []
    for values, rows in frame.groupby(list(partition_by), sort=True, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        path = table_dir(root, table) / partition_folder(dict(zip(partition_by, map(str, values)))) / PARTITION_FILE
        written.append(write_file(arrow_table(rows.reset_index(drop=True), table, declared), path))
    return written


@contextmanager
def connect(
    path: Path | None = None, *, read_only: bool = True, catalog: Catalog = NO_CONTRACTS
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived connection to eyt.duckdb (views over the Parquet files); close it promptly, since an open
    one keeps the views from being updated. The views are checked (and re-pointed after a move) first."""
    path = Path(path or warehouse_path())
    prepare(path, catalog)
    con = duckdb.connect(str(path), read_only=read_only)
    register_filesystem(con, warehouse_root(path.parent))
    try:
        yield con
    finally:
        con.close()


def read_partition(table: str, filters: dict[str, Sequence[str] | str], path: Path | None = None) -> pd.DataFrame:
    """Rows of `schema.table` matching the filters, read from its Parquet files (eyt.duckdb is not opened, so
    this never waits for a lock), or an empty frame when the table has no file yet."""
    path = Path(path or warehouse_path())
    folder = table_dir(warehouse_root(path.parent), table)
    files = [str(f) for f in data_files(folder)]
    if not files:
        return pd.DataFrame()
    where: list[str] = []
    params: list[list[str] | str] = [files]
    for column, value in filters.items():
        values = [value] if isinstance(value, str) else list(value)
        where.append(f'"{column}" IN ({", ".join("?" for _ in values)})')
        params.extend(values)
    sql = "SELECT * FROM read_parquet(?, union_by_name = true)" + (f" WHERE {' AND '.join(where)}" if where else "")
    con = scratch(folder)
    try:
        return con.execute(sql, params).df()
    finally:
        con.close()
