"""Where the warehouse's Parquet files live and how one is written or read (no Dagster here).

    <data dir>/warehouse/<schema>/<table>/<column>=<value>/.../part.parquet   one file per partition
    <data dir>/warehouse/<schema>/<table>/data.parquet                        an unpartitioned table
    <data dir>/warehouse/<schema>/<table>/_schema.parquet                     zero rows: the contract's columns

Every file keeps its partition columns (`target`, `pool`, `subscale`) as real columns, so readers never have to
decode folder names; the folder names are for people and for deleting a partition. A file is written under a
temporary name in its own folder (a leading dot and a `.tmp` suffix: no `*.parquet` glob matches it) and then
renamed over the old one, which replaces it atomically. See docs/storage.md.

The warehouse root may instead be an object store URL (`EYT_WAREHOUSE_URL=s3://bucket/prefix`): paths are then
universal_pathlib `UPath`s, a file is written with one upload (an object appears whole or not at all, so no
rename is needed) and DuckDB reads the files through the same fsspec filesystem. Credentials come from the
environment the filesystem reads (AWS_ACCESS_KEY_ID, ..., AWS_ENDPOINT_URL), never from a file of ours.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, unquote

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from eyt_dagster.core import env_settings
from eyt_dagster.core.storage_types import Columns, arrow_schema, conform

if TYPE_CHECKING:  # universal_pathlib is imported where an object store is read
    from upath import UPath

WAREHOUSE_FOLDER = "warehouse"
PARTITION_FILE = "part.parquet"
TABLE_FILE = "data.parquet"
SCHEMA_FILE = "_schema.parquet"
NULL_TYPE = '"NULL"'  # DuckDB's type for a column inferred from nothing but missing values
WAREHOUSE_URL_ENV = env_settings.WAREHOUSE_URL.name  # an object store root for the Parquet files (docs/storage.md)


def as_path(path: str | os.PathLike[str] | UPath) -> Path:
    """A local Path, or a UPath for a URL (s3://...) or a path that already is one. Typed as Path, as every path of
    the warehouse is: a UPath has the methods of Path the warehouse calls, but universal_pathlib does not derive it
    from pathlib.Path."""
    if is_remote(path):
        from upath import UPath

        if isinstance(path, UPath):
            return cast(Path, path)
        text = str(path)
        # s3fs keeps directory listings for ever by default: another process's new partition would stay unseen
        fresh: dict[str, Any] = (
            {"use_listings_cache": False} if text.split("://", 1)[0] in ("s3", "s3a", "gs", "gcs") else {}
        )
        return cast(Path, UPath(text, **fresh))
    return Path(cast("str | os.PathLike[str]", path))  # text, a Path, or a local UPath (a pathlib.Path)


def is_remote(path: str | os.PathLike[str] | UPath) -> bool:
    """Whether a path lives on an object store rather than the local file system."""
    protocol = getattr(path, "protocol", None)
    if protocol is not None:
        return protocol not in ("", "file", "local")
    return "://" in str(path) and not str(path).startswith("file://")


def warehouse_root(data_dir: Path) -> Path:
    """`<data dir>/warehouse`, or the object store root EYT_WAREHOUSE_URL names."""
    url = env_settings.WAREHOUSE_URL.get()
    if url:
        return as_path(url.rstrip("/"))
    return Path(data_dir) / WAREHOUSE_FOLDER


def table_dir(root: Path, table: str) -> Path:
    """The folder of `schema.table`."""
    schema, name = table.split(".", 1)
    return as_path(root) / schema / name


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
    folder = as_path(folder)
    if is_remote(folder) and not folder.exists():
        return []
    return sorted(
        (p for p in folder.rglob("*.parquet") if p.name != SCHEMA_FILE and not p.name.startswith(".")), key=str
    )


def _replace(tmp: Path, path: Path) -> None:
    os.replace(tmp, path)


def arrow_table(frame: pd.DataFrame, table: str, declared: Columns | None = None) -> pa.Table:
    """The frame as Arrow: a table with a contract (`declared`) gets exactly its columns and types; any other
    table the types DuckDB infers from the frame, with a column of nothing but missing values stored as text."""
    if declared is not None:
        return pa.Table.from_pandas(
            conform(frame, declared, table), schema=arrow_schema(declared), preserve_index=False
        )
    con = scratch()
    try:
        con.register("eyt_frame", frame)
        types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM eyt_frame)").fetchall())
        select = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' if t == NULL_TYPE else f'"{c}"' for c, t in types.items())
        return con.sql(f"SELECT {select} FROM eyt_frame").to_arrow_table() if types else pa.table({})
    finally:
        con.close()


def write_file(data: pa.Table, path: Path) -> Path:
    """Write `data` to `path` atomically: a temporary file in the same folder, then a rename over `path`.
    A crash before the rename leaves the previous file (and at most a temp file no reader sees). On an object
    store: one upload, which replaces the object whole when it completes (a crash before leaves the old one)."""
    if is_remote(path):
        with as_path(path).open("wb") as out:
            pq.write_table(data, out)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        pq.write_table(data, tmp)
        _replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def write_schema_file(root: Path, table: str, declared: Columns) -> Path:
    """The zero-row file that gives a contract table (`declared`) its columns and types before any partition
    exists (rewritten only when the contract changed)."""
    path = table_dir(root, table) / SCHEMA_FILE
    schema = arrow_schema(declared)
    if path.exists():
        try:
            with path.open("rb") as stored:
                current = pq.read_schema(stored)
            if current.remove_metadata().equals(schema):
                return path
        except (OSError, pa.ArrowInvalid):
            pass  # unreadable: rewrite it
    return write_file(schema.empty_table(), path)


def reader(path: Path | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database of its own that can read `path`'s files: for an object store, with its fsspec
    filesystem registered (so no DuckDB extension is needed). For a reader that keeps views or settings."""
    con = duckdb.connect()
    register_filesystem(con, path)
    return con


_SCRATCH_LOCK = threading.Lock()
_scratch_database: tuple[int, duckdb.DuckDBPyConnection] | None = None  # (the process that opened it, it)
_INHERITED: list[duckdb.DuckDBPyConnection] = []  # a forked child's copy of its parent's database, kept, never used


def scratch(path: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A connection for one short query over `path`'s files (close it after). For a local path it is a cursor of
    one in-memory database the process keeps: opening a fresh database costs about 14 ms of CPU, a cursor 0.2 ms,
    and a step reads tables dozens of times. A cursor is a connection of its own (what it registers, other cursors
    do not see), so threads may each hold one. An object store's path gets a database of its own (`reader`)."""
    global _scratch_database
    if path is not None and is_remote(path):
        return reader(path)
    with _SCRATCH_LOCK:
        if _scratch_database is None or _scratch_database[0] != os.getpid():
            if _scratch_database is not None:  # a forked child: open its own, and never free the parent's, whose
                _INHERITED.append(_scratch_database[1])  # teardown would wait for threads the child does not have
            _scratch_database = (os.getpid(), duckdb.connect())
        return _scratch_database[1].cursor()


def register_filesystem(con: duckdb.DuckDBPyConnection, path: Path | None) -> None:
    """Let `con` read and glob `path`'s object store through fsspec (nothing to do for a local path)."""
    if path is not None and is_remote(path):
        con.register_filesystem(cast("UPath", as_path(path)).fs)  # a remote path is a UPath


def read_files(files: Iterable[Path], folder: Path) -> pd.DataFrame:
    """The rows of the given files (those that exist), with the table's schema-file columns first; a frame with
    just those columns when no file has rows."""
    paths = [str(f) for f in files if as_path(f).exists()]
    schema = as_path(folder) / SCHEMA_FILE
    if schema.exists():
        paths.insert(0, str(schema))
    if not paths:
        return pd.DataFrame()
    con = scratch(folder)
    try:
        return con.execute("SELECT * FROM read_parquet(?, union_by_name = true)", [paths]).df()
    finally:
        con.close()
