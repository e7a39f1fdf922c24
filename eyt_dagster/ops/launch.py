"""Running the location's jobs against the real Dagster instance (what `eyt run`, `eyt refresh` and
`eyt remove-target` do; no daemon needed), each run in a worker process (`Launcher`), also one at a time. Every
run is recorded in the instance, so the UI shows it.

Why worker processes and not threads: Dagster captures a step's output by redirecting the process's stdout and
stderr file descriptors into the step's log file, so two runs in threads of one process would write into each
other's logs. Why also for one run at a time: a run that crashes its process (a segmentation fault in compiled
code, the out-of-memory killer, `kill -9`) then takes down only its worker, never the `eyt` command, which marks
that run failed with the cause named, skips its dependents and goes on with the rest. Each worker is a fresh
(spawned) process that imports the code location once and then executes one run at a time
(eyt_dagster/ops/worker_pool.py); see docs/operations.md."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, cast

from eyt_dagster.core.env_settings import TORCH_THREADS, data_dir
from eyt_dagster.ops.instance import PROJECT_ROOT
from eyt_dagster.ops.progress_display import RunWatch, display, live_output
from eyt_dagster.ops.run_steps import InstanceSteps
from eyt_dagster.ops.worker_pool import WorkerDied, WorkerPool, WorkerStartFailed
from resources.runs.progress_files import LAUNCH_TAG

if TYPE_CHECKING:  # dagster is imported where it is used: `eyt`'s commands that run nothing start without it
    from dagster import AssetCheckEvaluation, AssetKey, DagsterEvent, DagsterInstance, JobDefinition, MetadataValue
    from dagster._core.instance.ref import InstanceRef

    from eyt_dagster.ops.run_plan import Run

# Partition runs at once: two cores by default; a worker process costs an import of the code location (~5 s) and
# its memory, and the runs' model calls are bounded per endpoint anyway (docs/operations.md).
DEFAULT_PARALLEL = min(2, os.cpu_count() or 1)

# The terminal shows the lines eyt prints per run, never Dagster's console log (a failed step's traceback is an ERROR
# event there): every event is still stored in the instance for the UI, and a run's warnings and errors, tracebacks
# included, go to its log file (run_log below), which the run's line names.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
RUN_LOGS = "logs"  # under the data directory: one file per run that warned or failed, <run id>.log
# Under the live table the workers write their own output (a library's warning, a native crash's trace) here, not to
# the terminal, whose last lines the table redraws.
WORKER_OUTPUT = "workers.log"
# Other libraries' progress bars, off in every worker (each library's documented switch): sentence-transformers and
# transformers draw "Loading weights" with tqdm, huggingface_hub its downloads; on a terminal they wrote into the live
# table, in a pipe they filled it with carriage returns. A value set before `eyt` starts is kept.
QUIET_LIBRARIES = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"}


def job_by_name(name: str) -> JobDefinition:
    from eyt_dagster.definitions import defs

    return defs.resolve_job_def(name)


def _execute(
    instance: DagsterInstance,
    job_name: str,
    tags: dict[str, str],
    label: str,
    asset_selection: list[AssetKey] | None = None,
) -> tuple[bool, str]:
    from dagster import build_reconstructable_job, execute_job

    from resources.runs.processes import process_tags

    started = time.monotonic()
    job = build_reconstructable_job(
        "eyt_dagster.ops.launch", "job_by_name", (job_name,), reconstructor_working_directory=str(PROJECT_ROOT)
    )
    with execute_job(
        job,
        instance=instance,
        tags={**tags, **process_tags()},
        raise_on_error=False,
        run_config=QUIET,
        asset_selection=asset_selection,
    ) as result:
        failed_checks = failed_error_checks(result.get_asset_check_evaluations())
        warnings = failed_warn_checks(result.get_asset_check_evaluations())
        ok = result.success and not failed_checks
        errors = error_rows(result.all_events)
        counted = f"  ({sum(n for _, n, _ in errors)} error rows)" if errors else ""
        lines = [
            f"  {'ok    ' if ok else 'FAILED'} {label:<48} {time.monotonic() - started:6.1f} s  run {result.run_id[:8]}"
            + counted
        ]
        if not result.success:
            lines += [
                f"         step {event.step_key}: {failure_reason(event)}"
                for event in result.all_events
                if event.is_failure and event.step_key
            ]
        lines += [f"         check {line}" for line in failed_checks]
        warned = {line.split(" ", 1)[0] for line in warnings}
        lines += [
            f"         errors {asset}: {n} error row(s)" + (f": {failures}" if failures else "")
            for asset, n, failures in errors
            if asset not in warned  # its no_error_rows warning below says it, with the first error
        ]
        lines += [f"         warning {line}" for line in warnings]
        lines += [f"         notice {asset}: {text}" for asset, text in notices(result.all_events)]
        if len(lines) > 1:
            log = run_log(instance, result.run_id)
            if log is not None:
                lines.append(f"         log {log}")
    return ok, "\n".join(lines)


def _materialized(events: Sequence[DagsterEvent]) -> list[tuple[str, dict[str, MetadataValue]]]:
    """(asset partition, metadata) of each materialisation among a run's events."""
    found = []
    for event in events:
        if event.is_step_materialization:
            materialization = event.step_materialization_data.materialization
            found.append((materialization.asset_key.to_user_string(), dict(materialization.metadata or {})))
    return found


def error_rows(events: Sequence[DagsterEvent]) -> list[tuple[str, int, str]]:
    """(asset partition, error rows, failures line) of each materialisation of the run whose table holds error rows
    (its `error_rows` / `failures` metadata, assets/_output.py)."""
    return [
        (asset, int(cast(int, meta["error_rows"].value)), str(meta["failures"].value) if "failures" in meta else "")
        for asset, meta in _materialized(events)
        if "error_rows" in meta and meta["error_rows"].value
    ]


# Materialisation metadata an asset sets to have a line of the run's summary (a partial import, say).
NOTICE = "notice"


def notices(events: Sequence[DagsterEvent]) -> list[tuple[str, str]]:
    """(asset partition, text) of each materialisation of the run whose metadata holds a NOTICE."""
    return [
        (asset, str(meta[NOTICE].value))
        for asset, meta in _materialized(events)
        if NOTICE in meta and meta[NOTICE].value
    ]


def run_log(instance: DagsterInstance, run_id: str) -> Path | None:
    """Write the run's warnings and errors, with the tracebacks of failed steps, to <data dir>/logs/<run id>.log; its
    path, or None when it cannot be written (the run's line then goes without it)."""
    lines = []
    for entry in instance.all_logs(run_id):
        if cast(int, entry.level) < 30:  # logging.WARNING (Dagster types a level as str | int; stored ones are ints)
            continue
        when = time.strftime("%H:%M:%S", time.localtime(entry.timestamp))
        lines.append(f"{when} {entry.step_key or '-'}: {entry.user_message or entry.message}")
        data = getattr(entry.dagster_event, "event_specific_data", None) if entry.dagster_event else None
        error = getattr(data, "error", None)
        if error is not None:
            lines.append(error.to_string())
    if not lines:
        return None
    path = data_dir() / RUN_LOGS / f"{run_id}.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError:
        return None
    return path


# Errors whose message says all a user needs (the model, role, endpoint and the server's reason, or the fix): the run's
# summary shows the message without the exception's class.
SELF_EXPLAINING_ERRORS = frozenset({"IncompatibleEndpointError", "MissingApiKeyError", "Failure"})


def failure_reason(event: DagsterEvent) -> str:
    """Why a step failed, for the run's summary line: the first line of the exception that failed it (the innermost
    cause of Dagster's wrapper), or the event's own message when it carries none."""
    error = getattr(getattr(event, "step_failure_data", None), "error", None)
    while error is not None and getattr(error, "cause", None) is not None:
        error = error.cause
    lines = (getattr(error, "message", "") or "").strip().splitlines()
    if getattr(error, "cls_name", None) in ("KeyboardInterrupt", "DagsterExecutionInterruptedError"):
        return "interrupted (Ctrl-C or a signal); finished work is kept: rerun, or `eyt refresh`, to finish it"
    if not lines:
        return event.message or "failed"
    first = lines[0]
    if getattr(error, "cls_name", None) in SELF_EXPLAINING_ERRORS and ": " in first:
        return first.split(": ", 1)[1]
    return first


def failed_error_checks(evaluations: Sequence[AssetCheckEvaluation]) -> list[str]:
    """'asset check_name: description' of every ERROR-severity asset check that failed (the run's label names the
    partition). Such a run counts as failed for `eyt run` and `eyt refresh` (their exit status), although Dagster
    records the run itself as a success (a check blocks nothing; the UI shows it failed next to its asset). WARN
    checks do not count."""
    from dagster import AssetCheckSeverity

    return [
        f"{e.asset_key.to_user_string()} {e.check_name}: {e.description or 'failed'}"
        for e in evaluations
        if not e.passed and e.severity == AssetCheckSeverity.ERROR
    ]


def failed_warn_checks(evaluations: Sequence[AssetCheckEvaluation]) -> list[str]:
    """'asset check_name: description' of every WARN-severity asset check that failed: printed under the run's line,
    without failing it (error rows a rerun retries, replies cut at max_tokens)."""
    from dagster import AssetCheckSeverity

    return [
        f"{e.asset_key.to_user_string()} {e.check_name}: {e.description or 'failed'}"
        for e in evaluations
        if not e.passed and e.severity == AssetCheckSeverity.WARN
    ]


_WORKER_INSTANCE: DagsterInstance | None = None
_WORKER_INSTANCE_REF: InstanceRef | None = None


def worker_torch_threads(parallel: int, cores: int | None) -> int:
    """Torch threads for each of `parallel` workers sharing `cores`: the cores divided among them, at least one."""
    return max(1, (cores or 1) // max(1, parallel))


def _worker_start(torch_threads: int, instance_ref: InstanceRef | None = None, output: str | None = None) -> None:
    """In a new worker process: send its stdout and stderr to the file `output` when one is given (the live table
    owns the terminal), turn other libraries' progress bars off (QUIET_LIBRARIES), cap torch's threads (unless
    EYT_TORCH_THREADS is set already, see resources/text/embeddings.py), then import the code location once, so each
    run only pays for itself; with EYT_PROFILE_DIR set, profile the rest of the worker's life
    (eyt_dagster/ops/profiling.py). Runs go to the instance of `instance_ref` (the launcher's), else to
    DAGSTER_HOME's."""
    import atexit

    global _WORKER_INSTANCE_REF
    if output is not None:
        _write_output_to(Path(output))
    atexit.register(_exit_without_teardown)  # registered first, so it runs after the handlers added later
    _WORKER_INSTANCE_REF = instance_ref
    for name, value in QUIET_LIBRARIES.items():
        os.environ.setdefault(name, value)
    os.environ.setdefault(TORCH_THREADS.name, str(torch_threads))
    import eyt_dagster.definitions  # noqa: F401
    from eyt_dagster.ops.profiling import start_if_asked

    start_if_asked("worker")  # EYT_PROFILE_DIR: the runs under cProfile, the start-up above as one figure


def _write_output_to(path: Path) -> None:
    """Point this process's stdout and stderr (the file descriptors, so native code and child processes follow) at
    the end of `path`."""
    import sys

    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _exit_without_teardown() -> None:
    """End a worker process once the other exit handlers have run, skipping the interpreter's teardown of its
    modules (1-2 s with torch, ONNX Runtime and the code location loaded, which `eyt run` waited for at the end).
    Each run's results are in the instance and the warehouse by then; nothing is left to write."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _worker_execute(job_name: str, tags: dict[str, str], label: str, assets: tuple[str, ...]) -> tuple[bool, str]:
    """One run in a worker process, against the launcher's instance (opened once per worker)."""
    from dagster import AssetKey, DagsterInstance

    global _WORKER_INSTANCE
    if _WORKER_INSTANCE is None:
        ref = _WORKER_INSTANCE_REF
        _WORKER_INSTANCE = DagsterInstance.from_ref(ref) if ref is not None else DagsterInstance.get()
    selection = [AssetKey.from_user_string(a) for a in assets] or None
    try:
        return _execute(_WORKER_INSTANCE, job_name, tags, label, selection)
    except Exception as exc:
        return False, f"  FAILED {label:<48} could not start: {type(exc).__name__}: {exc}"


def _instance_ref(instance: DagsterInstance) -> InstanceRef:
    """The reference a worker process opens the instance from; an instance without one (ephemeral) cannot be
    shared with workers."""
    from dagster._core.errors import DagsterInvariantViolationError

    try:
        return instance.get_ref()
    except DagsterInvariantViolationError as exc:
        raise ValueError(
            "eyt runs every run in a worker process, which opens the Dagster instance from its directory: use an "
            "instance on disk (DAGSTER_HOME, DagsterInstance.from_config), not an ephemeral one"
        ) from exc


class Launcher:
    """Starts runs (eyt_dagster.ops.run_plan.Run) and returns a Future of their success, printing one line per run
    when it ends. Every run executes in one of `parallel` worker processes, each running one run at a time. A
    worker that dies during a run (a native crash, the out-of-memory killer, `kill -9`) fails that run only: it
    is marked failed in the instance with the cause named, and the next run gets a new worker; the other workers'
    runs go on untouched."""

    def __init__(
        self, instance: DagsterInstance, parallel: int, watch: RunWatch | None = None, worker_output: Path | None = None
    ) -> None:
        self.instance = instance
        self.parallel = parallel
        self.watch = watch  # told when each run starts and ends; its tag finds the run's progress heartbeats
        self.worker_output = worker_output  # the workers' stdout and stderr go here (None: to this process's)
        self._pool: WorkerPool | None = None

    def __enter__(self) -> Launcher:
        ensure_pools(self.instance)
        threads = worker_torch_threads(self.parallel, os.cpu_count())
        output = None if self.worker_output is None else str(self.worker_output)
        self._pool = WorkerPool(self.parallel, _worker_start, (threads, _instance_ref(self.instance), output))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.__exit__(*exc)

    def interrupt(self, pending: list[Future[bool]], timeout_s: float = 60.0) -> None:
        """Ctrl-C: hand the interrupt to the workers with a run, so Dagster ends each run as interrupted (failed, its
        finished work kept), and wait for their lines."""
        from concurrent.futures import wait

        if self._pool is not None and self._pool.interrupt():
            wait(pending, timeout=timeout_s)

    def start(self, index: int, run: Run) -> Future[bool]:
        if self._pool is None:
            raise RuntimeError("Launcher.start outside `with Launcher(...)`")
        outer: Future[bool] = Future()
        started = time.monotonic()

        def finished(inner: Future[tuple[bool, str]]) -> None:
            try:
                ok, text = inner.result()
            except WorkerDied as died:
                ok, text = False, self._worker_died(run, died, time.monotonic() - started)
            except WorkerStartFailed as exc:  # the code location did not import: its last line, the traceback apart
                ok, text = False, f"  FAILED {run.label:<48} {start_failure(exc)}"
            except KeyboardInterrupt:  # the worker's Ctrl-C, sent back
                ok, text = False, f"  FAILED {run.label:<48} interrupted (Ctrl-C)"
            except BaseException as exc:
                ok, text = False, f"  FAILED {run.label:<48} worker process ended: {type(exc).__name__}: {exc}"
            if self.watch is not None:
                self.watch.ended(index)
            print(text, flush=True)
            outer.set_result(ok)

        tags = run.tags if self.watch is None else {**run.tags, LAUNCH_TAG: self.watch.tag(index)}
        if self.watch is not None:
            self.watch.started(index, run.label)
        inner: Future[tuple[bool, str]]
        try:
            inner = self._pool.submit(_worker_execute, run.job, tags, run.label, tuple(run.assets))
        except RuntimeError as exc:  # no worker could be started for it
            inner = Future()
            inner.set_exception(exc)
        inner.add_done_callback(finished)
        return outer

    def _worker_died(self, run: Run, died: WorkerDied, seconds: float) -> str:
        """Mark the run of a worker that died failed in the instance, naming the cause; the line to print."""
        from eyt_dagster.ops.dead_runs import mark_process_runs

        cause = f"worker process died: {died.cause} while executing {run.label}"
        try:
            marked = mark_process_runs(self.instance, died.pid, died.process_start, cause)
        except Exception as exc:  # the instance could not be written: say so, the run still counts as failed
            marked, cause = [], f"{cause} (not marked failed in the instance: {type(exc).__name__}: {exc})"
        where = f"run {marked[0].run_id[:8]}" if marked else "no unfinished run of it in the instance"
        return f"  FAILED {run.label:<48} {seconds:6.1f} s  {where}\n         {cause}; a new worker takes the next run"


def start_failure(exc: WorkerStartFailed) -> str:
    """A worker that could not start, in one line: the exception that stopped it (the traceback's last line), with the
    whole traceback in <data dir>/logs/worker-start.log, which the line names."""
    text = str(exc)
    if "KeyboardInterrupt" in text:
        return "interrupted (Ctrl-C) while its worker process started"
    last = next((line for line in reversed(text.strip().splitlines()) if line.strip()), "unknown error")
    path = data_dir() / RUN_LOGS / "worker-start.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    except OSError:
        return f"the worker process could not start: {last}"
    return f"the worker process could not start: {last} (traceback: {path})"


def execute_runs(instance: DagsterInstance, runs: Sequence[Run], parallel: int) -> bool:
    """Execute the runs, `parallel` at once in worker processes, in dependency order, and print the summary of what
    succeeded, failed and was skipped; True when every run succeeded (a skipped run counts as failed)."""
    from eyt_dagster.ops.run_plan import OK, run_all, summary

    started = time.monotonic()
    watch = RunWatch(data_dir(), steps=InstanceSteps(instance))  # where the runs write, and their steps
    started_runs: list[Future[bool]] = []
    output = data_dir() / RUN_LOGS / WORKER_OUTPUT if live_output() else None
    output_before = _size(output)

    def start(index: int, run: Run) -> Future[bool]:
        started_runs.append(launcher.start(index, run))
        return started_runs[-1]

    with Launcher(instance, parallel, watch, output) as launcher, display(watch):
        try:
            outcome = run_all(
                runs,
                start,
                parallel,
                on_skip=lambda i, run: print(f"  skip   {run.label:<48} (an upstream run failed)", flush=True),
            )
        except KeyboardInterrupt:  # no run starts after a Ctrl-C; those under way end as interrupted
            launcher.interrupt([f for f in started_runs if not f.done()])
            raise
    print(summary(runs, outcome, time.monotonic() - started), flush=True)
    if output is not None and _size(output) > output_before:
        print(f"the worker processes wrote to {output} (warnings and messages of the libraries they ran)", flush=True)
    return all(state == OK for state in outcome.values())


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def ensure_pools(instance: DagsterInstance) -> None:
    """Give the location's pools their instance default limit before any run starts. Dagster creates a pool's limit
    when a step first claims a slot; on Postgres two runs doing that at the same moment both insert it and one run
    fails on the unique key (seen with bench/postgres_instance.py)."""
    from assets.eyt_bench.partitions import JUDGE_POOL, SIMULATOR_POOL

    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits or instance.global_op_concurrency_default_limit is None:
        return  # no default (one machine, docs/endpoint-budgets.md): nothing to create, a limit set by hand stays
    for pool in (JUDGE_POOL, SIMULATOR_POOL):
        storage.initialize_concurrency_limit_to_default(pool)
