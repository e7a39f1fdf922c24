"""`eyt run` with its output to a pipe (cron, CI): plain progress lines of the running runs with their figures, one
per change of a run's state (never the same state twice in a row), no terminal control characters, and the lines
and summary of the runs' ends as before."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.localhost_server import serve
from support.role_play import RolePlay
from support.slates import STUB_ENDPOINT, remote, write_slate

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.mark.slow
def test_eyt_run_into_a_pipe_prints_plain_progress_lines(tmp_path):
    with serve(RolePlay(), delay_s=0.1) as server:
        slate = write_slate(
            tmp_path,
            pools={"nemotron_usa": {"source": "fixture"}},
            dialogues_per_pool=3,
            t_max=3,
            simulator=remote("sim-model", server.base_url, family="fam-sim-model", **STUB_ENDPOINT),
            targets=[remote("chat-model", server.base_url, family="fam-chat-model", **STUB_ENDPOINT)],
            judges=[remote("judge-model", server.base_url, family="fam-judge-model", **STUB_ENDPOINT)],
            replacement_judge=remote("judge-b", server.base_url, family="fam-judge-b", **STUB_ENDPOINT),
        )
        env = {
            **os.environ,
            "EYT_DATA_DIR": str(tmp_path / "data"),
            "EYT_SLATE": str(slate),
            "EYT_TEST_KEY": "sk-pipe-secret-456",
            "HF_HUB_OFFLINE": "1",
            "TERM": "xterm-256color",  # a terminal type, but the output is a pipe: still plain lines
        }
        env.pop("DAGSTER_HOME", None)
        out = subprocess.run(
            [BIN / "eyt", "run", "--no-speech", "--no-reports", "--parallel", "1"],  # the default: a line per change
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    progress = [line for line in lines if line.startswith("  ...    ")]
    cell = [line for line in progress if "eyt_dialogues [nemotron_usa|chat-model]" in line]
    figures = [line for line in cell if "dialogue_turns: " in line or "verdicts: " in line]
    assert figures, out.stdout
    line = figures[-1]
    assert re.search(r"\d+ of (\d+|\?) (dialogues|turn verdicts|final verdicts), ETA ", line), line
    assert "; calls " in line and " 429s " in line and "failures: " in line and "in flight: " in line, line
    # one line per change of state: a run's consecutive lines never repeat its step and count (0.1 s a reply, 3
    # dialogues of 3 turns: seconds per step, under the default 300 s after which an unchanged run is printed again)
    states = {}
    for x in progress:
        label, _, rest = x[9:].partition("  ")
        state = re.sub(r", ETA .*", "", rest.split("s  ", 1)[-1])
        assert states.get(label.strip()) != state, (x, progress)
        states[label.strip()] = state
    assert any(re.search(r": 0 of [1-9]\d* (dialogues|turn verdicts|final verdicts), ETA ", x) for x in cell), cell
    assert "\x1b" not in out.stdout and "\r" not in out.stdout  # no escape codes, no carriage returns
    assert "sk-pipe-secret-456" not in out.stdout
    # the end-of-run lines and the summary, as before
    assert any(re.fullmatch(r"  ok     eyt_pools \[nemotron_usa\] +\d+\.\d s  run [0-9a-f]{8}", x) for x in lines)
    assert any(line.startswith("  ok     eyt_dialogues [nemotron_usa|chat-model]") for line in lines)
    assert re.search(r"^done in [\d.]+ s: 2 run\(s\) succeeded, 0 failed, 0 skipped$", out.stdout, re.M)
