"""What `eyt run` shows of its running runs, from the heartbeats real step recorders write: the live table's rows
(the count from the first frame, an ETA from past runs before the first item is done, from the step's rate after),
the plain lines of a pipe (one line per change of state, not a frame every N seconds), and the worker processes
keeping other libraries' progress bars and their own output off the terminal the table redraws."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from eyt_dagster.ops.progress_display import PlainLines, RunWatch, _LiveTable, display, live_output, run_state
from eyt_dagster.ops.run_steps import RunSteps
from resources.models.run_progress import StepProgress
from resources.runs.step_history import record_step

ROOT = Path(__file__).resolve().parents[2]
LABEL = "eyt_voice [nemotron_usa|reflective-baseline]"
STEP = "voice__voiced_turns"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def recorder(data: Path, watch: RunWatch, clock: Clock, total: int | None = None) -> StepProgress:
    return StepProgress(
        data,
        run_id="run-a",
        step=STEP,
        job="eyt_voice",
        unit="dialogues",
        message=lambda d, t: f"voiced dialogues done: {d} of {t}",
        partition="nemotron_usa|reflective-baseline",
        launch=watch.tag(0),
        log_every=1000.0,
        clock=clock,
        total=total,
    )


def frame(watch: RunWatch) -> str:
    """One frame of the live table as text, as rich draws it on a wide terminal."""
    out = io.StringIO()
    Console(file=out, width=260, color_system=None).print(_LiveTable(watch)._table())
    return out.getvalue()


@pytest.mark.unit
def test_the_live_table_has_the_count_from_its_first_frame_and_an_eta_before_the_first_item(tmp_path):
    data, clock = tmp_path / "data", Clock()
    watch = RunWatch(data, clock=clock)
    watch.started(0, LABEL)
    assert "running" in frame(watch)  # no counting step yet
    # a past run of the step: 4 dialogues in 4 minutes, 60 s a dialogue
    record_step(
        data,
        step=STEP,
        job="eyt_voice",
        partition="nemotron_usa|reflective-baseline",
        unit="dialogues",
        done=4,
        total=4,
        elapsed_s=240.0,
    )
    with recorder(data, watch, clock, total=4) as on_done:
        first = frame(watch)
        # the asset gave the total before it loaded its voice and listener: the count from the first frame
        assert "voiced_turns: 0 of 4 dialogues (preparing), ETA ~4 min 00 s (past runs)" in first, first
        on_done(0, 4)  # the loop starts
        assert "voiced_turns: 0 of 4 dialogues, ETA ~4 min 00 s (past runs)" in frame(watch)
        clock.now += 90.0  # the first dialogue takes longer than the past runs' 60 s
        on_done._write()  # the background thread's rewrite, once a second
        assert "0 of 4 dialogues, ETA ~2 min 30 s (past runs)" in frame(watch)
        on_done(1, 4)
        assert "1 of 4 dialogues, ETA 4 min 30 s" in frame(watch)  # its own rate now: 90 s a dialogue, 3 to go
    watch.ended(0)
    assert LABEL not in frame(watch)


@pytest.mark.unit
def test_without_a_past_run_the_first_frame_says_when_the_eta_comes(tmp_path):
    data, clock = tmp_path / "data", Clock()
    watch = RunWatch(data, clock=clock)
    watch.started(0, LABEL)
    with recorder(data, watch, clock, total=4):
        assert "0 of 4 dialogues (preparing), ETA after the first one (no past run)" in frame(watch)


@pytest.mark.unit
def test_piped_output_prints_one_line_per_change_of_state(tmp_path):
    data, clock = tmp_path / "data", Clock()
    watch = RunWatch(data, clock=clock)
    lines = PlainLines(watch, every_s=300.0, out=io.StringIO(), clock=clock)
    watch.started(0, LABEL)
    [started] = lines.lines()
    assert started.startswith(f"  ...    {LABEL}") and started.endswith("running")
    assert lines.lines() == []  # nothing changed: nothing printed, however often it looks
    with recorder(data, watch, clock) as on_done:
        on_done(0, 4)
        [counted] = lines.lines()
        assert "voiced_turns: 0 of 4 dialogues, ETA after the first one (no past run); calls 0" in counted
        for _ in range(5):
            clock.now += 20.0  # time passes, the heartbeat is rewritten: the same state, no line
            assert lines.lines() == []
        on_done(1, 4)
        [one] = lines.lines()
        assert "1 of 4 dialogues, ETA 5 min 00 s" in one
        clock.now += 300.0  # a long item: the line once more after the quiet time, not every poll
        [again] = lines.lines()
        assert "1 of 4 dialogues" in again and lines.lines() == []
        on_done(2, 4), on_done(3, 4), on_done(4, 4)
        [last] = lines.lines()  # three items between two looks: one line, the newest state
        assert "4 of 4 dialogues, ETA 0 s" in last
    assert lines.lines() == []  # between two counted steps: no `running` line, the next step's line comes soon
    with recorder(data, watch, clock, total=2):
        [nxt] = lines.lines()
        assert "0 of 2 dialogues" in nxt
    watch.ended(0)
    assert lines.lines() == []
    assert all("\x1b" not in x and "\r" not in x for x in (started, counted, one, again, last, nxt))


class Steps:
    """What the Dagster instance says of each run's steps (eyt_dagster/ops/run_steps.py), set by hand: launch tag ->
    RunSteps; a tag with none is a run the instance does not hold yet."""

    def __init__(self) -> None:
        self.now: dict[str, RunSteps] = {}
        self.failing = False

    def __call__(self, tag: str) -> RunSteps | None:
        if self.failing:
            raise OSError("database is locked")
        return self.now.get(tag)


@pytest.mark.unit
def test_a_run_between_counted_steps_shows_the_step_it_runs_and_its_steps_done(tmp_path):
    data, clock, steps = tmp_path / "data", Clock(), Steps()
    watch = RunWatch(data, clock=clock, steps=steps)
    watch.started(0, LABEL)
    tag = watch.tag(0)

    def row() -> str:
        [line] = [x for x in frame(watch).splitlines() if LABEL in x]
        return re.split(r"\s{2,}", line.strip())[-1]  # the last column

    assert row() == "running"  # the instance holds no run of the tag yet
    steps.now[tag] = RunSteps(running=(), done=0, total=7)
    assert row() == "starting (0 of 7 steps done)"
    steps.now[tag] = RunSteps(running=("dialogue__intent_similarity",), done=3, total=7)
    assert row() == "intent_similarity (3 of 7 steps done)"
    steps.now[tag] = RunSteps(running=(), done=3, total=7)
    assert row() == "between steps (3 of 7 steps done)"
    steps.now[tag] = RunSteps(running=("voice__voiced_turns",), done=3, total=7)
    with recorder(data, watch, clock, total=4):  # a counted step: its count, from before its loop starts
        assert "voiced_turns: 0 of 4 dialogues (preparing), ETA after the first one (no past run)" in row()
    steps.now[tag] = RunSteps(running=(), done=7, total=7)
    assert row() == "finishing (7 of 7 steps done)"
    steps.failing = True  # the instance could not be read this time
    assert row() == "running"


@pytest.mark.unit
def test_piped_output_prints_a_line_when_a_run_starts_a_step_that_counts_nothing(tmp_path):
    data, clock, steps = tmp_path / "data", Clock(), Steps()
    watch = RunWatch(data, clock=clock, steps=steps)
    out = PlainLines(watch, every_s=300.0, out=io.StringIO(), clock=clock)
    watch.started(0, LABEL)
    tag = watch.tag(0)

    def now(*running: str, done: int) -> list[str]:
        steps.now[tag] = RunSteps(running=running, done=done, total=4)
        return [line.split(" s  ", 1)[1] for line in out.lines()]

    assert now(done=0) == ["starting (0 of 4 steps done)"]
    assert now("dialogue__chat_seeds", done=0) == ["chat_seeds (0 of 4 steps done)"]
    assert now("dialogue__chat_seeds", done=0) == []  # the same state: no line
    assert now(done=1) == []  # between two steps: the next step's line follows
    assert now(STEP, done=1) == ["voiced_turns (1 of 4 steps done)"]  # loading its inputs, no heartbeat yet
    with recorder(data, watch, clock, total=4) as on_done:
        [counted] = now(STEP, done=1)
        assert counted.startswith("voiced_turns: 0 of 4 dialogues (preparing), ETA after the first one")
        on_done(0, 4)
        assert now(STEP, done=1) == []  # the loop started: the same count, no line
        on_done(4, 4)
        [last] = now(STEP, done=1)
        assert last.startswith("voiced_turns: 4 of 4 dialogues, ETA 0 s")
    assert now(STEP, done=1) == []  # its loop ended, it writes its table: its last line said it
    assert now(done=2) == []
    assert now("dialogue__intent_similarity", done=2) == ["intent_similarity (2 of 4 steps done)"]
    assert now(done=4) == []  # finishing: the run's end line follows
    clock.now += 300.0
    assert now(done=4) == ["finishing (4 of 4 steps done)"]  # unchanged for the quiet time: said once more
    watch.ended(0)
    assert out.lines() == []


@pytest.mark.unit
def test_a_large_step_gets_a_line_per_tenth_of_its_items(tmp_path):
    data, clock = tmp_path / "data", Clock()
    watch = RunWatch(data, clock=clock)
    lines = PlainLines(watch, every_s=300.0, out=io.StringIO(), clock=clock)
    watch.started(0, LABEL)
    printed = len(lines.lines())
    with recorder(data, watch, clock, total=1000) as on_done:
        for done in range(1001):
            clock.now += 0.1
            on_done(done, 1000)
            printed += len(lines.lines())
    assert printed == 1 + 11  # started; 0, 100, 200, ... 1000 of 1000
    assert run_state(None) == ("", "", 0, 0)


@pytest.mark.unit
def test_the_display_is_the_live_table_only_on_a_terminal(tmp_path, monkeypatch):
    watch = RunWatch(tmp_path)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert isinstance(display(watch, out=io.StringIO()), PlainLines) and not live_output(io.StringIO())
    assert isinstance(display(watch, tty=True), _LiveTable)
    monkeypatch.setenv("TERM", "dumb")
    assert isinstance(display(watch, tty=True), PlainLines)


@pytest.mark.cli
def test_a_worker_keeps_progress_bars_and_its_output_off_the_terminal(tmp_path):
    """What `_worker_start` does first in each worker under the live table, in a process of its own: stdout and
    stderr (the descriptors: a child process's too) into the file, and a library's tqdm bar ("Loading weights", as
    transformers draws it) not drawn at all."""
    log = tmp_path / "logs" / "workers.log"
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from eyt_dagster.ops.launch import QUIET_LIBRARIES, _write_output_to\n"
        f"_write_output_to(Path({str(log)!r}))\n"
        "for name, value in QUIET_LIBRARIES.items():\n"
        "    os.environ.setdefault(name, value)\n"
        "from transformers.utils.logging import tqdm\n"
        "for _ in tqdm(range(3), desc='Loading weights'):\n"
        "    pass\n"
        "print('a warning of a library', file=sys.stderr)\n"
        "print('a print')\n"
        "sys.stdout.flush()\n"
        "os.system('echo a child process')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""  # nothing reached the terminal
    written = log.read_text()
    assert "a warning of a library" in written and "a print" in written and "a child process" in written
    assert "Loading weights" not in written
