"""EYT_PROFILE_DIR and the CPU buckets of bench/cpu_profile.py (eyt_dagster/ops/profiling.py): a hand-made profile's
seconds land in the buckets they should and add up to its total; a tiny process with the switch on writes a .prof
that pstats reads, its worker thread's function included."""

from __future__ import annotations

import json
import os
import pstats
import subprocess
import sys
from pathlib import Path

import pytest

from eyt_dagster.ops.profiling import (
    IMPORTS,
    OTHER,
    STARTUP_IMPORTS,
    WAITING,
    bucket_of,
    bucket_seconds,
    caller_shares,
    folded_buckets,
    parse_folded,
)

ROOT = Path(__file__).resolve().parents[2]

CACHE = ("/srv/eyt/resources/models/call_cache.py", 10, "store")
DAGSTER = ("/venv/lib/python3.11/site-packages/dagster/_core/events/__init__.py", 5, "log_event")
ENCODER = ("/srv/eyt/resources/text/embeddings.py", 40, "encode")
LOOP = ("/srv/eyt/eyt_dagster/eyt_bench/dialogue_loop.py", 7, "play")
EXECUTE = ("~", 0, "<method 'execute' of 'sqlite3.Cursor' objects>")
DUMPS = ("/usr/lib/python3.11/json/__init__.py", 183, "dumps")
WRAPPER = ("/usr/lib/python3.11/functools.py", 1, "wrapper")
DEEPCOPY = ("/usr/lib/python3.11/copy.py", 128, "deepcopy")
PING = ("/usr/lib/python3.11/a.py", 1, "ping")
PONG = ("/usr/lib/python3.11/b.py", 1, "pong")
THREAD = ("/usr/lib/python3.11/threading.py", 975, "run")


def edge(tt: float, ct: float | None = None, calls: int = 1) -> tuple[int, int, float, float]:
    return (calls, calls, tt, tt if ct is None else ct)


# (primitive calls, calls, own s, cumulative s, {caller: (calls, primitive calls, own s, cumulative s)})
STATS = {
    CACHE: (1, 1, 1.0, 2.5, {LOOP: edge(1.0, 2.5)}),
    DAGSTER: (1, 1, 2.0, 6.0, {}),
    ENCODER: (1, 1, 4.0, 4.1, {LOOP: edge(4.0, 4.1)}),
    LOOP: (1, 1, 0.5, 8.0, {THREAD: edge(0.5, 8.0)}),
    # sqlite3 under the cache (1 s) and under Dagster (2 s): split by its own time under each
    EXECUTE: (3, 3, 3.0, 3.0, {CACHE: edge(1.0), DAGSTER: edge(2.0, calls=2)}),
    # json under a wrapper of no bucket, itself under the cache (0.3 s) and the encoder (0.1 s)
    DUMPS: (1, 1, 0.4, 0.4, {WRAPPER: edge(0.4)}),
    WRAPPER: (2, 2, 0.0, 0.4, {CACHE: edge(0.0, 0.3), ENCODER: edge(0.0, 0.1)}),
    # recursion under the dialogue loop
    DEEPCOPY: (1, 5, 0.6, 0.6, {DEEPCOPY: edge(0.48, 0.48, 4), LOOP: edge(0.12, 0.6)}),
    # two functions of no bucket calling each other, entered from Dagster
    PING: (2, 2, 0.2, 1.0, {DAGSTER: edge(0.1, 0.8), PONG: edge(0.1, 0.2)}),
    PONG: (1, 1, 0.3, 0.5, {PING: edge(0.3, 0.5)}),
    # a thread's first function: no caller, no bucket
    THREAD: (1, 1, 0.25, 8.25, {}),
}


pytestmark = pytest.mark.unit


def test_the_rules_name_the_project_and_library_files() -> None:
    assert bucket_of(CACHE) == "call cache, ledger"
    assert bucket_of(DAGSTER) == "Dagster"
    assert bucket_of(ENCODER) == "embeddings"
    assert bucket_of(LOOP) == "project: steps"
    assert bucket_of(("/srv/eyt/resources/models/chat_client.py", 149, "parse_reply")) == "JSON schema, validation"
    assert bucket_of(("/srv/eyt/resources/models/chat_client.py", 488, "complete_json")) == "model client"
    assert bucket_of(("/srv/eyt/resources/storage/warehouse.py", 1, "<module>")) == "imports"
    for neutral in (EXECUTE, DUMPS, WRAPPER, DEEPCOPY, THREAD):
        assert bucket_of(neutral) is None


def test_seconds_go_to_the_nearest_caller_with_a_bucket_and_add_up() -> None:
    buckets = bucket_seconds(STATS)
    assert sum(buckets.values()) == pytest.approx(sum(v[2] for v in STATS.values()))
    assert buckets["call cache, ledger"] == pytest.approx(1.0 + 1.0 + 0.3)  # its own, its sqlite, 3/4 of json
    assert buckets["embeddings"] == pytest.approx(4.0 + 0.1)
    assert buckets["Dagster"] == pytest.approx(2.0 + 2.0 + 0.2 + 0.3)  # the cycle's two functions with it
    assert buckets["project: steps"] == pytest.approx(0.5 + 0.6)  # the recursion's every level
    assert buckets[OTHER] == pytest.approx(0.25)


def test_calls_are_split_the_same_way() -> None:
    calls = bucket_seconds(STATS, calls=True)
    assert sum(calls.values()) == pytest.approx(sum(v[1] for v in STATS.values()))
    # its own, its one sqlite call of three, 3/4 of json's, one of the wrapper's two (split by calls under each)
    assert calls["call cache, ledger"] == pytest.approx(1 + 1 + 0.75 + 1)


def test_a_cycle_with_no_way_out_is_other() -> None:
    stats = {PING: (1, 1, 1.0, 1.0, {PONG: edge(1.0)}), PONG: (1, 1, 1.0, 1.0, {PING: edge(1.0)})}
    assert caller_shares(stats, bucket_of)[PING] == {OTHER: 1.0}
    assert bucket_seconds(stats) == {OTHER: pytest.approx(2.0)}


PROCESS = 'process 4242:"python -m eyt_dagster.ops.cli run"'
THREAD_FRAMES = "Thread._bootstrap (/usr/lib/python3.11/threading.py);Thread.run (/usr/lib/python3.11/threading.py)"
FOLDED = [
    # the dialogue loop storing a reply: json under the cache is the cache's
    f"{PROCESS};{THREAD_FRAMES};play (/srv/eyt/eyt_dagster/eyt_bench/dialogue_loop.py:7);"
    "store (/srv/eyt/resources/models/call_cache.py:10);dumps (/usr/lib/python3.11/json/__init__.py:183) 30",
    # an import under way inside a step: imports, whatever imports it
    f"{PROCESS};{THREAD_FRAMES};encode (/srv/eyt/resources/text/embeddings.py:40);"
    "_find_and_load (<frozen importlib._bootstrap>:1176);<module> (/venv/site-packages/torch/__init__.py:1) 20",
    # a worker importing the code location at its start
    'process 4243:"python -c from multiprocessing.spawn import spawn_main; spawn_main(pipe_handle=8)";'
    "_serve (/srv/eyt/eyt_dagster/ops/worker_pool.py:70);_worker_start (/srv/eyt/eyt_dagster/ops/launch.py:226);_find_and_load (<frozen "
    "importlib._bootstrap>:1176) 7",
    # a thread of no bucket at all
    f"{PROCESS};{THREAD_FRAMES} 3",
    # a pool thread waiting for the call cache's connection: not CPU
    f"{PROCESS};{THREAD_FRAMES};store (/srv/eyt/resources/models/call_cache.py);__enter__ (/usr/lib/python3.11/"
    "contextlib.py);SharedDatabase.use (/srv/eyt/resources/storage/sqlite_files.py) 11",
    "py-spy> Stopped sampling because process exited",
]


def test_a_sampled_line_is_read_into_its_frames() -> None:
    parsed = parse_folded(FOLDED[0])
    assert parsed is not None
    process, frames, samples = parsed
    assert process.startswith("process 4242:") and samples == 30
    assert frames[-1] == ("/usr/lib/python3.11/json/__init__.py", 183, "dumps")
    assert frames[0] == ("/usr/lib/python3.11/threading.py", 0, "Thread._bootstrap")
    assert parse_folded(FOLDED[-1]) is None
    worker = parse_folded(FOLDED[2])  # a command line with a ";" in it
    assert worker is not None and worker[0].endswith('spawn_main(pipe_handle=8)"') and worker[1][0][2] == "_serve"


def test_a_sampled_stack_goes_to_its_nearest_bucket_or_to_the_import_under_way() -> None:
    assert folded_buckets(FOLDED) == {"call cache, ledger": 30, IMPORTS: 20, STARTUP_IMPORTS: 7, OTHER: 3, WAITING: 11}


TINY = """
import threading
from eyt_dagster.ops.profiling import start_if_asked

start_if_asked("tiny")

def spin_in_a_thread():
    return sum(i * i for i in range(200_000))

thread = threading.Thread(target=spin_in_a_thread)
thread.start()
thread.join()
"""


def test_the_switch_writes_a_profile_of_every_thread(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EYT_PROFILE_DIR": str(tmp_path / "profiles")}
    done = subprocess.run([sys.executable, "-c", TINY], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (prof,) = (tmp_path / "profiles").glob("tiny-*.prof")
    names = {name for _, _, name in pstats.Stats(str(prof)).stats}  # type: ignore[attr-defined]
    assert "spin_in_a_thread" in names
    facts = json.loads(prof.with_suffix(".json").read_text())
    assert facts["label"] == "tiny" and facts["threads"] == 2
    assert 0 < facts["profiled_s"] <= facts["cpu_s"]


def test_unset_no_profile(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "EYT_PROFILE_DIR"}
    code = "from eyt_dagster.ops.profiling import start_if_asked; print(start_if_asked('tiny'))"
    done = subprocess.run(
        [sys.executable, "-c", code], env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "None", done.stderr
