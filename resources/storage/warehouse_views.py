"""`eyt.duckdb` as the SQL entry point: one VIEW per table over that table's Parquet files, and the one-off
migration of a warehouse that still holds real tables. See docs/storage.md.

A view names its files by absolute path (DuckDB resolves a relative path in a view against the reading
process's working directory, not the database file's), so the views are re-created when the data directory
has moved. Creating a view needs the write lock on eyt.duckdb, which any open reader blocks: views are only
touched when one is missing or points elsewhere, and a blocked update is logged and retried next time, never
failing a run. New partitions and new columns need no view change (a view re-reads its glob on every query).

With the Parquet files on an object store (EYT_WAREHOUSE_URL), the views name `s3://...` globs: this code reads them
through the registered fsspec filesystem; any other reader of eyt.duckdb needs DuckDB's httpfs extension and a
secret (docs/storage.md).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import duckdb

from eyt_dagster.core import env_settings
from eyt_dagster.core.storage_types import duckdb_columns
from resources.storage.warehouse_catalog import NO_CONTRACTS, Catalog
from resources.storage.warehouse_files import (
    TABLE_FILE,
    as_path,
    data_files,
    partition_file,
    register_filesystem,
    table_dir,
    table_glob,
    warehouse_root,
    write_file,
    write_schema_file,
)

WAREHOUSE_FILE = "eyt.duckdb"
# eyt.duckdb is written in a storage format that DuckDB 1.4 and later read, so the `duckdb` CLI that the project
# installs (package duckdb-cli, whose newest release trails the Python package) and older clients open it; a file
# holds only views, which need nothing newer. A file made before this setting can be deleted: the next run or `eyt`
# command writes it again.
READER_STORAGE_VERSION = "v1.4.0"
_log = logging.getLogger(__name__)


def view_sql(root: Path, table: str) -> str:
    schema, name = table.split(".", 1)
    glob = table_glob(root, table).replace("'", "''")
    return (
        f'CREATE OR REPLACE VIEW "{schema}"."{name}" AS SELECT * FROM '
        f"read_parquet('{glob}', hive_partitioning = false, union_by_name = true)"
    )


def stored_tables(root: Path) -> list[str]:
    """`schema.table` of every table folder that holds a Parquet file."""
    root = as_path(root)
    if not root.is_dir():
        return []
    return sorted(
        f"{s.name}.{t.name}"
        for s in root.iterdir()
        if s.is_dir()
        for t in s.iterdir()
        if t.is_dir() and any(t.rglob("*.parquet"))
    )


def _catalog(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, str], set[str]]:
    views = {
        f"{s}.{v}": sql
        for s, v, sql in con.execute(
            "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal "
            "AND database_name = current_database()"
        ).fetchall()
    }
    tables = {
        f"{s}.{t}"
        for s, t in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()
    }
    return views, tables


def _stale(root: Path, wanted: Iterable[str], views: Mapping[str, str]) -> list[str]:
    return [t for t in wanted if t not in views or table_glob(root, t).replace("'", "''") not in views[t]]


def ensure_views(database: Path, catalog: Catalog = NO_CONTRACTS, log: logging.Logger | None = None) -> bool:
    """Make `database` (eyt.duckdb; the warehouse folder sits beside it) hold a current view for every table of
    `catalog` and every stored table, migrating an older warehouse's real tables first (the catalog's layouts name
    each table's partition columns; without them the migration is left for later). Returns False when
    eyt.duckdb was locked by another process or something is left to do next time (logged, not raised)."""
    log = log or _log
    database = Path(database).resolve()
    root = warehouse_root(database.parent)
    database.parent.mkdir(parents=True, exist_ok=True)
    for table, declared in catalog.tables.items():
        write_schema_file(root, table, declared)
    wanted = sorted(set(catalog.tables) | set(stored_tables(root)))
    try:
        if database.exists():
            with duckdb.connect(str(database), read_only=True) as con:
                views, tables = _catalog(con)
            if not tables and not _stale(root, wanted, views):
                return True
        config: dict[str, str | bool | int | float | list[str]] = (
            {} if database.exists() else {"storage_compatibility_version": READER_STORAGE_VERSION}
        )
        with duckdb.connect(str(database), config=config) as con:
            register_filesystem(con, root)  # a view over s3:// globs is bound (its files listed) when created
            views, tables = _catalog(con)
            if tables and catalog.layouts is None:  # only a caller that knows the partition layouts migrates
                log.warning(
                    f"{database} is an older warehouse (tables inside eyt.duckdb): run `eyt migrate` or any run to "
                    "move them into Parquet files"
                )
                return False
            if tables:
                migrate_tables(con, root, catalog, log)
                wanted = sorted(set(wanted) | tables | set(stored_tables(root)))
                views = _catalog(con)[0]
            stale = _stale(root, wanted, views)
            con.begin()
            for table in stale:
                con.execute(f'CREATE SCHEMA IF NOT EXISTS "{table.split(".", 1)[0]}"')
                con.execute(view_sql(root, table))
            con.commit()
            if stale:
                log.info(f"eyt.duckdb: (re)created the view(s) {stale} over {root}")
        return True
    except (duckdb.IOException, duckdb.ConnectionException) as exc:  # another process holds the file
        text = str(exc)
        if "read-only file system" in text.lower() or "permission denied" in text.lower():
            log.info(
                f"eyt.duckdb is not writable here ({exc}): its views were not updated; readers use the Parquet files"
            )
        elif _held_by_this_command(text):  # a sibling worker of the same `eyt` command updates them: nothing to say
            log.debug(f"eyt.duckdb: another worker of this command holds the file; it updates the views: {exc}")
        else:
            log.warning(
                f"eyt.duckdb is in use by another process, so its views were not updated now (retried on the "
                f"next write or eyt command): {exc}"
            )
        return False


def migrate_tables(con: duckdb.DuckDBPyConnection, root: Path, catalog: Catalog, log: logging.Logger) -> list[str]:
    """Export every real table of an older warehouse into the Parquet layout (one file per partition of its
    partition columns, cast to its contract), then drop the table; its view replaces it. Run while holding
    the write lock; a crash part-way leaves the remaining tables in place for the next attempt."""
    _, tables = _catalog(con)
    layouts = catalog.layouts() if catalog.layouts else {}
    done = []
    for table in sorted(tables):
        schema, name = table.split(".", 1)
        quoted = f'"{schema}"."{name}"'
        types = dict(
            con.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                "ORDER BY ordinal_position",
                [schema, name],
            ).fetchall()
        )
        declared = catalog.declared(table)
        target_types = {
            **{c: "VARCHAR" if t == '"NULL"' else t for c, t in types.items()},
            **(duckdb_columns(declared) if declared else {}),
        }
        select = ", ".join(
            f'CAST("{c}" AS {target_types[c]}) AS "{c}"' if c in types else f'NULL::{t} AS "{c}"'
            for c, t in target_types.items()
        )
        columns = [c for c in layouts.get(table, []) if c in types]
        folder = table_dir(root, table)
        for old in data_files(folder):  # a previous, interrupted attempt
            old.unlink()
        if columns:
            keys = con.execute(
                f"SELECT DISTINCT {', '.join(f'{c}::VARCHAR' for c in columns)} FROM {quoted}"
            ).fetchall()
            if not keys:  # an empty table still needs a file for its columns
                write_file(con.sql(f"SELECT {select} FROM {quoted}").to_arrow_table(), folder / TABLE_FILE)
            for key in keys:
                where = " AND ".join(f'"{c}"::VARCHAR IS NOT DISTINCT FROM ?' for c in columns)
                data = con.sql(f"SELECT {select} FROM {quoted} WHERE {where}", params=list(key)).to_arrow_table()
                write_file(data, partition_file(root, table, dict(zip(columns, ["" if v is None else v for v in key]))))
        else:
            write_file(con.sql(f"SELECT {select} FROM {quoted}").to_arrow_table(), folder / TABLE_FILE)
        rows = con.execute(f"SELECT count(*) FROM {quoted}").fetchall()[0][0]
        con.execute(f"DROP TABLE {quoted}")
        con.execute(view_sql(root, table))
        log.info(
            f"migrated {table}: {rows} row(s) into {folder} "
            f"({'one file per ' + ', '.join(columns) if columns else 'one file'})"
        )
        done.append(table)
    return done


# Set by `eyt` for the processes it starts (its workers inherit it): the pid of the command itself.
COMMAND_PID_ENV = env_settings.COMMAND_PID.name
_LOCK_PID = re.compile(r"\(PID (\d+)\)")


def _held_by_this_command(message: str) -> bool:
    """Whether the process DuckDB names as holding the lock ("... (PID n)") is this process's own `eyt` command or
    one of its workers: the command's pid is among n's ancestors (read from /proc; False where there is none)."""
    command = env_settings.COMMAND_PID.get()
    found = _LOCK_PID.search(message)
    if command is None or not found:
        return False
    pid = int(found.group(1))
    for _ in range(8):  # the worker, its pool, the command: a few levels at most
        if pid == command:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state is the parent pid
        if pid <= 1:
            return False
    return False
