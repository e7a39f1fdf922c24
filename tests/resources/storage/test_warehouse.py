"""The warehouse IO manager: the dynamic-partition fix, tables that change columns, and empty outputs."""

import duckdb
import pandas as pd
import pytest
from dagster import (
    AssetIn,
    DagsterInstance,
    DynamicPartitionsDefinition,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
    asset,
    materialize,
)

from eyt_dagster import table_registry
from eyt_dagster.definitions import Warehouse

MODELS = DynamicPartitionsDefinition(name="test_models")
CELLS = MultiPartitionsDefinition({"model": MODELS, "pool": StaticPartitionsDefinition(["a", "b"])})


@asset(key_prefix=["s"], partitions_def=CELLS, metadata={"partition_expr": {"model": "model", "pool": "pool"}})
def cells(context) -> pd.DataFrame:
    keys = context.partition_key.keys_by_dimension
    return pd.DataFrame({"model": [keys["model"]], "pool": [keys["pool"]], "x": [1.0]})


@asset(key_prefix=["s"], ins={"cells": AssetIn(key=["s", "cells"])})
def summary(cells: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"n": [len(cells)]})


def run(assets, io_manager, instance, partition_key=None, selection=None):
    return materialize(
        assets,
        partition_key=partition_key,
        selection=selection,
        resources={"io_manager": io_manager},
        instance=instance,
        raise_on_error=False,
    )


def version(frame: pd.DataFrame):
    """An unpartitioned asset s.report returning `frame`: a version of the report's code."""

    @asset(key_prefix=["s"], name="report")
    def report() -> pd.DataFrame:
        return frame

    return report


@pytest.mark.materialisation
def test_dynamic_multi_partitions_store_and_load(tmp_path):
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("test_models", ["m1", "m2"])
    db = str(tmp_path / "w.duckdb")
    for model in ("m1", "m2"):
        key = MultiPartitionKey({"model": model, "pool": "a"})
        assert run([cells, summary], Warehouse(database=db), instance, key, [cells]).success
    assert run([cells, summary], Warehouse(database=db), instance, selection=[summary]).success
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT n FROM s.summary").fetchone() == (2,)


@pytest.mark.materialisation
def test_partitioned_table_gains_a_new_column(tmp_path):
    pools = StaticPartitionsDefinition(["a", "b"])
    db = str(tmp_path / "w.duckdb")

    def version(columns):
        @asset(key_prefix=["s"], name="grows", partitions_def=pools, metadata={"partition_expr": "pool"})
        def grows(context) -> pd.DataFrame:
            return pd.DataFrame({"pool": [context.partition_key], **{c: [1.5] for c in columns}})

        return grows

    instance = DagsterInstance.ephemeral()
    assert run([version(["x"])], Warehouse(database=db), instance, "a").success
    assert run([version(["x", "y"])], Warehouse(database=db), instance, "b").success
    with duckdb.connect(db, read_only=True) as con:
        rows = con.execute("SELECT pool, x, y FROM s.grows ORDER BY pool").fetchall()
    assert rows == [("a", 1.5, None), ("b", 1.5, 1.5)]


@pytest.mark.materialisation
def test_unpartitioned_table_is_recreated_when_columns_change_and_empty_tables_exist(tmp_path):
    db = str(tmp_path / "w.duckdb")

    instance = DagsterInstance.ephemeral()
    assert run([version(pd.DataFrame({"a": [1]}))], Warehouse(database=db), instance).success
    assert run([version(pd.DataFrame({"b": ["x"], "a": [2]}))], Warehouse(database=db), instance).success
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT b, a FROM s.report").fetchall() == [("x", 2)]
    assert run([version(pd.DataFrame({"c": pd.Series([], dtype="float64")}))], Warehouse(database=db), instance).success
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM s.report").fetchone() == (0,)
        assert [r[0] for r in con.execute("DESCRIBE s.report").fetchall()] == ["c"]


@pytest.mark.materialisation
def test_an_empty_report_replaces_the_previous_rows(tmp_path):
    db = str(tmp_path / "w.duckdb")

    instance = DagsterInstance.ephemeral()
    assert run([version(pd.DataFrame({"a": [1, 2]}))], Warehouse(database=db), instance).success
    assert run([version(pd.DataFrame({"a": pd.Series([], dtype="int64")}))], Warehouse(database=db), instance).success
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM s.report").fetchone() == (0,)


POOLS = StaticPartitionsDefinition(["a", "b", "c"])


def pool_asset(frames: dict[str, pd.DataFrame], name: str = "typed"):
    """A pool-partitioned asset s.<name> returning frames[pool]."""

    @asset(key_prefix=["s"], name=name, partitions_def=POOLS, metadata={"partition_expr": "pool"})
    def typed(context) -> pd.DataFrame:
        return frames[context.partition_key]

    return typed


def column_types(db: str, table: str) -> dict[str, str]:
    with duckdb.connect(db, read_only=True) as con:
        return {r[0]: r[1] for r in con.execute(f"DESCRIBE s.{table}").fetchall()}


@pytest.mark.materialisation
def test_column_types_come_from_the_contract_not_from_the_first_frame(tmp_path, monkeypatch):
    """A first write whose `error` and `note` columns are all missing (every call failed, or none did) used to
    create them with DuckDB's type NULL, and the next write with text in them failed."""
    monkeypatch.setitem(
        table_registry.TABLE_COLUMNS,
        "s.typed",
        {"pool": "string", "turn": "int64", "note": "string", "error": "string", "score": "float64"},
    )
    db = str(tmp_path / "w.duckdb")
    instance = DagsterInstance.ephemeral()
    frames = {
        "a": pd.DataFrame({"pool": ["a"], "turn": [0], "note": [None], "error": [None], "score": [None]}),
        "b": pd.DataFrame(
            {"pool": ["b"], "turn": [1], "note": ["text"], "error": ["TimeoutError: slow"], "score": [0.5]}
        ),
        "c": pd.DataFrame({"pool": pd.Series([], dtype=object)}),  # an empty partition: declared columns only
    }
    for pool in ("a", "b", "c"):
        assert run([pool_asset(frames)], Warehouse(database=db), instance, pool).success, pool
    assert column_types(db, "typed") == {
        "pool": "VARCHAR",
        "turn": "BIGINT",
        "note": "VARCHAR",
        "error": "VARCHAR",
        "score": "DOUBLE",
    }
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT pool, note, error, score FROM s.typed ORDER BY pool").fetchall() == [
            ("a", None, None, None),
            ("b", "text", "TimeoutError: slow", 0.5),
        ]


@pytest.mark.materialisation
def test_a_table_without_a_contract_stores_an_all_missing_column_as_text(tmp_path):
    db = str(tmp_path / "w.duckdb")
    instance = DagsterInstance.ephemeral()
    frames = {
        "a": pd.DataFrame({"pool": ["a"], "error": [None]}),
        "b": pd.DataFrame({"pool": ["b"], "error": ["boom"]}),
    }
    for pool in ("a", "b"):
        assert run([pool_asset(frames, "loose")], Warehouse(database=db), instance, pool).success, pool
    assert column_types(db, "loose")["error"] == "VARCHAR"


@pytest.mark.materialisation
def test_a_column_an_older_warehouse_stored_as_null_gets_its_contract_type(tmp_path, monkeypatch):
    monkeypatch.setitem(table_registry.TABLE_COLUMNS, "s.typed", {"pool": "string", "error": "string"})
    db = str(tmp_path / "w.duckdb")
    with duckdb.connect(db) as con:  # what the stock IO manager made of an all-missing first write
        con.execute("CREATE SCHEMA s")
        con.execute("CREATE TABLE s.typed AS SELECT 'a' AS pool, NULL AS error")
    assert column_types(db, "typed")["error"] == '"NULL"'
    frames = {"b": pd.DataFrame({"pool": ["b"], "error": ["ValueError: bad reply"]})}
    assert run([pool_asset(frames)], Warehouse(database=db), DagsterInstance.ephemeral(), "b").success
    assert column_types(db, "typed")["error"] == "VARCHAR"


@pytest.mark.materialisation
def test_a_write_that_fails_keeps_the_partition_s_previous_rows(tmp_path, monkeypatch):
    monkeypatch.setitem(table_registry.TABLE_COLUMNS, "s.typed", {"pool": "string", "x": "float64"})
    db = str(tmp_path / "w.duckdb")
    instance = DagsterInstance.ephemeral()
    assert run(
        [pool_asset({"a": pd.DataFrame({"pool": ["a"], "x": [1.0]})})], Warehouse(database=db), instance, "a"
    ).success
    # a column the contract does not declare: refused after the partition's rows were deleted, so rolled back
    bad = run(
        [pool_asset({"a": pd.DataFrame({"pool": ["a"], "x": [2.0], "undeclared": [1]})})],
        Warehouse(database=db),
        instance,
        "a",
    )
    assert not bad.success
    failure = next(e for e in bad.all_events if e.event_type_value == "STEP_FAILURE")
    message = str(failure.event_specific_data.error)
    assert "undeclared" in message and "contract" in message
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT pool, x FROM s.typed").fetchall() == [("a", 1.0)]


@pytest.mark.materialisation
def test_a_failed_load_closes_its_connection(tmp_path):
    """The stock DuckDB client left its connection open when a load raised: every later connection to the
    file from the same process (read-only, or another run's) then failed with "Can't open a connection to
    same database file with a different configuration than existing connections"."""
    db = str(tmp_path / "w.duckdb")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("test_models", ["m1"])
    first = run([cells, summary], Warehouse(database=db), instance, selection=[summary])
    assert not first.success  # s.cells was never written: loading it fails
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT 1").fetchone() == (1,)
    failure = next(e for e in first.all_events if e.event_type_value == "STEP_FAILURE")
    assert "s.cells is not in the warehouse yet" in str(failure.event_specific_data.error)
    key = MultiPartitionKey({"model": "m1", "pool": "a"})
    assert run([cells, summary], Warehouse(database=db), instance, key, [cells]).success
    assert run([cells, summary], Warehouse(database=db), instance, selection=[summary]).success


@pytest.mark.unit
def test_every_contract_maps_to_duckdb_and_arrow_types():
    """The one dtype mapping serves DuckDB now and Arrow / Parquet later: an empty partition conformed to its
    contract converts to Arrow with exactly the contract's schema; so does an error row of dialogue_turns,
    whose text columns are all missing."""
    import pyarrow as pa

    from eyt_dagster.core.storage_types import arrow_schema, conform, duckdb_columns

    for table, columns in table_registry.TABLE_COLUMNS.items():
        assert set(duckdb_columns(columns)) == set(columns), table
        empty = conform(pd.DataFrame(), columns, table)
        arrow = pa.Table.from_pandas(empty, schema=arrow_schema(columns), preserve_index=False)
        assert arrow.schema.names == list(columns) and arrow.num_rows == 0, table
    turns = table_registry.TABLE_COLUMNS["dialogue.dialogue_turns"]
    error_row = pd.DataFrame(
        [
            {
                "target": "t",
                "pool": "nemotron_usa",
                "seed_id": "s",
                "turn": 0,
                "complete": False,
                "error": "ModelCallError: 500",
            }
        ]
    )
    arrow = pa.Table.from_pandas(
        conform(error_row, turns, "dialogue.dialogue_turns"), schema=arrow_schema(turns), preserve_index=False
    )
    assert arrow.column("user_text").null_count == 1 and arrow.schema.field("user_text").type == pa.string()
    assert duckdb_columns(turns)["turn"] == "BIGINT" and arrow.schema.field("complete").type == pa.bool_()
