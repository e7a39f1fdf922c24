"""The progress recorder of one step: fed `on_done(done, total)` by the step's loop, it adds the step's calls (from
the process's ledger counters, resources/models/call_counters.py) and its endpoints' load (resources/models/endpoint_gates.py),
keeps a heartbeat file of them up to date (resources/runs/progress_files.py) and hands one line to the run log every
`every_items` items and at least every `log_every_s` seconds. No benchmark and no Dagster here: the asset passes
its unit, its log function and its run's names (assets/_progress.py).

A background thread rewrites the heartbeat about once a second (and logs a line when a long item keeps the count
still), so the step's own thread only counts; a new total (the loop's `on_done(0, total)`) and the first item done
are written at once, so a display has the count from the step's first moment and the ETA from its first item even
while the step's thread holds the interpreter (a model loading, numba compiling). An asset enters the recorder
before it prepares its loop (reads tables, builds its roles, loads a model), with the total when it holds it: the
step shows as preparing until the loop's first report, and its rate (the ETA) and the time an item took are counted
from that report, so the preparation never slows them. When the step starts it reads how long an item of it took
in past runs (resources/runs/step_history.py), for an ETA before its first item is done; when it ends it adds its
own. Writing never fails the step (an unwritable data directory only loses the heartbeat and the history)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from eyt_dagster.core import env_settings
from eyt_dagster.core.progress import EndpointLoad, StepFigures, eta_text, figures_text
from resources.models.call_counters import CallTotals, call_totals
from resources.models.endpoint_gates import GateState, gate_states
from resources.runs.processes import process_start
from resources.runs.progress_files import endpoint_name, heartbeat_record, progress_dir, write_heartbeat
from resources.runs.step_history import expected_item_s, record_step

HEARTBEAT_EVERY_S = 1.0  # the background thread's rewrite of the heartbeat
MIN_WRITE_GAP_S = 0.25  # an item done rewrites it too, at most this often (the last item always)
LOG_EVERY_S = env_settings.DEFAULT_PROGRESS_LOG_S  # a run-log line at least this often (EYT_PROGRESS_LOG_S overrides)


def log_every_s() -> float:
    return env_settings.PROGRESS_LOG_S.get()


class StepProgress:
    """Use as a context manager around the step's loop and pass it as the loop's `on_done`."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        run_id: str,
        step: str,
        job: str,
        unit: str,
        message: Callable[[int, int], str],
        log: Callable[[str], None] | None = None,
        partition: str | None = None,
        launch: str | None = None,
        every_items: int = 10,
        log_every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        total: int | None = None,
    ) -> None:
        """`total`: the items the step will count, when the asset knows it before its loop starts (None: the loop's
        first `on_done` says; 0: nothing to count, so no heartbeat is written unless the loop reports items)."""
        self.data_dir = data_dir
        self.path = progress_dir(data_dir) / f"{run_id}.{step}.json"
        self.run_id, self.step, self.job, self.partition, self.launch = run_id, step, job, partition, launch
        self.unit, self.message, self.log = unit, message, log
        self.every_items = max(1, every_items)
        self.log_every_s = log_every_s() if log_every is None else log_every
        self.clock = clock
        self.done, self.total = 0, max(0, total or 0)
        self._nothing = total == 0  # a step with nothing to count shows as a step that counts nothing
        self.expected_item_s: float | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._calls0 = CallTotals()
        self._gates0: dict[tuple[str, str], GateState] = {}
        self._started = self._last_log = self._last_write = 0.0
        self._loop_started: float | None = None  # the loop's first report; None while the step prepares its loop
        self._started_at = 0.0
        self._process_start: str | None = None

    # -- lifetime ------------------------------------------------------------------------------------------

    def __enter__(self) -> StepProgress:
        self.expected_item_s = expected_item_s(self.data_dir, self.step, self.partition)
        self._calls0 = call_totals()
        self._gates0 = {(g.base_url, g.model): g for g in gate_states()}
        self._started = self._last_log = self.clock()
        self._started_at = time.time()
        self._process_start = process_start(os.getpid())
        self._write()
        self._thread = threading.Thread(target=self._tick, name="eyt-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        record_step(
            self.data_dir,
            step=self.step,
            job=self.job,
            partition=self.partition,
            unit=self.unit,
            done=self.done,
            total=self.total,
            elapsed_s=self._loop_elapsed(),
        )

    # -- what the step's loop calls ------------------------------------------------------------------------

    def __call__(self, done: int, total: int) -> None:
        # the loop's start, a new total, the first item (the ETA turns to the step's own rate) and the last are
        # written at once
        now = self.clock()
        at_once = self._loop_started is None or total != self.total or (done > 0 and self.done == 0) or done == total
        if self._loop_started is None:  # a loop that reports no `0 of N` started before its first item, after entry
            self._loop_started = now if done == 0 else self._started
        self.done, self.total = done, total
        if at_once or now - self._last_write >= MIN_WRITE_GAP_S:
            self._write()
        if done % self.every_items == 0 or done == total or now - self._last_log >= self.log_every_s:
            self._log(now)

    # -- figures -------------------------------------------------------------------------------------------

    def _loop_elapsed(self) -> float:
        """Seconds since the loop's first report; 0 while the step prepares its loop."""
        return 0.0 if self._loop_started is None else self.clock() - self._loop_started

    def figures(self) -> StepFigures:
        """The step's figures now: its items, its calls since it started, its endpoints."""
        calls = call_totals().since(self._calls0)
        loads, limited = [], 0
        for gate in gate_states():
            before = self._gates0.get((gate.base_url, gate.model))
            sent0, limited0 = (before.sent, before.rate_limited) if before is not None else (0, 0)
            if gate.sent > sent0 or gate.in_flight > 0:
                loads.append(EndpointLoad(endpoint_name(gate.model, gate.base_url), gate.in_flight, gate.budget))
            limited += gate.rate_limited - limited0
        return StepFigures(
            unit=self.unit,
            done=self.done,
            total=self.total,
            elapsed_s=self._loop_elapsed(),
            calls=calls.calls,
            cache_hits=calls.cache_hits,
            tokens=calls.tokens,
            cost_usd=calls.cost_usd,
            retries=calls.retries,
            rate_limited=limited,
            failures=calls.failures,
            endpoints=tuple(sorted(loads, key=lambda e: e.name)),
            expected_item_s=self.expected_item_s,
            preparing=self._loop_started is None,
        )

    def log_line(self) -> str:
        """The run log's line: the step's own message, the time left and the call figures."""
        figures = self.figures()
        return f"{self.message(self.done, self.total)}, ETA {eta_text(figures)}; {figures_text(figures)}"

    # -- writing -------------------------------------------------------------------------------------------

    def _log(self, now: float) -> None:
        self._last_log = now
        if self.log is not None:
            self.log(self.log_line())

    def _write(self) -> None:
        if self._nothing and self.total == 0:
            return
        with self._lock:
            self._last_write = self.clock()
            try:
                record = heartbeat_record(
                    run_id=self.run_id,
                    step=self.step,
                    job=self.job,
                    partition=self.partition,
                    launch=self.launch,
                    process_start=self._process_start,
                    started_at=self._started_at,
                    figures=self.figures(),
                )
                write_heartbeat(self.path, record)
            except OSError:
                pass  # progress is for watching; it never fails the step

    def _tick(self) -> None:
        while not self._stop.wait(HEARTBEAT_EVERY_S):
            self._write()
            now = self.clock()
            if self.total and self.done < self.total and now - self._last_log >= self.log_every_s:
                self._log(now)
