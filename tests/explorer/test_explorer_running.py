"""`eyt view`'s /running page over real heartbeat files: a step running now (its recorder in this process), a step
preparing its loop (its count marked preparing, as the live table of `eyt run` writes it), steps whose process died
or that stopped writing (listed as ended, never as running), nothing at all (a short message), and every text a
heartbeat carries shown as text only."""

from __future__ import annotations

import html
import os
import re
import time

import pytest

from eyt_dagster.core.progress import done_text
from eyt_dagster.explorer.app import create_app
from resources.models.run_progress import StepProgress
from resources.runs.processes import process_start
from resources.runs.progress_files import read_heartbeats, write_heartbeat

from support.asgi_get import get

pytestmark = pytest.mark.unit

HOSTILE = "<script>alert('x')</script>"


def _beat(run_id: str, **changes) -> dict:
    now = time.time()
    figures = {
        "unit": "dialogues",
        "done": 2,
        "total": 9,
        "elapsed_s": 4.0,
        "calls": 7,
        "cache_hits": 1,
        "tokens": 1500,
        "cost_usd": 0.5,
        "retries": 0,
        "rate_limited": 0,
        "failures": {},
        "endpoints": [{"name": f"m @ http://{HOSTILE}", "in_flight": 1, "budget": 2}],
    }
    return {
        "run_id": run_id,
        "step": "dialogue__dialogue_turns",
        "job": "eyt_dialogues",
        "partition": "p|t",
        "launch": None,
        "host": os.uname().nodename,
        "pid": os.getpid(),
        "process_start": process_start(os.getpid()),
        "started_at": now - 60,
        "updated_at": now,
        "figures": figures,
    } | changes


def test_nothing_running_says_so(tmp_path):
    page = get(create_app(tmp_path), "/running")
    assert page.status == 200 and "Nothing is running." in page.text
    assert '<a href="/running">Running now</a>' in get(create_app(tmp_path), "/speech").text  # in the nav


def test_a_running_step_with_its_figures_and_ended_ones_apart(tmp_path):
    folder = tmp_path / "progress"
    write_heartbeat(folder / "dead.s.json", _beat("deadrun1", pid=2**22 + 4321, partition="gone|cell"))
    write_heartbeat(folder / "stall.s.json", _beat("stalled1", updated_at=time.time() - 300, partition="slow|cell"))
    progress = StepProgress(
        tmp_path,
        run_id="liverun1-abcd",
        step="speech__slm_choices",
        job="speech_eval",
        unit="trajectories",
        message=lambda d, t: f"{d} of {t}",
        partition=HOSTILE,
        log_every=1000.0,
    )
    with progress as on_done:
        on_done(3, 12)
        deadline = time.monotonic() + 5  # the item's count reaches the file within a second (the recorder's tick)
        while "3 of 12" not in (page := get(create_app(tmp_path), "/running").text) and time.monotonic() < deadline:
            time.sleep(0.1)
    running, _, ended = page.partition("Ended without finishing")
    assert "liverun1" in running and "3 of 12 trajectories" in running and "slm_choices" in running
    assert "deadrun1" not in running and "stalled1" not in running
    assert "deadrun1" in ended and "its process is gone" in ended
    assert "stalled1" in ended and "no update for a while" in ended
    assert HOSTILE not in page and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page  # text only
    after = get(create_app(tmp_path), "/running").text
    assert "liverun1" not in after  # the step ended: its heartbeat went with it
    assert "Nothing is running." in after and "deadrun1" in after


def test_a_step_preparing_its_loop_shows_its_count_as_the_live_table_does(tmp_path):
    def row() -> tuple[str, str, str]:
        """The running step's done and ETA cells, and what the live table writes of the same heartbeat."""
        page = get(create_app(tmp_path), "/running").text
        body = page.split('<table class="running">', 1)[1].split("</tbody>", 1)[0]
        cells = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", body.split("<tbody>", 1)[1], re.S)]
        (beat,) = read_heartbeats(tmp_path)
        return cells[4], cells[5], done_text(beat.figures)

    progress = StepProgress(
        tmp_path,
        run_id="preprun1-abcd",
        step="dialogue__judge_verdicts",
        job="eyt_dialogues",
        unit="turn verdicts",
        message=lambda d, t: f"{d} of {t}",
        log_every=1000.0,
        total=14,  # given before the step builds its judges
    )
    with progress as on_done:
        done, eta, live = row()  # the heartbeat is written as the recorder is entered
        assert done == "0 of 14 turn verdicts (preparing)" and eta == "after the first one (no past run)"
        assert live == f"{done}, ETA {eta}"  # one formatting, the page's and the live table's
        on_done(0, 14)  # the loop's first report ends the preparing (written at once)
        done, eta, live = row()
        assert done == "0 of 14 turn verdicts" and live == f"{done}, ETA {eta}"
