"""The Parquet warehouse: readers beside writers, concurrent partition writes, a killed write, a moved data
directory, migrating an older warehouse and deleting a target's rows (docs/storage.md)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pytest
from dagster import DagsterInstance, StaticPartitionsDefinition, asset, materialize

from eyt_dagster.definitions import Warehouse
from resources.audio.tts import store_clip
from resources.storage.data_paths import relative_path_columns, resolve_path_columns
from resources.storage.warehouse import connect, store_frame
from resources.storage.warehouse_files import (
    decode_value,
    encode_value,
    partition_file,
    table_dir,
    warehouse_root,
    write_file,
)

ROOT = Path(__file__).resolve().parents[3]
SLOTS = StaticPartitionsDefinition([f"p{i}" for i in range(8)])
ROWS: dict[str, tuple[int, int]] = {}  # partition -> (rows, version) the asset returns; set before a run


@asset(key_prefix=["s"], name="slots", partitions_def=SLOTS, metadata={"partition_expr": "slot"})
def slots(context) -> pd.DataFrame:
    n, version = ROWS[context.partition_key]
    return pd.DataFrame({"slot": [context.partition_key] * n, "version": [version] * n, "i": range(n)})


def write_slot(database: str, slot: str, n: int, version: int) -> bool:
    ROWS[slot] = (n, version)
    return materialize(
        [slots],
        partition_key=slot,
        resources={"io_manager": Warehouse(database=database)},
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    ).success


def counts(database: Path) -> dict[str, tuple[int, int, int]]:
    with duckdb.connect(str(database), read_only=True) as con:
        return {
            s: (n, lo, hi)
            for s, n, lo, hi in con.execute(
                "SELECT slot, count(*), min(version), max(version) FROM s.slots GROUP BY slot"
            ).fetchall()
        }


READER = textwrap.dedent("""
    import sys, time, duckdb
    database, out, stop = sys.argv[1:4]
    con = duckdb.connect(database, read_only=True)   # held open for the whole run, as an analyst's shell would
    with open(out, "w") as log:
        while True:
            for row in con.execute("SELECT slot, count(*), min(version), max(version) FROM s.slots GROUP BY slot").fetchall():
                log.write(" ".join(map(str, row)) + "\\n")
            log.write("--\\n"); log.flush()
            try:
                open(stop).close(); break
            except FileNotFoundError:
                time.sleep(0.2)
""")


@pytest.mark.cli
def test_a_reader_holding_eyt_duckdb_open_never_blocks_a_run_nor_sees_half_a_partition(tmp_path):
    """A process holding eyt.duckdb open read-only used to make every write fail with "Could not set lock on
    file"; now runs go on, and each snapshot the reader takes shows a partition whole, old or new."""
    database = tmp_path / "data" / "eyt.duckdb"
    n = 200_000
    assert write_slot(str(database), "p0", n, 1)
    out, stop = tmp_path / "seen.txt", tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(database), str(out), str(stop)])
    try:
        deadline = time.monotonic() + 60
        while "--" not in (out.read_text() if out.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.1)
        for version in (2, 3, 4):
            assert write_slot(str(database), "p0", n, version), version
            assert write_slot(str(database), "p1", n // 2, version), version
    finally:
        stop.touch()
        reader.wait(timeout=60)
    assert reader.returncode == 0
    seen = [line.split() for line in out.read_text().splitlines() if line != "--"]
    assert len(seen) >= 3
    for slot, rows, low, high in seen:  # a partition is whole: all its rows, of one version
        assert low == high and int(rows) == (n if slot == "p0" else n // 2), (slot, rows, low, high)
    assert counts(database) == {"p0": (n, 4, 4), "p1": (n // 2, 4, 4)}


def _write_in_child(database: str, slot: str, n: int, version: int, barrier) -> None:
    barrier.wait(timeout=120)
    os._exit(0 if write_slot(database, slot, n, version) else 1)


@pytest.mark.materialisation
def test_eight_partitions_written_at_once_keep_exact_row_counts(tmp_path):
    """Eight processes write eight partitions at the same moment (twice, the second time replacing the
    first): no lock error, no lost and no duplicated rows."""
    database = tmp_path / "data" / "eyt.duckdb"
    assert write_slot(str(database), "p0", 1, 0)  # the views exist before the race (as after any first run)
    forked = multiprocessing.get_context("fork")
    for version in (1, 2):
        barrier = forked.Barrier(8)
        children = [
            forked.Process(
                target=_write_in_child, args=(str(database), f"p{i}", 100 * (i + 1) * version, version, barrier)
            )
            for i in range(8)
        ]
        for child in children:
            child.start()
        for child in children:
            child.join(timeout=300)
        assert [c.exitcode for c in children] == [0] * 8
        assert counts(database) == {f"p{i}": (100 * (i + 1) * version, version, version) for i in range(8)}


KILLED_WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    import pyarrow as pa
    from resources.storage.warehouse_files import write_file
    path, n = Path(sys.argv[1]), int(sys.argv[2])
    write_file(pa.table({"slot": ["p0"] * n, "version": [9] * n, "i": list(range(n))}), path)
""")


@pytest.mark.cli
def test_a_write_killed_midway_leaves_the_previous_partition_readable(tmp_path):
    """kill -9 while a large partition is being written: readers still get the previous version, and the
    stray temp file is never read."""
    database = tmp_path / "data" / "eyt.duckdb"
    assert write_slot(str(database), "p0", 1000, 1)
    target = partition_file(warehouse_root(database.parent), "s.slots", {"slot": "p0"})
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(target), "4000000"], env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    try:
        deadline, temps = time.monotonic() + 120, []
        while not temps and time.monotonic() < deadline and child.poll() is None:
            temps = [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]
        assert temps, "the writer finished (or never started) before it could be killed"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert [p for p in target.parent.iterdir() if p.name.endswith(".tmp")], "the kill came after the rename"
    assert counts(database) == {"p0": (1000, 1, 1)}
    with duckdb.connect(str(database), read_only=True) as con:
        read = {
            Path(r[0]).name
            for r in con.execute(
                "SELECT DISTINCT filename FROM read_parquet(?, filename = true)",
                [str(table_dir(warehouse_root(database.parent), "s.slots") / "**" / "*.parquet")],
            ).fetchall()
        }
    assert read == {"part.parquet"}
    # a crash between the temp write and the rename (simulated): the old file stays, the temp file goes
    import pyarrow as pa

    import resources.storage.warehouse_files as files

    def crash(tmp: Path, path: Path) -> None:
        raise KeyboardInterrupt("killed between the temp write and the rename")

    original, files._replace = files._replace, crash
    try:
        with pytest.raises(KeyboardInterrupt):
            write_file(pa.table({"slot": ["p0"], "version": [2], "i": [0]}), target)
    finally:
        files._replace = original
    assert counts(database) == {"p0": (1000, 1, 1)}
    assert write_slot(str(database), "p0", 10, 3)  # and the next run replaces it as usual
    assert counts(database) == {"p0": (10, 3, 3)}


@pytest.mark.unit
def test_partition_values_make_safe_folder_names():
    for value in ("org/model:latest", "a@b+c", "..", ".hidden", "x=y", "plain_name-1", "ü"):
        segment = encode_value(value)
        assert "/" not in segment and not segment.startswith(".") and "=" not in segment and segment not in ("", "..")
        assert decode_value(segment) == value


@pytest.mark.cli
def test_a_moved_data_directory_keeps_its_views_and_clip_paths(tmp_path, monkeypatch):
    from eyt_dagster.ops.cli import main

    data = tmp_path / "data"
    database = data / "eyt.duckdb"
    assert write_slot(str(database), "p0", 5, 1)
    clip = store_clip(data, b"RIFF-not-really-a-wav" * 100)
    clips = relative_path_columns(pd.DataFrame({"subscale": ["s1"], "turn1_path": [str(clip)]}), data)
    assert clips["turn1_path"].iloc[0] == clip.relative_to(data).as_posix()
    store_frame(data, "s.clips", clips, partition_by=("subscale",))

    moved = tmp_path / "elsewhere" / "shared-data"
    moved.parent.mkdir()
    shutil.move(str(data), str(moved))
    monkeypatch.setenv("EYT_DATA_DIR", str(moved))
    with duckdb.connect(str(moved / "eyt.duckdb"), read_only=True) as con:  # the views still name the old place
        with pytest.raises(duckdb.IOException):
            con.execute("SELECT count(*) FROM s.slots").fetchone()
    assert main(["migrate"]) == 0  # (any eyt command or run does the same)
    monkeypatch.chdir(tmp_path / "elsewhere")  # the views work from any working directory
    with duckdb.connect(str(moved / "eyt.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM s.slots").fetchone() == (5,)
        stored = con.execute("SELECT * FROM s.clips").df()
    assert (
        Path(resolve_path_columns(stored, moved)["turn1_path"].iloc[0]).read_bytes() == b"RIFF-not-really-a-wav" * 100
    )


@pytest.mark.cli
def test_an_older_warehouse_is_migrated_with_every_row(tmp_path, monkeypatch):
    """A data directory from before the Parquet layout (real tables in eyt.duckdb) is exported per partition,
    its tables replaced by views, and every row reads back the same."""
    from eyt_dagster.ops.cli import main

    data = tmp_path / "data"
    data.mkdir()
    old = {
        "dialogue.chat_seeds": pd.DataFrame(
            {
                "pool": ["nemotron_usa", "nemotron_usa", "personamem_v2"],
                "seed_id": ["a", "b", "c"],
                "error": [None, "boom", None],
            }
        ),
        "dialogue.leaderboard": pd.DataFrame({"pool": ["nemotron_usa"], "target": ["m/x:1"], "drift": [0.25]}),
        "speech.tts_clips": pd.DataFrame(
            {
                "subscale": ["interpersonal_empathy", "stress_tolerance"],
                "turn": [1, 2],
                "path": ["audio/aa/x.wav", "audio/bb/y.wav"],
            }
        ),
    }
    with duckdb.connect(str(data / "eyt.duckdb")) as con:
        for table, frame in old.items():
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {table.split('.')[0]}")
            con.register("frame", frame)
            con.execute(f"CREATE TABLE {table} AS SELECT * FROM frame")
            con.unregister("frame")
        con.execute(
            "CREATE TABLE dialogue.judge_verdicts AS SELECT 'm/x:1' AS target, 'nemotron_usa' AS pool, "
            "'s' AS seed_id, 1 AS turn, NULL AS error"
        )  # an all-missing column typed NULL
    monkeypatch.setenv("EYT_DATA_DIR", str(data))
    assert main(["migrate"]) == 0
    root = warehouse_root(data)
    assert partition_file(root, "dialogue.judge_verdicts", {"pool": "nemotron_usa", "target": "m/x:1"}).is_file()
    assert partition_file(root, "dialogue.chat_seeds", {"pool": "personamem_v2"}).is_file()
    assert partition_file(root, "speech.tts_clips", {"subscale": "stress_tolerance"}).is_file()
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchone() == (0,)
        for table, frame in old.items():
            back = con.execute(f"SELECT {', '.join(frame.columns)} FROM {table}").df()
            key = list(frame.columns)
            pd.testing.assert_frame_equal(
                back.sort_values(key).reset_index(drop=True),
                frame.sort_values(key).reset_index(drop=True),
                check_dtype=False,
            )
        assert con.execute("SELECT target, pool, seed_id, turn, error FROM dialogue.judge_verdicts").fetchall() == [
            ("m/x:1", "nemotron_usa", "s", 1, None)
        ]
        types = dict(
            con.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'judge_verdicts'"
            ).fetchall()
        )
    assert types["error"] == "VARCHAR" and types["target"] == "VARCHAR" and types["pool"] == "VARCHAR"


@pytest.mark.unit
def test_removing_a_target_deletes_its_partition_files_and_its_report_rows(tmp_path, monkeypatch):
    from eyt_dagster.ops.target_removal import delete_target_rows

    data = tmp_path / "data"
    turns = pd.DataFrame({"target": ["gone/m:1", "gone/m:1", "kept"], "pool": ["nemotron_usa"] * 3, "x": [1, 2, 3]})
    store_frame(data, "s.turns", turns, partition_by=("pool", "target"))
    store_frame(data, "s.board", turns.drop_duplicates("target"))
    monkeypatch.setenv("EYT_DATA_DIR", str(data))
    with connect(data / "eyt.duckdb") as con:
        assert con.execute("SELECT count(*) FROM s.turns WHERE target = 'gone/m:1'").fetchone() == (2,)
    assert delete_target_rows("gone/m:1", "s.turns", data) == 2
    assert delete_target_rows("gone/m:1", "s.board", data) == 1
    assert not list(table_dir(warehouse_root(data), "s.turns").rglob(f"target={encode_value('gone/m:1')}"))
    with connect(data / "eyt.duckdb") as con:
        assert con.execute("SELECT target, x FROM s.turns").fetchall() == [("kept", 3)]
        assert con.execute("SELECT target FROM s.board").fetchall() == [("kept",)]


@pytest.mark.materialisation
def test_a_write_records_the_query_that_reads_it(tmp_path):
    database = tmp_path / "data" / "eyt.duckdb"
    ROWS["p3"] = (4, 1)
    result = materialize(
        [slots],
        partition_key="p3",
        resources={"io_manager": Warehouse(database=str(database))},
        instance=DagsterInstance.ephemeral(),
    )
    query = next(m for m in result.asset_materializations_for_node("s__slots")).metadata["Query"].value
    assert query == "SELECT * FROM s.slots WHERE slot = 'p3'"
    with duckdb.connect(str(database), read_only=True) as con:
        assert con.execute(query).fetchall() == [("p3", 1, i) for i in range(4)]


@pytest.mark.unit
def test_short_reads_share_one_database_per_process_and_stay_apart(tmp_path: Path) -> None:
    """read_files' cursors: each thread reads the right rows at once, a frame one cursor registers is not
    another's, and a forked child opens a database of its own instead of using (or freeing) its parent's."""
    import threading

    from resources.storage.warehouse_files import read_files, scratch, write_file

    folder = tmp_path / "t"
    for part in range(4):
        write_file(pa.table({"part": [part] * (part + 1)}), folder / f"p{part}.parquet")
    wrong: list[str] = []

    def read(part: int) -> None:
        for _ in range(20):
            rows = read_files([folder / f"p{part}.parquet"], folder)
            if rows["part"].tolist() != [part] * (part + 1):
                wrong.append(f"{part}: {rows['part'].tolist()}")

    threads = [threading.Thread(target=read, args=(p,)) for p in range(4) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    one, other = scratch(), scratch()
    one.register("eyt_frame", pd.DataFrame({"a": [1]}))
    with pytest.raises(duckdb.CatalogException):
        other.sql("SELECT * FROM eyt_frame")
    one.close(), other.close()
    # One forked process and a pipe, killed (SIGKILL) whatever happens: not a Pool, whose teardown sends SIGTERM and
    # waits, and so hangs for good when an earlier in-process Dagster run left a SIGTERM handler that does not exit.
    # A child that freed its parent's database would hang in its teardown: fail in a minute instead.
    context = multiprocessing.get_context("fork")
    answer, reply = context.Pipe(duplex=False)
    child = context.Process(target=_child_reads, args=(str(folder), reply))
    child.start()
    try:
        assert answer.poll(60), "the forked child did not answer within a minute"
        assert answer.recv() == [3, 3, 3, 3]
    finally:
        child.kill()
        child.join(10)


def _child_reads(folder: str, reply: Any) -> None:
    from resources.storage.warehouse_files import _scratch_database, read_files

    try:
        assert _scratch_database is not None and _scratch_database[0] != os.getpid()  # the parent's: not to be used
        reply.send(read_files([Path(folder) / "p3.parquet"], Path(folder))["part"].tolist())
    except BaseException as exc:  # the parent shows what went wrong instead of waiting a minute
        reply.send(repr(exc))
