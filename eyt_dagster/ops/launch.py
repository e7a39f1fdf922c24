"""Running the location's jobs against the real Dagster instance (what `eyt run`, `eyt refresh` and
`eyt remove-target` do; no daemon needed), in this process or, to run several at once, in worker processes
(`Launcher`). Every run is recorded in the instance, so the UI shows it.

Why worker processes and not threads: Dagster captures a step's output by redirecting the process's stdout and
stderr file descriptors into the step's log file, so two runs in threads of one process would write into each
other's logs. Each worker is a fresh (spawned) process that imports the code location once and then executes one
run at a time; see docs/operations.md."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from eyt_dagster.ops.instance import PROJECT_ROOT

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

# Partition runs at once: two cores by default; a worker process costs an import of the code location (~5 s) and
# its memory, and the runs' model calls are bounded per endpoint anyway (docs/operations.md).
DEFAULT_PARALLEL = min(2, os.cpu_count() or 1)

# The terminal shows one line per run; every event is still stored in the instance for the UI.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def job_by_name(name: str):
    from eyt_dagster.definitions import defs

    return defs.resolve_job_def(name)


def execute(instance, job_name: str, tags: dict[str, str], label: str, asset_selection=None) -> bool:
    """Run one job (optionally only some of its assets, as AssetKeys) and print one line; True on success."""
    ok, text = _execute(instance, job_name, tags, label, asset_selection)
    print(text, flush=True)
    return ok


def _execute(instance, job_name: str, tags: dict[str, str], label: str, asset_selection=None) -> tuple[bool, str]:
    from dagster import build_reconstructable_job, execute_job

    from eyt_dagster.ops.dead_runs import process_tags

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
        ok = result.success and not failed_checks
        lines = [
            f"  {'ok    ' if ok else 'FAILED'} {label:<48} {time.monotonic() - started:6.1f} s  run {result.run_id[:8]}"
        ]
        if not result.success:
            lines += [
                f"         step {event.step_key}: {event.message}"
                for event in result.all_events
                if event.is_failure and event.step_key
            ]
        lines += [f"         check {line}" for line in failed_checks]
    return ok, "\n".join(lines)


def failed_error_checks(evaluations) -> list[str]:
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


_WORKER_INSTANCE = None


def worker_torch_threads(parallel: int, cores: int | None) -> int:
    """Torch threads for each of `parallel` workers sharing `cores`: the cores divided among them, at least one."""
    return max(1, (cores or 1) // max(1, parallel))


def _worker_start(torch_threads: int) -> None:
    """In a new worker process: cap torch's threads (unless EYT_TORCH_THREADS is set already, see
    resources/embeddings.py), then import the code location once, so each run only pays for itself."""
    import atexit

    atexit.register(_exit_without_teardown)  # registered first, so it runs after the handlers added later
    os.environ.setdefault("EYT_TORCH_THREADS", str(torch_threads))
    import eyt_dagster.definitions  # noqa: F401


def _exit_without_teardown() -> None:
    """End a worker process once the other exit handlers have run, skipping the interpreter's teardown of its
    modules (1-2 s with torch, ONNX Runtime and the code location loaded, which `eyt run` waited for at the end).
    Each run's results are in the instance and the warehouse by then; nothing is left to write."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _worker_execute(job_name: str, tags: dict[str, str], label: str, assets: tuple[str, ...]) -> tuple[bool, str]:
    """One run in a worker process, against the instance of DAGSTER_HOME (inherited from the parent)."""
    from dagster import AssetKey, DagsterInstance

    global _WORKER_INSTANCE
    if _WORKER_INSTANCE is None:
        _WORKER_INSTANCE = DagsterInstance.get()
    selection = [AssetKey.from_user_string(a) for a in assets] or None
    try:
        return _execute(_WORKER_INSTANCE, job_name, tags, label, selection)
    except Exception as exc:
        return False, f"  FAILED {label:<48} could not start: {type(exc).__name__}: {exc}"


class Launcher:
    """Starts runs (eyt_dagster.ops.run_plan.Run) and returns a Future of their success, printing one line per run
    when it ends. With `parallel` 1 a run executes in this process when started (the Future is done at once);
    with more, in one of `parallel` worker processes, each running one run at a time."""

    def __init__(self, instance, parallel: int) -> None:
        self.instance = instance
        self.parallel = parallel
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Launcher:
        ensure_pools(self.instance)
        if self.parallel > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(
                self.parallel,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_start,
                initargs=(worker_torch_threads(self.parallel, os.cpu_count()),),
            )
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def start(self, index: int, run):
        from concurrent.futures import Future

        from dagster import AssetKey

        outer: Future = Future()
        if self._pool is None:
            selection = [AssetKey.from_user_string(a) for a in run.assets] or None
            outer.set_result(execute(self.instance, run.job, run.tags, run.label, selection))
            return outer

        def finished(inner: Future) -> None:
            try:
                ok, text = inner.result()
            except Exception as exc:
                ok, text = False, f"  FAILED {run.label:<48} worker process ended: {type(exc).__name__}: {exc}"
            print(text, flush=True)
            outer.set_result(ok)

        self._pool.submit(_worker_execute, run.job, run.tags, run.label, tuple(run.assets)).add_done_callback(finished)
        return outer


def execute_runs(instance, runs, parallel: int) -> bool:
    """Execute the runs, `parallel` at once in worker processes (1: one after another in this process), in
    dependency order; True when every run succeeded (a skipped run counts as failed)."""
    from eyt_dagster.ops.run_plan import OK, run_all

    with Launcher(instance, parallel) as launcher:
        outcome = run_all(
            runs,
            launcher.start,
            parallel,
            on_skip=lambda i, run: print(f"  skip   {run.label:<48} (an upstream run failed)", flush=True),
        )
    return all(state == OK for state in outcome.values())


def ensure_pools(instance) -> None:
    """Give the location's pools their instance default limit before any run starts. Dagster creates a pool's limit
    when a step first claims a slot; on Postgres two runs doing that at the same moment both insert it and one run
    fails on the unique key (seen with bench/postgres_instance.py)."""
    from eyt_dagster.partitions import JUDGE_POOL, SIMULATOR_POOL

    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits or instance.global_op_concurrency_default_limit is None:
        return  # no default (one machine, docs/endpoint-budgets.md): nothing to create, a limit set by hand stays
    for pool in (JUDGE_POOL, SIMULATOR_POOL):
        storage.initialize_concurrency_limit_to_default(pool)
