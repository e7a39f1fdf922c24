"""A cell none of whose dialogues finished fails `eyt run` loudly: the real CLI in a subprocess, its simulator on
the localhost stub server, which times out on two dialogues and refuses the other two the way llama-server
refuses a prompt longer than its context. The run exits non-zero, its summary names the failures by role and
kind, the leaderboard has the cell's row and prints it readably, and the UI's check (an ERROR asset check on
dialogue_turns) failed with the same text."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from support.localhost_server import context_exceeded, serve
from support.role_play import RolePlay
from support.slates import write_slate

ROOT = Path(__file__).resolve().parents[2]
EYT = Path(sys.executable).parent / "eyt"
POOL = "nemotron_usa"
TIMEOUT_S = 0.4


class FailingSimulator:
    """Plays the ChatSEEDs; then, per dialogue in order of its first simulated turn, alternately refuses (context
    exceeded) or holds the reply past the client's timeout."""

    def __init__(self) -> None:
        self.role_play = RolePlay()
        self.fate: dict[str, str] = {}
        self.lock = threading.Lock()

    def __call__(self, request):
        if self.role_play.role_of(request) == "seed_generation":
            return self.role_play(request)
        dialogue = request["messages"][0]["content"]
        with self.lock:
            fate = self.fate.setdefault(dialogue, ("refuse", "hold")[len(self.fate) % 2])
        if fate == "refuse":
            return context_exceeded(4569, 4096)
        time.sleep(TIMEOUT_S * 2.5)
        return self.role_play(request)


@pytest.mark.cli
@pytest.mark.slow
def test_a_cell_with_no_finished_dialogue_fails_the_run_and_says_why(tmp_path):
    with serve(FailingSimulator()) as server:
        slate = write_slate(
            tmp_path,
            pools={POOL: {"source": "fixture"}},
            dialogues_per_pool=4,
            t_max=3,
            simulator={
                "id": "stub-simulator",
                "provider": "openai",
                "model": "stub",
                "family": "stub",
                "base_url": server.base_url,
                "timeout_s": TIMEOUT_S,
                "max_retries": 1,
            },
            targets=[
                {"id": "terse-baseline", "provider": "embedded", "model": "terse", "family": "eyt-baseline-target"}
            ],
        )
        data = tmp_path / "data"
        env = {**os.environ, "EYT_DATA_DIR": str(data), "EYT_SLATE": str(slate), "HF_HUB_OFFLINE": "1"}
        env.pop("DAGSTER_HOME", None)
        run = subprocess.run(
            [EYT, "run", "--no-speech", "--parallel", "1"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    out = run.stdout
    assert run.returncode == 1, out[-3000:] + run.stderr[-3000:]
    failures = "simulator: 2 refused: context length, 2 timeouts"
    assert f"FAILED eyt_dialogues [{POOL}|terse-baseline]" in out
    assert "check dialogue/dialogue_turns enough_finished_dialogues: 0 of 4 dialogues finished" in out
    assert f"unfinished: {failures}; see dialogue.dialogue_turns.error" in out and "call cache)" in out
    assert "ok     eyt_reports" in out  # the reports still ran, over the cells that exist
    # the terminal leaderboard: the cell's row with '-' for its missing numbers, and why it has none
    assert "Empty DataFrame" not in out
    assert f"  {POOL}|terse-baseline: 0 of 4 finished: {failures}" in out

    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        row = con.execute("SELECT n_dialogues, n_errors, failures, ficr FROM dialogue.leaderboard").fetchall()
        errors = con.execute(
            "SELECT error_role, error_kind, error FROM dialogue.dialogue_turns WHERE error IS NOT NULL ORDER BY 2"
        ).fetchall()
    assert row == [(0, 4, failures, None)]
    assert [(role, kind) for role, kind, _ in errors] == [("simulator", "context_exceeded")] * 2 + [
        ("simulator", "timeout")
    ] * 2
    assert "exceeds the available context size (4096 tokens)" in errors[0][2]
    assert f"timed out after {TIMEOUT_S:g} s twice" in errors[-1][2]

    from dagster import AssetCheckKey, AssetKey, DagsterInstance

    with DagsterInstance.from_config(str(data / "dagster_home")) as instance:
        key = AssetCheckKey(AssetKey(["dialogue", "dialogue_turns"]), "enough_finished_dialogues")
        [record] = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    evaluation = record.event.dagster_event.event_specific_data
    assert not evaluation.passed and failures in evaluation.description


@pytest.mark.unit
def test_the_terminal_leaderboard_is_readable_when_empty_or_partly_empty():
    import pandas as pd

    from eyt_dagster.ops.terminal_board import leaderboard_text

    empty = leaderboard_text(pd.DataFrame(columns=["pool", "target", "n_dialogues", "n_errors", "failures"]))
    assert "Empty DataFrame" not in empty and "no target x pool cell has dialogues yet" in empty
    board = pd.DataFrame(
        [
            {
                "pool": POOL,
                "target": "a",
                "is_baseline": False,
                "n_dialogues": 4,
                "n_errors": 0,
                "failures": None,
                "ficr": 0.75,
                "empathy": 61.234,
            },
            {
                "pool": POOL,
                "target": "b",
                "is_baseline": False,
                "n_dialogues": 0,
                "n_errors": 4,
                "failures": "simulator: 4 timeouts",
                "ficr": float("nan"),
                "empathy": float("nan"),
            },
        ]
    )
    text = leaderboard_text(board)
    lines = text.splitlines()
    assert "NaN" not in text and "61.2" in text
    row_b = next(line for line in lines if line.split()[:2] == [POOL, "b"])
    assert row_b.split()[-2:] == ["-", "-"]
    assert f"  {POOL}|b: 0 of 4 finished: simulator: 4 timeouts" in lines
    assert not any(f"{POOL}|a:" in line for line in lines)
