"""A step's progress: the figures against a hand-made sequence (done of total, the time left, calls by failure kind,
endpoints in flight), the heartbeat file and how a reader classifies it, and a real run against the localhost
OpenAI-compatible server whose 429s and retries reach the step's lines in the Dagster run log."""

from __future__ import annotations

import json
import os
import re
import threading
import time

import pytest

from eyt_dagster.core.progress import StepFigures, done_text, duration_text, eta_seconds, progress_line
from resources.models.call_cache import CallCache
from resources.models.endpoint_gates import gate_for
from resources.models.run_progress import StepProgress
from resources.runs.progress_files import DEAD, RUNNING, STALLED, read_heartbeats, write_heartbeat
from resources.runs.step_history import expected_item_s, history_path, record_step

from support.localhost_server import StubResponse
from support.pipeline import materialize_dialogues
from support.role_play import RolePlay
from support.slates import remote, write_slate


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.unit
def test_eta_arithmetic_and_its_wording():
    assert eta_seconds(0, 40, 12.0) is None  # no rate yet
    assert eta_seconds(10, 40, 20.0) == pytest.approx(60.0)  # 0.5 items/s, 30 to go
    assert eta_seconds(40, 40, 20.0) == 0.0
    assert [duration_text(s) for s in (None, 44.6, 200, 7500)] == ["unknown", "45 s", "3 min 20 s", "2 h 05 min"]
    assert done_text(StepFigures("dialogues", 0, 0, 3.0)) == "0 of ? dialogues, ETA unknown"
    assert done_text(StepFigures("dialogues", 0, 8, 3.0)) == "0 of 8 dialogues, ETA after the first one (no past run)"


@pytest.mark.unit
def test_eta_before_the_first_item_comes_from_past_runs_then_from_the_steps_own_rate():
    # past runs: 30 s a dialogue; 4 to play, 20 s spent on the first: 4 x 30 - 20 = 100 s left
    assert eta_seconds(0, 4, 20.0, expected_item_s=30.0) == pytest.approx(100.0)
    assert done_text(StepFigures("dialogues", 0, 4, 20.0, expected_item_s=30.0)) == (
        "0 of 4 dialogues, ETA ~1 min 40 s (past runs)"
    )
    # the past runs' time spent and still no item done: due, never a negative time
    assert eta_seconds(0, 4, 130.0, expected_item_s=30.0) == 0.0
    assert done_text(StepFigures("dialogues", 0, 4, 130.0, expected_item_s=30.0)) == (
        "0 of 4 dialogues, ETA due (past runs: 2 min 00 s)"
    )
    # the first item done: the step's own rate wins over the past runs' (60 s an item now, 3 to go)
    assert eta_seconds(1, 4, 60.0, expected_item_s=30.0) == pytest.approx(180.0)
    assert done_text(StepFigures("dialogues", 1, 4, 60.0, expected_item_s=30.0)) == "1 of 4 dialogues, ETA 3 min 00 s"
    assert done_text(StepFigures("dialogues", 4, 4, 60.0, expected_item_s=30.0)) == "4 of 4 dialogues, ETA 0 s"


@pytest.mark.unit
def test_the_recorder_counts_the_steps_calls_by_kind_and_its_endpoints(tmp_path, monkeypatch):
    monkeypatch.setenv("EYT_ENDPOINT_SLOTS", "off")
    data = tmp_path / "data"
    clock, lines = Clock(), []
    with CallCache(tmp_path / "calls.sqlite") as cache:
        cache.record(role="target", model_id="m", purpose="before", cached=False, tokens_in=999)  # before the step
        gate = gate_for("http://user:pw@127.0.0.1:9/v1?k=s", "progress-model", 4)
        progress = StepProgress(
            data,
            run_id="run-a",
            step="dialogue__dialogue_turns",
            job="eyt_dialogues",
            unit="dialogues",
            message=lambda d, t: f"dialogues done: {d} of {t}",
            log=lines.append,
            partition="p|t",
            every_items=2,
            log_every=1000.0,
            clock=clock,
        )
        with progress as on_done:
            path = data / "progress" / "run-a.dialogue__dialogue_turns.json"
            assert path.is_file()
            assert json.loads(path.read_text())["figures"]["total"] == 0
            cache.record(
                role="target",
                model_id="m",
                purpose="p",
                cached=False,
                tokens_in=10,
                tokens_out=5,
                cost_usd=0.01,
                retries=1,
            )
            cache.record(
                role="target", model_id="m", purpose="p", cached=True, tokens_in=10, tokens_out=5, cost_usd=0.01
            )
            cache.record(role="judge", model_id="j", purpose="p", cached=False, ok=False, failure="timeout", retries=1)
            cache.record(role="judge", model_id="j", purpose="p", cached=False, ok=False, failure="timeout")
            cache.record(role="judge", model_id="j", purpose="p", cached=False, ok=False, failure="http", retries=2)
            with gate.slot():
                gate.answered(429, 0.0)
                clock.now += 10.0
                on_done(1, 4)
                held = progress.figures()
            assert held.endpoints[0].in_flight == 1 and held.endpoints[0].budget == 4
            clock.now += 10.0
            on_done(2, 4)
            figures = progress.figures()
            beat = read_heartbeats(data)
            written = path.read_text()
        assert not path.exists()  # removed when the step ended
    assert (figures.done, figures.total, figures.calls, figures.cache_hits) == (2, 4, 5, 1)
    assert (figures.tokens, round(figures.cost_usd, 4), figures.retries, figures.rate_limited) == (30, 0.02, 4, 1)
    assert figures.failures == {"timeout": 2, "http": 1}
    assert figures.eta_s == pytest.approx(20.0)  # 2 dialogues in 20 s, 2 to go
    assert [e.name for e in figures.endpoints] == ["progress-model @ http://127.0.0.1:9"]  # no user, password, query
    assert figures.endpoints[0].in_flight == 0
    assert len(lines) == 1  # every 2 items: the second one
    assert lines[0] == (
        "dialogues done: 2 of 4, ETA 20 s; calls 5 (1 cached), tokens 30, cost $0.0200; retries 4, 429s 1, "
        "failures: timeout 2, http 1; in flight: progress-model @ http://127.0.0.1:9 0/4"
    )
    [running] = beat
    assert running.status == RUNNING and running.pid == os.getpid() and running.partition == "p|t"
    assert running.figures.failures == {"timeout": 2, "http": 1}
    assert "pw" not in written and "k=s" not in written and progress_line(running.figures).startswith("2 of 4")


def _recorder(data, clock, run_id, partition="p|t", total=None):
    return StepProgress(
        data,
        run_id=run_id,
        step="voice__voiced_turns",
        job="eyt_voice",
        unit="dialogues",
        message=lambda d, t: f"voiced dialogues done: {d} of {t}",
        partition=partition,
        log_every=1000.0,
        clock=clock,
        total=total,
    )


def _on_disk(data, run_id):
    [beat] = [b for b in read_heartbeats(data) if b.run_id == run_id]
    return beat.figures


@pytest.mark.unit
def test_a_step_shows_its_count_at_once_and_an_eta_from_its_past_runs(tmp_path):
    data, clock = tmp_path / "data", Clock()
    # the first run ever: the count from the first heartbeat (the asset gave the total), no past run for an ETA
    with _recorder(data, clock, "run-1", total=4) as on_done:
        assert (
            done_text(_on_disk(data, "run-1")) == "0 of 4 dialogues (preparing), ETA after the first one (no past run)"
        )
        on_done(0, 4)
        assert done_text(_on_disk(data, "run-1")) == "0 of 4 dialogues, ETA after the first one (no past run)"
        for _ in range(4):
            clock.now += 30.0
            on_done(_ + 1, 4)
            if _ == 0:  # after the first item: the step's own rate (30 s an item, 3 to go)
                assert done_text(_on_disk(data, "run-1")) == "1 of 4 dialogues, ETA 1 min 30 s"
    assert json.loads(history_path(data).read_text())["elapsed_s"] == 120.0
    # the next run of the same step and partition: its total written the moment the loop tells it (not a quarter
    # second later, nor at the background thread's next rewrite), with an ETA from the past run's 30 s an item
    with _recorder(data, clock, "run-2") as on_done:
        assert done_text(_on_disk(data, "run-2")) == "0 of ? dialogues (preparing), ETA unknown"
        on_done(0, 6)
        assert done_text(_on_disk(data, "run-2")) == "0 of 6 dialogues, ETA ~3 min 00 s (past runs)"
        clock.now += 60.0
        assert done_text(on_done.figures()) == "0 of 6 dialogues, ETA ~2 min 00 s (past runs)"
        assert on_done.log_line().startswith("voiced dialogues done: 0 of 6, ETA ~2 min 00 s (past runs); calls ")
        clock.now += 60.0  # 6 x 20 s an item this time
        on_done(6, 6)
    # a partition the step never ran: the median over the step's partitions, the newest run of each (p|t: 20 s, not
    # its older 30 s; r|t: 40 s)
    record_step(
        data, step="voice__voiced_turns", job="j", partition="r|t", unit="dialogues", done=2, total=2, elapsed_s=80.0
    )
    with _recorder(data, clock, "run-3", partition="q|t", total=2) as on_done:
        assert on_done.figures().expected_item_s == pytest.approx(30.0)
        assert _on_disk(data, "run-3").expected_item_s == pytest.approx(30.0)
    # a step the asset knows has nothing to count shows no line of its own (not `0 of ?`), unless its loop counts
    with _recorder(data, clock, "run-4", total=0) as on_done:
        assert not [b for b in read_heartbeats(data) if b.run_id == "run-4"]
        on_done(0, 3)
        assert done_text(_on_disk(data, "run-4")) == "0 of 3 dialogues, ETA ~1 min 00 s (past runs)"
    # a step that finished no item adds no history; a torn line is skipped
    with history_path(data).open("a") as f:
        f.write('{"step": "voice__voiced_turns", "do')
    assert expected_item_s(data, "voice__voiced_turns", "p|t") == pytest.approx(20.0)
    assert expected_item_s(data, "other__step", "p|t") is None
    assert len(history_path(data).read_text().splitlines()) == 4


@pytest.mark.unit
def test_the_time_a_step_prepares_its_loop_slows_neither_its_eta_nor_its_history(tmp_path):
    """An asset enters its recorder with the total before it builds its roles or loads a model: the step shows its
    count at once, marked preparing, and its rate and the time an item took count from the loop's first report."""
    data, clock = tmp_path / "data", Clock()
    record_step(
        data, step="voice__voiced_turns", job="j", partition="p|t", unit="dialogues", done=4, total=4, elapsed_s=120.0
    )
    with _recorder(data, clock, "run-1", total=4) as on_done:
        clock.now += 50.0  # loading a voice and a recogniser: the past runs' 30 s a dialogue still say 2 minutes
        on_done._write()
        assert done_text(_on_disk(data, "run-1")) == "0 of 4 dialogues (preparing), ETA ~2 min 00 s (past runs)"
        on_done(0, 4)  # the loop starts
        assert done_text(_on_disk(data, "run-1")) == "0 of 4 dialogues, ETA ~2 min 00 s (past runs)"
        clock.now += 20.0
        assert done_text(on_done.figures()) == "0 of 4 dialogues, ETA ~1 min 40 s (past runs)"
        clock.now += 20.0
        on_done(1, 4)  # 40 s for the first dialogue (not 90 s with the preparation): 3 to go
        assert done_text(_on_disk(data, "run-1")) == "1 of 4 dialogues, ETA 2 min 00 s"
        for done in (2, 3, 4):
            clock.now += 40.0
            on_done(done, 4)
    assert json.loads(history_path(data).read_text().splitlines()[-1])["elapsed_s"] == 160.0  # 4 x 40 s, not 210 s
    # a loop that reports no `0 of N` started after the recorder's entry, before its first item ended
    with _recorder(data, clock, "run-2", total=4) as on_done:
        clock.now += 30.0
        on_done(1, 4)
        assert done_text(_on_disk(data, "run-2")) == "1 of 4 dialogues, ETA 1 min 30 s"


@pytest.mark.unit
def test_a_reader_tells_running_stalled_and_dead_heartbeats_apart(tmp_path):
    now = time.time()
    folder = tmp_path / "progress"
    figures = {
        "unit": "items",
        "done": 1,
        "total": 2,
        "elapsed_s": 1.0,
        "calls": 0,
        "cache_hits": 0,
        "tokens": 0,
        "cost_usd": 0.0,
        "retries": 0,
        "rate_limited": 0,
        "failures": {},
        "endpoints": [],
    }
    from resources.runs.processes import process_start

    me = {"host": os.uname().nodename, "pid": os.getpid(), "process_start": process_start(os.getpid())}
    base = {"step": "s", "job": "j", "partition": None, "launch": None, "started_at": now - 5, "figures": figures}
    write_heartbeat(folder / "a.s.json", {**base, **me, "run_id": "a", "updated_at": now})
    write_heartbeat(folder / "b.s.json", {**base, **me, "run_id": "b", "updated_at": now - 120})
    dead_pid = 2**22 + 12345  # above the usual pid_max: no such process
    write_heartbeat(folder / "c.s.json", {**base, **me, "pid": dead_pid, "run_id": "c", "updated_at": now})
    write_heartbeat(folder / "d.s.json", {**base, **me, "run_id": "d", "updated_at": now - 3 * 3600})
    (folder / "e.s.json").write_text('{"run_id": "e", "half')  # a torn or foreign file is skipped, never an error
    found = {b.run_id: b.status for b in read_heartbeats(tmp_path, now)}
    assert found == {"a": RUNNING, "b": STALLED, "c": DEAD}  # d: stalled for hours, forgotten


class Throttled:
    """Plays every role, answering the target's every third request with a 429 (retry after 20 ms)."""

    def __init__(self) -> None:
        self.play, self.target_requests, self.limited = RolePlay(), 0, 0
        self.lock = threading.Lock()

    def __call__(self, request):
        if request["model"] == "chat-model-v1":
            with self.lock:
                self.target_requests += 1
                if self.target_requests % 3 == 1:
                    self.limited += 1
                    return StubResponse(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "20"})
        return self.play(request)


# what each remote model gets: the key's variable, two concurrent calls, retries through the 429s
RETRYING = {"api_key_env": "EYT_TEST_KEY", "max_concurrency": 2, "max_retries": 3}


@pytest.mark.materialisation
def test_a_run_against_a_rate_limited_server_logs_its_429s_and_retries(tmp_path, monkeypatch, localhost_server):
    monkeypatch.setenv("EYT_TEST_KEY", "sk-progress-secret-123")
    handler = Throttled()
    data = tmp_path / "data"
    data.mkdir()
    seen: list = []
    stop = threading.Event()

    def watch():  # a reader beside the run, as `eyt run` and `eyt view` are
        while not stop.wait(0.05):
            seen.extend(b for b in read_heartbeats(data) if b.step == "dialogue__dialogue_turns")

    # 0.25 s a reply: the dialogues' calls span several of the heartbeat's 1 s rewrites, also on a fast machine (at
    # 0.05 s they could all end between two rewrites, and the watcher then saw no call in flight)
    server = localhost_server(handler, delay_s=0.25)
    slate = write_slate(
        tmp_path,
        pools={"nemotron_usa": {"source": "fixture"}},
        dialogues_per_pool=3,
        t_max=3,
        simulator=remote("sim-model", server.base_url, family="fam-sim-model", **RETRYING),
        targets=[
            remote(
                "chat-model",
                server.base_url,
                family="fam-chat-model",
                **RETRYING,
                price_in_per_mtok=2.0,
                price_out_per_mtok=8.0,
            )
        ],
        judges=[remote("judge-model", server.base_url, family="fam-judge-model", **RETRYING)],
        replacement_judge=remote("judge-b", server.base_url, family="fam-judge-b", **RETRYING),
    )
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        instance = materialize_dialogues(slate, data)
    finally:
        stop.set()
        watcher.join()
    assert handler.limited > 0
    lines = [
        r.user_message
        for run in instance.get_runs()
        for r in instance.all_logs(run.run_id)
        if (r.user_message or "").startswith("dialogues done:")
    ]
    last = lines[-1]
    assert last.startswith("dialogues done: 3 of 3 (chat-model on nemotron_usa), ETA 0 s; calls ")
    assert f"429s {handler.limited}," in last, last
    # every 429 was retried by the SDK, or counted as the HTTP failure that ended its call (the server limits by request
    # count across threads, so on a loaded machine one call can meet a 429 at each attempt until its retries run out)
    failed = re.search(r"failures: http (\d+)", last)
    assert int(re.search(r"retries (\d+)", last).group(1)) + (int(failed.group(1)) if failed else 0) >= handler.limited
    assert "in flight: chat-model-v1 @ http://127.0.0.1:" in last and "sim-model-v1 @" in last
    assert float(re.search(r"cost \$([0-9.]+)", last).group(1)) > 0
    assert seen and all(b.status == RUNNING and b.pid == os.getpid() for b in seen)
    # the dialogues run side by side and end together; before that the heartbeat shows their calls in flight
    assert max(b.figures.calls for b in seen) >= 1 and any(b.figures.endpoints for b in seen)
    assert not list((data / "progress").glob("*.json"))  # every step removed its heartbeat
    assert "sk-progress-secret-123" not in "\n".join(lines)


@pytest.mark.unit
def test_the_step_history_keeps_its_newest_lines(tmp_path, monkeypatch):
    from resources.runs import step_history

    monkeypatch.setattr(step_history, "MAX_BYTES", 2000)
    monkeypatch.setattr(step_history, "KEEP_LINES", 5)
    for n in range(1, 40):
        record_step(tmp_path, step="s", job="j", partition=None, unit="items", done=n, total=n, elapsed_s=n * 2.0)
    lines = history_path(tmp_path).read_text().splitlines()
    assert 5 <= len(lines) < 20 and json.loads(lines[-1])["done"] == 39  # cut to the newest, then grown again
    assert expected_item_s(tmp_path, "s", None) == pytest.approx(2.0)
    record_step(tmp_path, step="s", job="j", partition=None, unit="items", done=0, total=3, elapsed_s=5.0)
    assert json.loads(history_path(tmp_path).read_text().splitlines()[-1])["done"] == 39  # no item done: no line
