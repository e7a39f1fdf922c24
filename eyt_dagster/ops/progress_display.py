"""The running runs of `eyt run` and `eyt refresh` in the terminal: on a terminal a live table (rich), one row per
running run; otherwise (cron, CI, a pipe) a plain line for a run each time its state changes (it starts, its step
changes, its step's total becomes known, it passes another tenth of its items, it starts a step that counts nothing),
and again when it has stayed the same for N seconds; never a control character. The figures come from the heartbeats
the runs' steps write (resources/runs/progress_files.py), found by the launch tag the launcher gives each run
(`<token>:<index>`); reading them never waits on a run. A run without a heartbeat (its step counts nothing, or it
is between two steps) shows the step it is running and how many of its steps are done, from the Dagster instance
(eyt_dagster/ops/run_steps.py), or `running` while the instance says nothing of it. The lines a run prints when it
ends stay as they were (eyt_dagster/ops/launch.py). See docs/operations.md, "Watching a run"."""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TextIO

from eyt_dagster.core import env_settings
from eyt_dagster.core.progress import done_text, duration_text, figures_text
from eyt_dagster.ops.run_steps import RunSteps
from resources.runs.progress_files import RUNNING, Heartbeat, read_heartbeats

if TYPE_CHECKING:  # rich is imported where the live table is drawn
    from rich.table import Table
    from rich.text import Text

PROGRESS_EVERY_ENV = env_settings.PROGRESS_EVERY.name
DEFAULT_EVERY_S = env_settings.DEFAULT_PROGRESS_EVERY_S  # a plain line again for a run unchanged this long (0: none)
LIVE_REFRESH_S = 1.0  # the live table reads the heartbeats this often
PLAIN_POLL_S = 1.0  # the plain lines look for changes of state this often
TENTHS = 10  # a plain line each time a step passes another 1/TENTHS of its items


def progress_every_s() -> float:
    """Seconds a run may stay unchanged before its plain line is printed again, from EYT_PROGRESS_EVERY (default
    300; 0 turns the plain lines off)."""
    return env_settings.PROGRESS_EVERY.get()


def live_output(out: TextIO | None = None) -> bool:
    """Whether the display is the live table: the output is a terminal that can move its cursor."""
    out = sys.stdout if out is None else out
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM") != "dumb"


def printable(text: str) -> str:
    """Text from a heartbeat (a partition key, a step or endpoint name) without control characters."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


class RunRow(NamedTuple):
    """One running run as the display shows it: its label, seconds running, its latest running heartbeat, and
    where it is among its steps when no heartbeat says more (None when unknown)."""

    label: str
    seconds: float
    beat: Heartbeat | None
    steps: RunSteps | None


class RunWatch:
    """Which runs of this command are running (the launcher says when each starts and ends), what their
    heartbeats say and, for a run without one, where it is among its steps (`steps(launch tag)`, e.g.
    eyt_dagster.ops.run_steps.InstanceSteps; None: not known)."""

    def __init__(
        self,
        data_dir: str | Path,
        clock: Callable[[], float] = time.monotonic,
        steps: Callable[[str], RunSteps | None] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.token = uuid.uuid4().hex[:12]
        self.clock = clock
        self.steps = steps
        self._running: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def tag(self, index: int) -> str:
        return f"{self.token}:{index}"

    def started(self, index: int, label: str) -> None:
        with self._lock:
            self._running[index] = (label, self.clock())

    def ended(self, index: int) -> None:
        with self._lock:
            self._running.pop(index, None)

    def rows(self) -> list[RunRow]:
        """One row per running run, in start order."""
        with self._lock:
            running = sorted(self._running.items(), key=lambda item: item[1][1])
        beats: dict[int, Heartbeat] = {}
        for beat in read_heartbeats(self.data_dir):
            token, _, index = (beat.launch or "").partition(":")
            if token == self.token and beat.status == RUNNING and index.isdigit():
                latest = beats.get(int(index))
                if latest is None or beat.started_at >= latest.started_at:
                    beats[int(index)] = beat
        now = self.clock()
        rows = []
        for i, (label, since) in running:
            found = beats.get(i)
            rows.append(RunRow(label, now - since, found, self._steps(i) if found is None else None))
        return rows

    def _steps(self, index: int) -> RunSteps | None:
        if self.steps is None:
            return None
        try:
            return self.steps(self.tag(index))
        except Exception:  # the instance could not be read this time: the row says `running`
            return None


def short_step(step: str) -> str:
    """A step's name as the display shows it: its asset's name without the key prefix, printable."""
    return printable(step.split("__")[-1])


def step_name(beat: Heartbeat) -> str:
    return short_step(beat.step)


def steps_text(steps: RunSteps) -> str:
    """Where a run is among its steps when no heartbeat says more: 'intent_similarity (3 of 7 steps done)' (the
    step running), 'starting (0 of 7 steps done)', 'between steps (3 of 7 steps done)' (one ended, the next not
    started yet), 'finishing (7 of 7 steps done)'."""
    count = f"({steps.done} of {steps.total} steps done)"
    if steps.running:
        return f"{', '.join(short_step(key) for key in steps.running)} {count}"
    if steps.done == 0:
        return f"starting {count}"
    return f"{'finishing' if steps.done >= steps.total else 'between steps'} {count}"


def run_text(beat: Heartbeat | None, steps: RunSteps | None = None) -> str:
    """What a run is doing, as its row and its plain line say it: the counted step's figures; else where it is
    among its steps; else `running` (nothing known yet)."""
    if beat is not None:
        return f"{step_name(beat)}: {done_text(beat.figures)}; {printable(figures_text(beat.figures))}"
    return steps_text(steps) if steps is not None else "running"


# What a plain line is printed again for: (kind, step, two numbers). `count`: a counted step, its total and the tenth
# of its items done; `step`: the steps running without a count, the steps done and their total; `idle`: no step
# running; "": nothing known.
State = tuple[str, str, int, int]


def run_state(beat: Heartbeat | None, steps: RunSteps | None = None) -> State:
    """A run's state for the plain lines: for a counted step, the step, its total and the tenth of its items done
    (every item of a small step; the last one always); else the steps running and how many are done."""
    if beat is not None:
        f = beat.figures
        tenth = f.done * TENTHS // f.total if f.total > 0 else 0
        return ("count", beat.step, f.total, f.done if f.total <= TENTHS or f.done >= f.total else tenth)
    if steps is None:
        return ("", "", 0, 0)
    return ("step" if steps.running else "idle", ",".join(steps.running), steps.done, steps.total)


def quiet_change(state: State, last: State) -> bool:
    """A change of state that gets no plain line of its own: nothing known, or no step running (between two steps,
    before the run's end line), or the counted step of the last line still running after its loop (writing its
    table): the next step's line or the end line follows."""
    kind, step, _, _ = state
    return kind in ("", "idle") or (kind == "step" and last[0] == "count" and last[1] == step)


def plain_line(label: str, seconds: float, beat: Heartbeat | None, steps: RunSteps | None = None) -> str:
    """'  ...    <label> <seconds> s  <step>: 12 of 40 dialogues, ETA ...; calls ...' (or where the run is among
    its steps), columns as the end lines."""
    head = f"  {'...':<6} {printable(label):<48} {seconds:6.1f} s"
    return f"{head}  {run_text(beat, steps)}"


class PlainLines:
    """The plain lines: the running runs are looked at every `poll_s` seconds, and a run gets a line when its state
    (run_state) differs from that of its last line, or when its last line is `every_s` seconds old. A run gets a
    line when it starts and when it starts a step that counts nothing, not each time it is between two steps
    (quiet_change)."""

    def __init__(
        self,
        watch: RunWatch,
        every_s: float,
        out: TextIO,
        poll_s: float = PLAIN_POLL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.watch, self.every_s, self.out, self.poll_s, self.clock = watch, every_s, out, poll_s, clock
        self._last: dict[str, tuple[State, float]] = {}  # run label -> (state, when printed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="eyt-progress-lines", daemon=True)

    def __enter__(self) -> PlainLines:
        if self.every_s > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def lines(self) -> list[str]:
        """The lines due now (one per run whose state changed or whose last line is `every_s` old)."""
        now = self.clock()
        rows = self.watch.rows()
        due = []
        for label, seconds, beat, steps in rows:
            state = run_state(beat, steps)
            last = self._last.get(label)
            if last is not None and last[0] != state and quiet_change(state, last[0]):
                self._last[label] = (state, last[1])  # its next step's line (or its end line) says more, soon
            elif last is None or last[0] != state or now - last[1] >= self.every_s:
                self._last[label] = (state, now)
                due.append(plain_line(label, seconds, beat, steps))
        running = {row.label for row in rows}
        for label in [label for label in self._last if label not in running]:
            del self._last[label]  # ended: a run started again later (a retry) gets its first line again
        return due

    def _loop(self) -> None:
        failed = ""
        while not self._stop.wait(self.poll_s):
            try:
                lines = self.lines()
            except Exception as exc:  # a display problem never stops the runs; said once, not at every look
                now_failed = f"  progress display: {type(exc).__name__}"
                lines, failed = ([now_failed] if now_failed != failed else []), now_failed
            for line in lines:
                print(line, file=self.out, flush=True)


class _LiveTable:
    """rich's Live display: a table of the running runs, redrawn every second below the lines runs print when
    they end (print goes above it, and so does anything this process writes to stderr), removed when the command
    ends. It redraws by moving the cursor up over its last frame, so nothing else may write to the terminal while it
    is on: the worker processes send their own output to a file (eyt_dagster/ops/launch.py) and keep other
    libraries' progress bars off."""

    def __init__(self, watch: RunWatch) -> None:
        from rich.console import Console
        from rich.live import Live

        self.watch = watch
        self.live = Live(
            get_renderable=self._table,
            console=Console(),
            refresh_per_second=1 / LIVE_REFRESH_S,
            redirect_stdout=True,
            redirect_stderr=True,
            transient=True,
        )

    def __enter__(self) -> _LiveTable:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def _table(self) -> Table | Text:
        from rich.table import Table
        from rich.text import Text

        table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", expand=True)
        table.add_column("running run", no_wrap=True, ratio=2)
        table.add_column("time", no_wrap=True, justify="right")
        table.add_column("step: done, ETA; calls, tokens, cost; retries, 429s, failures; in flight/budget", ratio=5)
        try:
            rows = self.watch.rows()
        except Exception as exc:  # never take the command down for the display
            return Text(f"progress display: {type(exc).__name__}")
        for label, seconds, beat, steps in rows:
            table.add_row(Text(printable(label)), Text(duration_text(seconds)), Text(run_text(beat, steps)))
        return table


def display(
    watch: RunWatch, *, tty: bool | None = None, every_s: float | None = None, out: TextIO | None = None
) -> _LiveTable | PlainLines:
    """The display for this command: the live table on a terminal, else plain lines on each change of state (and
    again after `every_s` seconds without one)."""
    out = sys.stdout if out is None else out
    live = live_output(out) if tty is None else tty and os.environ.get("TERM") != "dumb"
    if live:
        return _LiveTable(watch)
    return PlainLines(watch, progress_every_s() if every_s is None else every_s, out)
