"""The running runs of `eyt run` and `eyt refresh` in the terminal: on a terminal a live table (rich), one row per
running run; otherwise (cron, CI, a pipe) a plain line for a run each time its state changes (it starts, its step
changes, its step's total becomes known, it passes another tenth of its items), and again when it has stayed the same
for N seconds; never a control character. The figures come from the heartbeats the runs' steps write
(resources/runs/progress_files.py), found by the launch tag the launcher gives each run (`<token>:<index>`); reading
them never waits on a run, and a run without a heartbeat (a step that counts nothing, or one that has not started)
shows as running for so long. The lines a run prints when it ends stay as they were (eyt_dagster/ops/launch.py).
See docs/operations.md, "Watching a run"."""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from eyt_dagster.core import env_settings
from eyt_dagster.core.progress import done_text, duration_text, figures_text
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


class RunWatch:
    """Which runs of this command are running (the launcher says when each starts and ends), and what their
    heartbeats say."""

    def __init__(self, data_dir: str | Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.data_dir = Path(data_dir)
        self.token = uuid.uuid4().hex[:12]
        self.clock = clock
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

    def rows(self) -> list[tuple[str, float, Heartbeat | None]]:
        """(label, seconds running, its latest running heartbeat or None) per running run, in start order."""
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
        return [(label, now - since, beats.get(i)) for i, (label, since) in running]


def step_name(beat: Heartbeat) -> str:
    return printable(beat.step.split("__")[-1])


def run_state(beat: Heartbeat | None) -> tuple[str, int, int]:
    """What a plain line is printed again for: the step, its total and the tenth of its items done (every item of a
    small step; the last one always)."""
    if beat is None:
        return ("", 0, 0)
    f = beat.figures
    tenth = f.done * TENTHS // f.total if f.total > 0 else 0
    return (beat.step, f.total, f.done if f.total <= TENTHS or f.done >= f.total else tenth)


def plain_line(label: str, seconds: float, beat: Heartbeat | None) -> str:
    """'  ...    <label> <seconds> s  <step>: 12 of 40 dialogues, ETA ...; calls ...', columns as the end lines."""
    head = f"  {'...':<6} {printable(label):<48} {seconds:6.1f} s"
    if beat is None:
        return f"{head}  running"
    return f"{head}  {step_name(beat)}: {done_text(beat.figures)}; {figures_text(beat.figures)}"


class PlainLines:
    """The plain lines: the running runs are looked at every `poll_s` seconds, and a run gets a line when its state
    (run_state) differs from that of its last line, or when its last line is `every_s` seconds old. A run gets a
    `running` line when it starts, not each time it is between two counted steps."""

    def __init__(
        self,
        watch: RunWatch,
        every_s: float,
        out: TextIO,
        poll_s: float = PLAIN_POLL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.watch, self.every_s, self.out, self.poll_s, self.clock = watch, every_s, out, poll_s, clock
        self._last: dict[str, tuple[tuple[str, int, int], float]] = {}  # run label -> (state, when printed)
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
        for label, seconds, beat in rows:
            state = run_state(beat)
            last = self._last.get(label)
            if last is not None and beat is None and last[0] != state:
                # between two counted steps: its next step's line (or its end line) says more, soon
                self._last[label] = (state, last[1])
            elif last is None or last[0] != state or now - last[1] >= self.every_s:
                self._last[label] = (state, now)
                due.append(plain_line(label, seconds, beat))
        running = {label for label, _, _ in rows}
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
        for label, seconds, beat in rows:
            if beat is None:
                what = "running"
            else:
                what = f"{step_name(beat)}: {done_text(beat.figures)}; {printable(figures_text(beat.figures))}"
            table.add_row(Text(printable(label)), Text(duration_text(seconds)), Text(what))
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
