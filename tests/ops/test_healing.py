"""Every failure heals by what the docs tell users to run, through the real CLI in subprocesses and the real openai
client against the localhost stub server.

* A target whose endpoint is down (connection refused) fails its cell; `eyt refresh` plans the failed cell again and
  says why; while the endpoint stays down, the slate's attempts_per_day bounds the retries and `--dry-run` says when
  it gave up; with the endpoint back, `eyt refresh` finishes every dialogue, and the next refresh has nothing to do.
* A target that answers malformed JSON leaves dialogues unfinished; once the server is fixed, a rerun asks again only
  the requests whose replies did not validate (a reply that validated is never paid for twice) and finishes every
  dialogue; the unusable replies stay in the cache as evidence."""

import os
import socket
import sqlite3
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import duckdb
import pytest

from support.localhost_server import serve
from support.role_play import RolePlay
from support.slates import write_slate

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
EYT = Path(sys.executable).parent / "eyt"
POOL = "nemotron_usa"
DIALOGUES = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _slate(tmp_path: Path, base_url: str, target: dict | None = None, **extra) -> Path:
    settings = {"pools": {POOL: {"source": "fixture"}}, "dialogues_per_pool": DIALOGUES, "t_max": 3, **extra}
    return write_slate(
        tmp_path,
        targets=[
            {
                "id": "remote-target",
                "provider": "openai",
                "model": "remote-target-v1",
                "family": "fam-remote",
                "base_url": base_url,
                "max_retries": 0,
                "timeout_s": 5,
                "parse_retries": 0,
                **(target or {}),
            }
        ],
        **settings,
    )


def _eyt(env, *args, timeout=300):
    return subprocess.run([EYT, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def _env(tmp_path: Path, slate: Path) -> dict:
    env = {**os.environ, "EYT_DATA_DIR": str(tmp_path / "data"), "EYT_SLATE": str(slate), "HF_HUB_OFFLINE": "1"}
    env.pop("DAGSTER_HOME", None)
    return env


def _finished(data: Path) -> tuple[int, int]:
    """(dialogues with an error row, dialogues) of the cell."""
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        return con.execute(
            "SELECT count(DISTINCT seed_id) FILTER (WHERE error IS NOT NULL), count(DISTINCT seed_id) "
            "FROM dialogue.dialogue_turns"
        ).fetchone()


@pytest.mark.slow
def test_a_target_down_then_back_is_finished_by_eyt_refresh(tmp_path):
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    slate = _slate(tmp_path, base_url, attempts_per_day=2)
    env = _env(tmp_path, slate)
    cell = f"{POOL}|remote-target"

    down = _eyt(env, "run", "--no-speech")  # nothing listens on the port
    assert down.returncode == 1, down.stdout[-3000:] + down.stderr[-3000:]
    assert f"FAILED eyt_dialogues [{cell}]" in down.stdout
    assert _finished(tmp_path / "data") == (DIALOGUES, DIALOGUES)

    plan = _eyt(env, "refresh", "--dry-run", "--no-speech")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "FAILED" in plan.stdout and f"failed: 0 of {DIALOGUES} dialogues finished" in plan.stdout, plan.stdout
    assert "connection failure" in plan.stdout
    again = _eyt(env, "refresh", "--no-speech")  # still down: the second run of the cell today
    assert again.returncode == 1 and f"FAILED eyt_dialogues [{cell}]" in again.stdout, again.stdout[-3000:]
    gave_up = _eyt(env, "refresh", "--dry-run", "--no-speech")
    assert "gave up for today" in gave_up.stdout and "gave up after 2 runs in 24 h (attempts_per_day: 2)" in (
        gave_up.stdout
    ), gave_up.stdout
    assert "would launch" not in gave_up.stdout or "eyt_dialogues" not in gave_up.stdout.split("would launch")[1]

    # the user raises the budget (no result goes stale for it) and the endpoint comes back
    slate.write_text(slate.read_text().replace("attempts_per_day: 2", "attempts_per_day: 4"))
    with serve(RolePlay(), port=port):
        healed = _eyt(env, "refresh", "--no-speech")
        assert healed.returncode == 0, healed.stdout[-3000:] + healed.stderr[-3000:]
        assert f"ok     eyt_dialogues [{cell}]" in healed.stdout
        assert _finished(tmp_path / "data") == (0, DIALOGUES)
        settled = _eyt(env, "refresh", "--dry-run", "--no-speech")
    assert "nothing to do" in settled.stdout, settled.stdout


class BadJsonUntilFixed:
    """Plays every role; while `broken`, the target's perception reply (JSON) of one dialogue in two is malformed."""

    def __init__(self) -> None:
        self.role_play = RolePlay()
        self.broken = True
        self.bad = 0
        self.lock = threading.Lock()

    def __call__(self, request):
        role = self.role_play.role_of(request)
        opening = request["messages"][-1]["content"]
        if self.broken and role == "perception" and zlib.crc32(opening.encode()) % 2 == 0:
            with self.lock:
                self.bad += 1
            return '{"explicit_intent": "seeking_advice", "emotion": '  # cut off mid-object
        return self.role_play(request)


@pytest.mark.slow
def test_invalid_replies_are_asked_again_by_a_rerun_once_the_server_is_fixed(tmp_path):
    handler = BadJsonUntilFixed()
    with serve(handler) as server:
        # the cell may keep unfinished dialogues and still pass its check: its run is ok, with error rows inside
        slate = _slate(tmp_path, server.base_url, dialogues_per_pool=4, max_unfinished_fraction=0.9)
        env = _env(tmp_path, slate)
        first = _eyt(env, "run", "--no-speech")
        sent_first = len(server.chat_requests)
        assert handler.bad > 0, "the handler broke no reply: pick another split"
        unfinished, dialogues = _finished(tmp_path / "data")
        assert 0 < unfinished < dialogues == 4, first.stdout[-3000:]
        # the run's end line (a pipe also gets a "..." line per change of the run's state while it runs)
        [line] = [x for x in first.stdout.splitlines() if "eyt_dialogues [" in x and not x.lstrip().startswith("...")]
        assert line.lstrip().startswith("ok") and f"({unfinished} error rows)" in line, first.stdout[-3000:]
        assert "did not validate" in first.stdout  # the last reason, under the run's line
        plan = _eyt(env, "refresh", "--dry-run", "--no-speech")
        assert f"{4 - unfinished} of 4 dialogues finished, {unfinished} error row(s): target: " in plan.stdout
        handler.broken = False
        rerun = _eyt(env, "run", "--no-speech")
        sent_rerun = len(server.chat_requests) - sent_first
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert _finished(tmp_path / "data") == (0, 4)
    # only what did not validate (and the turns after it) went out again: the validated replies came from the cache
    assert 0 < sent_rerun < sent_first, (sent_rerun, sent_first)
    with sqlite3.connect(tmp_path / "data" / "cache" / "model_calls.sqlite") as db:
        rejected = db.execute("SELECT key, failure, attempt, text FROM rejected_replies").fetchall()
        answered = db.execute("SELECT count(*) FROM replies WHERE key IN (SELECT key FROM rejected_replies)").fetchone()
    # every malformed reply is kept as attempt 1 of its request, and each of those requests has a valid reply now
    assert len(rejected) == handler.bad and {r[1] for r in rejected} == {"invalid_reply"}
    assert all(r[2] == 1 and r[3].startswith('{"explicit_intent"') for r in rejected)
    assert answered == (len({r[0] for r in rejected}),)


@pytest.mark.slow
def test_a_missing_key_and_a_ctrl_c_are_one_line_each_with_the_traceback_in_the_log(tmp_path):
    import signal
    import time

    with serve(RolePlay(), delay_s=0.5) as server:
        slate = _slate(tmp_path, server.base_url, target={"api_key_env": "EYT_HEALING_KEY"})
        env = _env(tmp_path, slate)
        env.pop("EYT_HEALING_KEY", None)
        missing = _eyt(env, "run", "--no-speech")
        assert missing.returncode == 1
        output = missing.stdout + missing.stderr
        assert "Traceback" not in output, output[-3000:]
        assert "export EYT_HEALING_KEY=<your key>" in missing.stdout
        [log] = [line.split("log ", 1)[1] for line in missing.stdout.splitlines() if line.strip().startswith("log ")]
        story = Path(log).read_text()  # the whole story, stack included, is in the file the line names
        assert "MissingApiKeyError" in story and 'File "' in story and "chat_transport.py" in story

        # Ctrl-C while the target answers: SIGINT to the command's process group, as a terminal sends it
        env["EYT_HEALING_KEY"] = "sk-healing-test"
        command = subprocess.Popen(
            [EYT, "run", "--no-speech"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 120
        while not any(r.json["model"] == "remote-target-v1" for r in server.chat_requests):
            assert time.monotonic() < deadline and command.poll() is None, "no target request came"
            time.sleep(0.05)
        os.killpg(command.pid, signal.SIGINT)
        out, _ = command.communicate(timeout=120)
    assert command.returncode == 130, out[-3000:]
    assert "Traceback" not in out and out.rstrip().endswith("eyt: interrupted"), out[-3000:]
    assert f"FAILED eyt_dialogues [{POOL}|remote-target]" in out and "interrupted" in out
    plan = _eyt(env, "refresh", "--dry-run", "--no-speech")
    assert "dialogue/dialogue_turns" in plan.stdout and "failed: its run" in plan.stdout, plan.stdout[-3000:]
