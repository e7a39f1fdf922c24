"""Column types of stored tables, in one place: a table contract names each column's pandas dtype, and this
module maps those dtypes to DuckDB and Arrow types and casts a frame to its contract.

A table's types come from its contract, never from the first frame written: a column that happens to be
all missing in the first write (an `error` column with no errors yet) would otherwise be stored with
DuckDB's type NULL, and a later write with text in it would fail. See docs/storage.md#column-types-the-table-contracts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd
import pyarrow as pa

Columns = Mapping[str, str]  # column -> pandas dtype, in table order

# The metadata entry holding the settings an asset read: on its definition, on each materialisation (the
# warehouse IO manager copies it there) and on each settings observation (eyt_dagster/settings_sources.py).
SETTINGS_KEY = "eyt/settings"

# pandas dtype -> (DuckDB type, Arrow type). Nullable dtypes ("Int64", "boolean", "string") hold missing
# values; "int64" / "bool" columns of a contract are never missing.
TYPES: dict[str, tuple[str, pa.DataType]] = {
    "string": ("VARCHAR", pa.string()),
    "int64": ("BIGINT", pa.int64()),
    "Int64": ("BIGINT", pa.int64()),
    "float64": ("DOUBLE", pa.float64()),
    "bool": ("BOOLEAN", pa.bool_()),
    "boolean": ("BOOLEAN", pa.bool_()),
    "datetime64[ns]": ("TIMESTAMP", pa.timestamp("us")),
}


class ContractError(ValueError):
    """A frame does not fit its table contract."""


def column_names(columns: Columns, *, without: Iterable[str] = ()) -> list[str]:
    """A contract's column names in table order, leaving out `without`: the columns of the frame a domain function
    builds, read from the table's contract (the one place they are written) rather than listed again. Each name
    left out must be one of the contract's (the columns an asset adds afterwards: the baseline flags, created_at)."""
    left_out = set(without)
    unknown = sorted(left_out.difference(columns))
    if unknown:
        raise ContractError(f"column(s) {unknown} are not in the contract")
    return [name for name in columns if name not in left_out]


def duckdb_columns(columns: Columns) -> dict[str, str]:
    """Column -> DuckDB type."""
    return {name: TYPES[dtype][0] for name, dtype in columns.items()}


def arrow_schema(columns: Columns) -> pa.Schema:
    return pa.schema([(name, TYPES[dtype][1]) for name, dtype in columns.items()])


def conform(df: pd.DataFrame, columns: Columns, table: str) -> pd.DataFrame:
    """The frame with exactly the contract's columns, in order and with their dtypes. A column the contract
    does not declare is an error (declare it); a declared column the frame lacks is added as missing."""
    extra = [c for c in df.columns if c not in columns]
    if extra:
        raise ContractError(
            f"{table}: column(s) {extra} are not in the table's contract; declare them with "
            f"their dtype in eyt_dagster/eyt_bench/table_contracts.py (or drop them from the output)"
        )
    out = df.reindex(columns=list(columns))
    for name, dtype in columns.items():
        try:
            out[name] = _cast(out[name], dtype)
        except (TypeError, ValueError) as exc:
            raise ContractError(f"{table}.{name}: cannot store {out[name].dtype} values as {dtype}: {exc}") from exc
    return out


def _cast(column: pd.Series, dtype: str) -> pd.Series:
    if dtype == "string":  # keep missing values missing (astype(str) would write "None")
        return column.astype("object").where(column.notna(), None).astype("string")
    if dtype in ("Int64", "int64") and column.dtype == object:  # all-missing or mixed object -> numbers first
        column = pd.to_numeric(column)
    if dtype == "boolean" and column.dtype == object:
        column = column.where(column.notna(), None)
    if dtype == "datetime64[ns]":
        return pd.to_datetime(column).astype(dtype)
    return column.astype(dtype)
