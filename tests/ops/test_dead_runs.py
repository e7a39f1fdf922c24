"""Runs whose process is gone: a real `eyt run` held by a localhost model server that does not answer is killed with
SIGKILL; the instance still says STARTED until `eyt`'s check (what `eyt run` / `eyt refresh` do first) reports it
failed, naming the pid. While the process lives, the run is left alone."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from eyt_dagster.ops.dead_runs import EytRunLauncher, mark_dead_runs, mark_process_runs, why_dead
from eyt_dagster.slate import default_slate_path
from resources.runs.processes import HOST_TAG, PID_TAG, START_TAG, process_alive, process_tags

from support.slates import write_slate

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.cli
def test_why_dead_judges_only_this_hosts_runs_whose_process_is_gone():
    here = socket.gethostname()
    gone = dead_pid()
    assert why_dead({HOST_TAG: here, PID_TAG: str(os.getpid())}) is None  # alive
    assert why_dead({HOST_TAG: "another-host", PID_TAG: str(gone)}) is None  # another machine's run
    assert why_dead({}) is None  # no record of where it ran
    assert f"pid {gone} on {here}" in why_dead({HOST_TAG: here, PID_TAG: str(gone)})
    # a live pid that started at another time is another process (the run's pid was reused)
    reused = {**process_tags(), "eyt/process_start": "1"}
    assert (why_dead(reused) is not None) == Path("/proc/self/stat").exists()


@pytest.mark.cli
def test_the_unfinished_run_of_a_worker_that_died_is_failed_with_the_cause(tmp_path):
    """What `eyt`'s launcher does the moment a worker dies (tests/ops/test_worker_crash.py: the whole command)."""
    from dagster import DagsterEventType, DagsterInstance, DagsterRun, DagsterRunStatus

    here, gone = socket.gethostname(), dead_pid()

    def add(run_id, status, **tags):
        run = DagsterRun(job_name="eyt_pools", run_id=run_id, status=status, tags={HOST_TAG: here, **tags})
        return instance.add_run(run)

    with DagsterInstance.from_config(str(tmp_path)) as instance:
        started = add(
            "a" * 8 + "-0000-0000-0000-000000000000", DagsterRunStatus.STARTED, **{PID_TAG: str(gone), START_TAG: "7"}
        )
        done = add(
            "b" * 8 + "-0000-0000-0000-000000000000", DagsterRunStatus.SUCCESS, **{PID_TAG: str(gone), START_TAG: "7"}
        )
        older = add(
            "c" * 8 + "-0000-0000-0000-000000000000", DagsterRunStatus.STARTED, **{PID_TAG: str(gone), START_TAG: "3"}
        )
        cause = "worker process died: SIGSEGV (a crash in native code) while executing eyt_pools [p]"
        assert [r.run_id for r in mark_process_runs(instance, gone, "7", cause)] == [started.run_id]
        assert instance.get_run_by_id(started.run_id).status == DagsterRunStatus.FAILURE
        failure = instance.all_logs(started.run_id)[-1]
        assert failure.dagster_event.event_type == DagsterEventType.RUN_FAILURE
        assert failure.message.startswith(f"Run {started.run_id} (eyt_pools) marked failed by eyt: {cause} (pid {gone}")
        assert instance.get_run_by_id(done.run_id).status == DagsterRunStatus.SUCCESS  # finished runs stay
        assert instance.get_run_by_id(older.run_id).status == DagsterRunStatus.STARTED  # another process, same pid
        assert mark_process_runs(instance, gone, "7", cause) == []  # once


@pytest.mark.cli
@pytest.mark.slow
def test_a_killed_run_is_marked_failed_and_a_live_one_is_left_alone(tmp_path, localhost_server):
    from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter

    release = threading.Event()

    def hold(_request):  # the simulator's first call never gets an answer while the test runs
        release.wait(120)
        return "{}"

    server = localhost_server(hold)
    simulator = {
        "id": "slow-simulator",
        "provider": "openai",
        "model": "slow",
        "family": "test-sim",
        "base_url": server.base_url,
        "timeout_s": 300,
        "max_retries": 0,
    }
    default = {t["id"]: t for t in yaml.safe_load(default_slate_path().read_text())["targets"]}
    slate = write_slate(
        tmp_path,
        simulator=simulator,
        targets=[default["reflective-baseline"]],
        dialogues_per_pool=1,
        pool_size=8,
        pools={"nemotron_usa": {"source": "fixture"}},
    )
    data = tmp_path / "data"
    env = {**os.environ, "EYT_DATA_DIR": str(data), "EYT_SLATE": str(slate), "HF_HUB_OFFLINE": "1"}
    env.pop("DAGSTER_HOME", None)
    # its own process group: `eyt run` may hand the run to a worker process, and kill -9 of the group is what
    # a machine going down does to both
    process = subprocess.Popen(
        [BIN / "eyt", "run", "--no-speech", "--no-reports"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not server.requests:  # the run is under way, waiting for the simulator
            assert process.poll() is None, "eyt run ended before it reached the simulator"
            assert time.monotonic() < deadline, "eyt run did not reach the simulator in time"
            time.sleep(0.5)
        with DagsterInstance.from_config(str(data / "dagster_home")) as instance:
            [run] = instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED]))
            pid = int(run.tags[PID_TAG])  # the worker process `eyt` ran the run in
            # the worker has its own process group (a terminal's Ctrl-C reaches only `eyt`), with `eyt` its parent
            assert _parent(pid) == process.pid and run.tags[HOST_TAG] == socket.gethostname()
            assert mark_dead_runs(instance) == []  # alive: left alone
            assert EytRunLauncher().check_run_worker_health(run).status.value == "RUNNING"
            assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED

            os.killpg(process.pid, signal.SIGKILL)  # a machine going down: `eyt` and its worker
            os.killpg(os.getpgid(pid), signal.SIGKILL)
            process.wait(30)
            # the kill reaches a worker process when the kernel next schedules it: on a loaded machine it can
            # still be sleeping for a moment after the group leader is gone
            gone_by = time.monotonic() + 30
            while process_alive(pid) and time.monotonic() < gone_by:
                time.sleep(0.1)
            assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED  # the record lies
            assert EytRunLauncher().check_run_worker_health(run).status.value == "FAILED"  # what the daemon sees
            marked = mark_dead_runs(instance)
            assert len(marked) == 1 and run.run_id[:8] in marked[0] and f"pid {pid}" in marked[0]
            after = instance.get_run_by_id(run.run_id)
            assert after.status == DagsterRunStatus.FAILURE
            failure = instance.all_logs(run.run_id)[-1]
            assert failure.dagster_event.event_type == DagsterEventType.RUN_FAILURE
            assert f"pid {pid}" in failure.message
            assert mark_dead_runs(instance) == []  # once
    finally:
        release.set()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


def _parent(pid: int) -> int:
    """The parent pid of a live process (from /proc)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.materialisation
def test_every_run_that_uses_the_slate_records_its_process(tmp_path):
    """Runs started outside `eyt` (the UI, cron, the daemon) get the tags from the `slate` resource."""
    from dagster import AssetSelection, DagsterInstance, materialize

    from eyt_dagster.definitions import ASSETS

    from support.pipeline import resources_for

    (tmp_path / "data").mkdir()
    instance = DagsterInstance.ephemeral()
    result = materialize(
        ASSETS,
        selection=AssetSelection.assets(["dialogue", "human_annotations"]),
        resources=resources_for(write_slate(tmp_path), tmp_path / "data"),
        instance=instance,
    )
    tags = instance.get_run_by_id(result.run_id).tags
    assert tags[PID_TAG] == str(os.getpid()) and tags[HOST_TAG] == socket.gethostname()
