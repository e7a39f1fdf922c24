"""Where the warehouse's Parquet files live and how one is written or read (no Dagster here).

    <data dir>/warehouse/<schema>/<table>/<column>=<value>/.../part.parquet   one file per partition
    <data dir>/warehouse/<schema>/<table>/data.parquet                        an unpartitioned table
    <data dir>/warehouse/<schema>/<table>/_schema.parquet                     zero rows: the contract's columns

Every file keeps its partition columns (`target`, `pool`, `subscale`) as real columns, so readers never have to
decode folder names; the folder names are for people and for deleting a partition. A file is written under a
temporary name in its own folder (a leading dot and a `.tmp` suffix: no `*.parquet` glob matches it) and then
renamed over the old one, which replaces it atomically. See docs/storage.md.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote, unquote

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from eyt_dagster.core.storage_types import arrow_schema, conform
from eyt_dagster.core.table_registry import declared_columns

WAREHOUSE_FOLDER = "warehouse"
PARTITION_FILE = "part.parquet"
TABLE_FILE = "data.parquet"
SCHEMA_FILE = "_schema.parquet"
NULL_TYPE = '"NULL"'  # DuckDB's type for a column inferred from nothing but missing values


def warehouse_root(data_dir: Path) -> Path:
    return Path(data_dir) / WAREHOUSE_FOLDER


def table_dir(root: Path, table: str) -> Path:
    """The folder of `schema.table`."""
    schema, name = table.split(".", 1)
    return Path(root) / schema / name


def table_glob(root: Path, table: str) -> str:
    return str(table_dir(root, table) / "**" / "*.parquet")


def encode_value(value: str) -> str:
    """A partition value as one safe folder-name segment: every character but letters, digits, '_' and '-' is
    percent-encoded (so '/', ':', '@', '+', '=', '.' and a leading dot can neither nest nor hide a folder)."""
    return quote(str(value), safe="").replace(".", "%2E").replace("~", "%7E")


def decode_value(segment: str) -> str:
    return unquote(segment)


def partition_folder(columns: Mapping[str, str]) -> Path:
    """`<column>=<encoded value>/...` in the given column order."""
    return Path(*(f"{column}={encode_value(value)}" for column, value in columns.items()))


def partition_file(root: Path, table: str, columns: Mapping[str, str]) -> Path:
    return table_dir(root, table) / partition_folder(columns) / PARTITION_FILE


def temp_name(path: Path) -> Path:
    """A name in the same folder that no reader's `*.parquet` glob picks up."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}.tmp")


def data_files(folder: Path) -> list[Path]:
    """The Parquet files under a table folder (temp files and the zero-row schema file excluded)."""
    return sorted(p for p in Path(folder).rglob("*.parquet") if p.name != SCHEMA_FILE and not p.name.startswith("."))


def _replace(tmp: Path, path: Path) -> None:
    os.replace(tmp, path)


def arrow_table(frame: pd.DataFrame, table: str) -> pa.Table:
    """The frame as Arrow: a table with a contract gets exactly its columns and types; any other table the types
    DuckDB infers from the frame, with a column of nothing but missing values stored as text."""
    declared = declared_columns(table)
    if declared is not None:
        return pa.Table.from_pandas(conform(frame, declared, table), schema=arrow_schema(declared),
                                    preserve_index=False)
    con = duckdb.connect()
    try:
        con.register("eyt_frame", frame)
        types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM eyt_frame)").fetchall())
        select = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' if t == NULL_TYPE else f'"{c}"' for c, t in types.items())
        return con.sql(f"SELECT {select} FROM eyt_frame").to_arrow_table() if types else pa.table({})
    finally:
        con.close()


def write_file(data: pa.Table, path: Path) -> Path:
    """Write `data` to `path` atomically: a temporary file in the same folder, then a rename over `path`.
    A crash before the rename leaves the previous file (and at most a temp file no reader sees)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        pq.write_table(data, tmp)
        _replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def write_schema_file(root: Path, table: str) -> Path | None:
    """The zero-row file that gives a contract table its columns and types before any partition exists
    (rewritten only when the contract changed)."""
    declared = declared_columns(table)
    if declared is None:
        return None
    path = table_dir(root, table) / SCHEMA_FILE
    schema = arrow_schema(declared)
    if path.exists():
        try:
            if pq.read_schema(path).remove_metadata().equals(schema):
                return path
        except (OSError, pa.ArrowInvalid):
            pass  # unreadable: rewrite it
    return write_file(schema.empty_table(), path)


def read_files(files: Iterable[Path], folder: Path) -> pd.DataFrame:
    """The rows of the given files (those that exist), with the table's schema-file columns first; a frame with
    just those columns when no file has rows."""
    paths = [str(f) for f in files if Path(f).exists()]
    schema = Path(folder) / SCHEMA_FILE
    if schema.exists():
        paths.insert(0, str(schema))
    if not paths:
        return pd.DataFrame()
    con = duckdb.connect()
    try:
        return con.execute("SELECT * FROM read_parquet(?, union_by_name = true)", [paths]).df()
    finally:
        con.close()
