"""Reading whole report tables from the warehouse's Parquet files (no lock on eyt.duckdb), for the reports that
span both benchmarks: a table never materialised reads as no rows, so one benchmark alone still reports."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import pandas as pd

from resources.warehouse import read_partition


def read_table(warehouse: Path, table: str, columns: Iterable[str] | None = None) -> pd.DataFrame:
    """Every row of `schema.table` (only `columns` when given), or no rows when it has no file yet."""
    columns = list(columns) if columns else None
    df = read_partition(table, {}, warehouse)
    if df.empty:
        return pd.DataFrame(columns=columns or [])
    return df[columns] if columns else df


def read_tables(warehouse: Path, tables: Iterable[str]) -> dict[str, pd.DataFrame]:
    return {name: read_table(warehouse, name) for name in tables}


def code_version(tables_version: str) -> str:
    """The installed package version and the export layout version (no commit hash or time, so a rerun of the
    same code on the same warehouse writes the same bytes)."""
    try:
        package = metadata.version("eyt-dagster")
    except metadata.PackageNotFoundError:
        package = "unknown"
    return f"eyt-dagster {package}, tables v{tables_version}"
