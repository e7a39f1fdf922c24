"""The simulator audit's SQL twin (sql/simulator_audit.sql) against the table the asset wrote: every row and column.
Used on the pipeline warehouse, on a warehouse played against the stub server, and on hand-built dialogues."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from eyt_dagster.eyt_bench.table_contracts import conform_table

TWIN = Path(__file__).resolve().parents[2] / "sql" / "simulator_audit.sql"
KEYS = ["target", "pool", "seed_id", "turn"]
FLOATS = ["leak_cosine", "leak_overlap"]
EXACT = [
    "simulator",
    "latent_leak",
    "role_flip",
    "repetition",
    "empty_turn",
    "early_end",
    "model_leak",
    "model_role_flip",
    "simulator_flags",
    "flagged",
]


def read_twin(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    con.execute(TWIN.read_text())
    return con.execute("FROM simulator_audit_sql").df()


def assert_twin_equals(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The twin's rows equal dialogue.simulator_audit's (same keys; floats to 1e-12, the rest exactly, a null
    equal only to a null); returns the compared table."""
    twin = read_twin(con)
    table = con.execute("FROM dialogue.simulator_audit").df()
    assert len(twin) == len(table), f"{len(twin)} SQL rows vs {len(table)} asset rows"
    merged = table.merge(twin, on=KEYS, suffixes=("", "_sql"), how="outer", indicator=True)
    assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"][KEYS]
    for column in FLOATS:
        np.testing.assert_allclose(
            merged[column].astype(float),
            merged[f"{column}_sql"].astype(float),
            rtol=0,
            atol=1e-12,
            equal_nan=True,
            err_msg=column,
        )
    for column in EXACT:
        left = merged[column].astype("object").where(merged[column].notna(), None).tolist()
        right = merged[f"{column}_sql"].astype("object").where(merged[f"{column}_sql"].notna(), None).tolist()
        differ = [(k, a, b) for k, a, b in zip(merged[KEYS].values.tolist(), left, right) if a != b]
        assert not differ, f"{column}: {differ[:5]}"
    return merged


def memory_warehouse(turns: pd.DataFrame, audit_rows: pd.DataFrame) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the two tables the twin reads, stored with their contracts' types."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA dialogue")
    for name, df in (("dialogue_turns", turns), ("simulator_audit", audit_rows)):
        frame = conform_table(df, f"dialogue.{name}")  # noqa: F841 (read by DuckDB's replacement scan)
        con.execute(f"CREATE TABLE dialogue.{name} AS SELECT * FROM frame")
    return con
