"""Runs whose process is gone. A run killed with `kill -9` (or on a machine that went down) never reports its end,
so the instance and the UI show it STARTED forever; rerunning resumes the work, but the record lies.

Every run records where it executes: `eyt` tags the runs it creates, and the `slate` resource tags every run that
uses it (from the UI, cron or the daemon) when it starts, with the host name, the pid and, on Linux, the process
start time (so a pid reused by a later process is not taken for the run). A STARTED or STARTING run whose tags
name this host and a process that no longer exists is reported failed through the instance, with the pid in the
message. A run on another host, a run whose process is alive and a run with no such tags are left alone.

`mark_dead_runs` is what `eyt run` and `eyt refresh` call first (cron needs no daemon); `EytRunLauncher` gives
Dagster's own run monitoring (the daemon, `run_monitoring` in dagster.yaml) the same check. `mark_process_runs` is
what `eyt`'s launcher calls the moment one of its worker processes dies during a run (eyt_dagster/ops/launch.py):
it fails that worker's unfinished run with the cause (the signal) named. See docs/operations.md.
"""

from __future__ import annotations

import socket

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, DefaultRunLauncher, RunsFilter

# Worker health types for a run launcher's check (Dagster exports the launcher classes, not these two).
from dagster._core.launcher.base import CheckRunHealthResult, WorkerStatus

from resources.runs.processes import HOST_TAG, PID_TAG, START_TAG, process_alive

JUDGED_STATUSES = (DagsterRunStatus.STARTED, DagsterRunStatus.STARTING)
# What a run of a process known to be dead can be in: every status before the run's end.
UNFINISHED_STATUSES = (
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
)
RESUME = "Rerun it to resume (finished partitions and model calls are kept)."


def why_dead(tags: dict[str, str], host: str | None = None) -> str | None:
    """Why a run's process is known to be gone, or None when it is alive, on another host, or untagged."""
    host = host or socket.gethostname()
    if tags.get(HOST_TAG) != host or not tags.get(PID_TAG, "").isdigit():
        return None
    pid = int(tags[PID_TAG])
    if process_alive(pid, tags.get(START_TAG)):
        return None
    return f"its process (pid {pid} on {host}) no longer exists: it was killed or the machine went down. {RESUME}"


def _report_failed(instance: DagsterInstance, run: DagsterRun, why: str) -> None:
    instance.report_run_failed(run, message=f"Run {run.run_id} ({run.job_name}) marked failed by eyt: {why}")


def mark_dead_runs(instance: DagsterInstance) -> list[str]:
    """Report every STARTED / STARTING run whose process on this host is gone as failed; return one line per run."""
    marked = []
    for record in instance.get_run_records(RunsFilter(statuses=list(JUDGED_STATUSES))):
        run = record.dagster_run
        why = why_dead(dict(run.tags))
        if why:
            _report_failed(instance, run, why)
            marked.append(f"run {run.run_id[:8]} ({run.job_name}, {run.status.value}): {why}")
    return marked


def mark_process_runs(instance: DagsterInstance, pid: int, start: str | None, cause: str) -> list[DagsterRun]:
    """Report failed every unfinished run that process `pid` of this host (started at `start`, when known) was
    executing, which the caller knows to be dead, with `cause` in the message (e.g. "worker process died: SIGSEGV
    ... while executing speech_eval [x]"); return those runs."""
    host = socket.gethostname()
    marked = []
    found = instance.get_run_records(
        RunsFilter(statuses=list(UNFINISHED_STATUSES), tags={HOST_TAG: host, PID_TAG: str(pid)})
    )
    for record in found:
        run = record.dagster_run
        if start is not None and run.tags.get(START_TAG, start) != start:
            continue  # an older process with the same pid
        _report_failed(instance, run, f"{cause} (pid {pid} on {host}). {RESUME}")
        marked.append(run)
    return marked


class EytRunLauncher(DefaultRunLauncher):
    """Dagster's default run launcher plus a worker health check, so the daemon's run monitoring marks a run
    whose process is gone as failed (the default launcher has no such check). dagster.yaml selects it."""

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        why = why_dead(dict(run.tags))
        return CheckRunHealthResult(WorkerStatus.FAILED, why) if why else CheckRunHealthResult(WorkerStatus.RUNNING)
