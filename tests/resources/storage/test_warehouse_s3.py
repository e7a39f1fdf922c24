"""The warehouse on an object store (EYT_WAREHOUSE_URL=s3://...): partitions written through the IO manager,
read back through the downstream asset, the views and read_partition, and replaced whole, against a local
S3-compatible server (moto's ThreadedMotoServer) with credentials only in the environment."""

from __future__ import annotations

import boto3
import duckdb
import moto.server as moto_server
import pandas as pd
import pytest
import s3fs
from dagster import DagsterInstance, MultiPartitionKey, asset
from test_warehouse import CELLS, cells, run, summary

from eyt_dagster.definitions import Warehouse
from resources.storage.warehouse import connect, read_partition
from resources.storage.warehouse_files import WAREHOUSE_URL_ENV, is_remote, warehouse_root


def cells_with(rows: int):
    """Another version of s.cells: `rows` rows per partition."""

    @asset(
        key_prefix=["s"],
        name="cells",
        partitions_def=CELLS,
        metadata={"partition_expr": {"model": "model", "pool": "pool"}},
    )
    def versioned(context) -> pd.DataFrame:
        keys = context.partition_key.keys_by_dimension
        return pd.DataFrame({"model": [keys["model"]] * rows, "pool": [keys["pool"]] * rows, "x": [float(rows)] * rows})

    return versioned


SECRET = "s3cr3t-never-stored"
BUCKET = "eyt-test"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch):
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "eyt-test-key",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(WAREHOUSE_URL_ENV, f"s3://{BUCKET}/wh")

    s3fs.S3FileSystem.clear_instance_cache()  # fsspec reuses a filesystem made for an earlier test's server
    client = boto3.client("s3")
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        server.stop()


def keys(client) -> list[str]:
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def cell(model: str, pool: str) -> MultiPartitionKey:
    return MultiPartitionKey({"model": model, "pool": pool})


@pytest.mark.materialisation
def test_partitions_are_written_to_and_read_from_the_bucket(tmp_path, s3) -> None:
    db = str(tmp_path / "w.duckdb")
    assert is_remote(warehouse_root(tmp_path)) and str(warehouse_root(tmp_path)) == f"s3://{BUCKET}/wh"
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("test_models", ["m1", "m2"])
    for model in ("m1", "m2"):
        assert run([cells, summary], Warehouse(database=db), instance, cell(model, "a"), [cells]).success
    assert "wh/s/cells/model=m1/pool=a/part.parquet" in keys(s3)
    assert "wh/s/cells/model=m2/pool=a/part.parquet" in keys(s3)
    assert not (tmp_path / "warehouse").exists()  # nothing of the warehouse on the local disk

    # the downstream asset reads both partitions from the bucket, and writes its own table there
    assert run([cells, summary], Warehouse(database=db), instance, selection=[summary]).success
    assert "wh/s/summary/data.parquet" in keys(s3)
    with connect(tmp_path / "w.duckdb") as con:  # the views, with the bucket's filesystem registered
        assert con.execute("SELECT n FROM s.summary").fetchone() == (2,)
        assert con.execute("SELECT model, pool, x FROM s.cells ORDER BY model").fetchall() == [
            ("m1", "a", 1.0),
            ("m2", "a", 1.0),
        ]
        view = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'cells'").fetchone()[0]
    assert f"s3://{BUCKET}/wh/s/cells/**/*.parquet" in view
    assert read_partition("s.cells", {"model": "m2"}, tmp_path / "w.duckdb")["model"].tolist() == ["m2"]
    # no credential in the database file or the view
    assert SECRET.encode() not in (tmp_path / "w.duckdb").read_bytes() and SECRET not in view


@pytest.mark.materialisation
def test_a_rewritten_partition_replaces_its_object_whole(tmp_path, s3) -> None:
    db = str(tmp_path / "w.duckdb")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("test_models", ["m1"])
    assert run([cells_with(1)], Warehouse(database=db), instance, cell("m1", "b")).success
    before = keys(s3)
    assert run([cells_with(3)], Warehouse(database=db), instance, cell("m1", "b")).success
    assert keys(s3) == before  # the same object, replaced: no temporary or second object left
    frame = read_partition("s.cells", {"pool": "b"}, tmp_path / "w.duckdb")
    assert frame["x"].tolist() == [3.0, 3.0, 3.0] and set(frame["model"]) == {"m1"}


@pytest.mark.materialisation
def test_a_reader_without_the_filesystem_is_told_what_it_needs(tmp_path, s3) -> None:
    db = tmp_path / "w.duckdb"
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("test_models", ["m1"])
    assert run([cells], Warehouse(database=str(db)), instance, cell("m1", "a")).success
    # a plain DuckDB connection (no fsspec filesystem, no httpfs extension offline) cannot read the s3:// view
    with duckdb.connect(str(db), read_only=True) as con, pytest.raises(duckdb.Error):
        con.execute("SELECT count(*) FROM s.cells").fetchall()


@pytest.mark.unit
def test_removing_a_target_deletes_its_objects(tmp_path, s3) -> None:
    from eyt_dagster.ops.target_removal import delete_target_rows
    from resources.storage.warehouse import store_frame

    frame = pd.DataFrame({"target": ["a", "a", "b"], "v": [1, 2, 3]})
    store_frame(tmp_path, "s.scores", frame, partition_by=["target"])
    store_frame(tmp_path, "s.report", frame)
    assert "wh/s/scores/target=a/part.parquet" in keys(s3)
    assert delete_target_rows("a", "s.scores", tmp_path) == 2
    assert delete_target_rows("a", "s.report", tmp_path) == 2
    assert "wh/s/scores/target=a/part.parquet" not in keys(s3)
    assert read_partition("s.scores", {}, tmp_path / "w.duckdb")["target"].tolist() == ["b"]
    assert read_partition("s.report", {}, tmp_path / "w.duckdb")["v"].tolist() == [3]
