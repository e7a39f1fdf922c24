"""A worker process that dies during a run fails that run only: a real `eyt run` on a small slate (two pools, one
embedded target, the simulator on a localhost OpenAI-compatible server) in which the worker executing the
personamem_v2 pool's run is killed in the middle of its chat_seeds step, while its model call is held by the
server, with SIGSEGV (as a native crash sends) at --parallel 2 and SIGKILL (as the out-of-memory killer sends) at
--parallel 1.

The test finds the worker as a user would: the run's `eyt/pid` tag in the Dagster instance. Afterwards the other
pool's runs have succeeded (at --parallel 2 its chat_seeds call was held too, so it was mid-step when its
neighbour died), the killed run is FAILURE with the signal named, its cell was skipped, nothing is left STARTED,
the command exits 1 with a summary naming each run and leaves no process behind, and `eyt refresh` reruns exactly the failed pool and its
cell (at --parallel 1 only its plan is checked, to keep the test short)."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from eyt_dagster.eyt_bench.settings import PoolSource
from eyt_dagster.slate import default_slate_path
from resources.datasets.persona_sources import load_pool_records
from resources.runs.processes import PID_TAG, process_alive

from support.role_play import RolePlay
from support.slates import write_slate

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TARGET = "reflective-baseline"
KILLED, NEIGHBOUR = "personamem_v2", "nemotron_usa"


class HeldSeeds:
    """Plays every role (RolePlay), but holds the ChatSEED requests of the pools in `hold` until `release` is
    set; `arrived[pool]` is set when one of that pool's requests is being held."""

    def __init__(self, hold: set[str]) -> None:
        self.role_play = RolePlay()
        self.pool_of = {
            record.persona_text: pool
            for pool in (KILLED, NEIGHBOUR)
            for record in load_pool_records(pool, PoolSource(source="fixture"))[0]
        }
        self.hold = hold
        self.arrived = {pool: threading.Event() for pool in hold}
        self.release = threading.Event()

    def __call__(self, request):
        if self.role_play.role_of(request) == "seed_generation" and not self.release.is_set():
            persona = request["messages"][-1]["content"].split("Persona:", 1)[-1].strip()
            pool = self.pool_of.get(persona)
            if pool in self.hold:
                self.arrived[pool].set()
                self.release.wait(120)
        return self.role_play(request)


def no_core_files() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a SIGSEGV'd worker writes no core file into the repo


def eyt(args, env, log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(
            [BIN / "eyt", *args],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=no_core_files,
        )


def finish(process: subprocess.Popen, log: Path, seconds: float = 240) -> tuple[int, str]:
    try:
        code = process.wait(seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
        pytest.fail(f"eyt did not finish in {seconds} s:\n{log.read_text()[-3000:]}")
    deadline = time.monotonic() + 15
    # no worker, `tail` of a step's log or other helper is left behind: none of the processes eyt started (the
    # workers have process groups of their own; every process of the command carries its EYT_COMMAND_PID)
    while _started_by(process.pid):
        assert time.monotonic() < deadline, f"processes of eyt outlived it:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)
    return code, log.read_text()


def _started_by(command_pid: int) -> list[int]:
    """The live processes that carry EYT_COMMAND_PID=command_pid in their environment (read from /proc)."""
    marker = f"EYT_COMMAND_PID={command_pid}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def running_run(instance, job: str, partition: str):
    from dagster import DagsterRunStatus, RunsFilter

    runs = instance.get_runs(
        RunsFilter(job_name=job, statuses=[DagsterRunStatus.STARTED], tags={"dagster/partition": partition})
    )
    return runs[0] if runs else None


def step_started(instance, run_id: str, step: str) -> bool:
    from dagster import DagsterEventType

    return any(
        e.dagster_event and e.dagster_event.event_type == DagsterEventType.STEP_START and e.step_key == step
        for e in instance.all_logs(run_id)
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "parallel,kill,cause",
    [(2, signal.SIGSEGV, "SIGSEGV (a crash in native code)"), (1, signal.SIGKILL, "SIGKILL (killed by the kernel")],
)
def test_a_killed_worker_fails_its_run_only_and_a_refresh_reruns_just_that(
    tmp_path, parallel, kill, cause, localhost_server
):
    from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus

    held = HeldSeeds({KILLED, NEIGHBOUR} if parallel > 1 else {KILLED})
    server = localhost_server(held)
    simulator = {
        "id": "stub-simulator",
        "provider": "openai",
        "model": "stub-sim",
        "family": "test-sim",
        "base_url": server.base_url,
        "timeout_s": 300,
        "max_retries": 0,
        "max_concurrency": 4,
    }
    default = {t["id"]: t for t in yaml.safe_load(default_slate_path().read_text())["targets"]}
    slate = write_slate(
        tmp_path, simulator=simulator, targets=[default[TARGET]], dialogues_per_pool=2, t_max=3, pool_size=8
    )
    data = tmp_path / "data"
    env = {
        **os.environ,
        "EYT_DATA_DIR": str(data),
        "EYT_SLATE": str(slate),
        "HF_HUB_OFFLINE": "1",
        "EYT_ENDPOINT_SLOTS": str(tmp_path / "slots"),
    }
    env.pop("DAGSTER_HOME", None)
    log = tmp_path / "run.log"
    args = ["run", "--no-speech", "--no-reports", "--parallel", str(parallel)]
    process = eyt(args, env, log)
    try:
        deadline = time.monotonic() + 180
        for pool, arrived in held.arrived.items():  # each held pool's run is waiting for its ChatSEED
            while not arrived.wait(0.5):
                assert process.poll() is None, f"eyt run ended early:\n{log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"no ChatSEED request of {pool} in time"
        with DagsterInstance.from_config(str(data / "dagster_home")) as instance:
            run = running_run(instance, "eyt_pools", KILLED)
            assert run is not None and step_started(instance, run.run_id, "dialogue__chat_seeds")
            pid = int(run.tags[PID_TAG])
            assert pid != process.pid  # a worker, not the eyt process
            os.kill(pid, kill)
            gone_by = time.monotonic() + 30
            while process_alive(pid) and time.monotonic() < gone_by:
                time.sleep(0.05)
            held.release.set()  # the neighbour's held call is answered after its neighbour died
            code, out = finish(process, log)

            assert code == 1, out
            neighbour_cell = f"eyt_dialogues [{NEIGHBOUR}|{TARGET}]"
            assert re.search(rf"ok +eyt_pools \[{NEIGHBOUR}\]", out), out
            assert re.search(rf"ok +eyt_dialogues \[{NEIGHBOUR}\|{TARGET}\]", out), out
            failed_line = f"worker process died: {cause}"
            assert f"FAILED eyt_pools [{KILLED}]" in out and failed_line in out, out
            assert f"while executing eyt_pools [{KILLED}]" in out, out
            assert re.search(rf"skip +eyt_dialogues \[{KILLED}\|{TARGET}\] +\(an upstream run failed\)", out)
            assert "FAILED in " in out and "2 run(s) succeeded, 1 failed, 1 skipped" in out, out
            assert re.search(rf"failed: +eyt_pools \[{KILLED}\]\n", out), out
            assert re.search(rf"skipped: +eyt_dialogues \[{KILLED}\|{TARGET}\]\n", out), out
            assert re.search(rf"succeeded: +eyt_pools \[{NEIGHBOUR}\], {re.escape(neighbour_cell)}\n", out), out
            assert "Traceback" not in out and "BrokenProcessPool" not in out, out

            runs = {(r.job_name, r.tags.get("dagster/partition")): r for r in instance.get_runs()}
            assert len(runs) == 3  # the skipped cell never became a run
            assert not [r for r in runs.values() if not r.is_finished]  # nothing left STARTED
            killed = runs[("eyt_pools", KILLED)]
            assert killed.run_id == run.run_id and killed.status == DagsterRunStatus.FAILURE
            assert all(r.is_success for key, r in runs.items() if key != ("eyt_pools", KILLED))
            [failure] = [
                e
                for e in instance.all_logs(killed.run_id)
                if e.dagster_event and e.dagster_event.event_type == DagsterEventType.RUN_FAILURE
            ]
            assert f"{failed_line}" in failure.message and f"pid {pid}" in failure.message
            assert f"while executing eyt_pools [{KILLED}]" in failure.message
            if parallel > 1:  # the two pools' runs really were side by side in two workers
                assert runs[("eyt_pools", NEIGHBOUR)].tags[PID_TAG] != str(pid)

        # a rerun does exactly the failed run and the cell it skipped (and the reports, never built here); at
        # --parallel 1 its plan is checked (the same planner), at --parallel 2 it is also executed
        log = tmp_path / "refresh.log"
        refresh = ["refresh", "--no-speech", "--parallel", str(parallel), *(["--dry-run"] if parallel == 1 else [])]
        code, out = finish(eyt(refresh, env, log), log)
        assert code == 0, out
        planned = re.findall(r"^ +\d+\. (eyt_pools|eyt_dialogues) \[([^\]]+)\]", out, re.MULTILINE)
        assert sorted(planned) == [("eyt_dialogues", f"{KILLED}|{TARGET}"), ("eyt_pools", KILLED)], out
        if parallel > 1:
            launched = re.findall(r"^  ok +(eyt_pools|eyt_dialogues) \[([^\]]+)\]", out, re.MULTILINE)
            assert sorted(launched) == sorted(planned) and "done in " in out, out
    finally:
        held.release.set()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
