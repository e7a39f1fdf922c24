"""An endpoint's budget and 429 pause hold across processes on one machine (resources/models/endpoint_slots.py): real
processes with the real openai client against the localhost test server."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from resources.models.endpoint_gates import EndpointGate
from resources.models.endpoint_slots import SLOTS_ENV, MachineSlots, endpoint_key, slots_dir

from support.localhost_server import rate_limited, serve

pytestmark = pytest.mark.unit

SPAWN = multiprocessing.get_context("spawn")


def _client(base_url: str, cache_dir: str, budget: int, name: str):
    from eyt_dagster.core.model_ref import ModelRef
    from resources.models.call_cache import CallCache
    from resources.models.chat_client import OpenAIChatClient

    ref = ModelRef(
        id="shared",
        provider="openai",
        model="shared-model",
        family="stub",
        base_url=base_url,
        max_retries=3,
        max_concurrency=budget,
    )
    cache = CallCache(Path(cache_dir) / f"calls-{name}.sqlite")
    return OpenAIChatClient(ref, role="judge", cache=cache, seed=1, run_id=name)


def _caller(base_url: str, cache_dir: str, slots: str, budget: int, name: str, calls: int, out, ready, go) -> None:
    """A process sending `calls` distinct requests from as many threads, once `go` is set."""
    os.environ[SLOTS_ENV] = slots
    client = _client(base_url, cache_dir, budget, name)
    client.check_credentials()
    ready.set()
    go.wait(60)
    with ThreadPoolExecutor(calls) as pool:
        replies = list(
            pool.map(
                lambda i: client.complete_text([{"role": "user", "content": f"{name}-{i}"}], purpose="p").value,
                range(calls),
            )
        )
    gate = client._transport._http._gate
    out.put((name, replies, gate.rate_limited_count, gate.shared_pauses_seen))


def _start(target, *args) -> tuple[Any, Any, Any]:
    ready, go = SPAWN.Event(), SPAWN.Event()
    process = SPAWN.Process(target=target, args=(*args, ready, go), daemon=True)
    return process, ready, go


def _wait_ready(process, ready) -> None:
    deadline = time.monotonic() + 120
    while not ready.wait(0.2):
        assert process.is_alive(), f"the child process ended early (exit {process.exitcode})"
        assert time.monotonic() < deadline


def _results(out, n: int) -> dict[str, tuple]:
    return {r[0]: r[1:] for r in (out.get(timeout=120) for _ in range(n))}


@pytest.mark.slow
def test_processes_together_stay_within_the_budget(tmp_path: Path) -> None:
    # three processes, eight threads each, budget 3: in total at most 3 requests in flight (each process alone
    # would send 3; without the machine-wide slots the server saw 9 at once)
    out = SPAWN.Queue()
    with serve(lambda body: "ok", delay_s=0.15) as server:
        started = [
            _start(_caller, server.base_url, str(tmp_path), str(tmp_path / "slots"), 3, f"w{i}", 8, out)
            for i in range(3)
        ]
        for process, _ready, _ in started:
            process.start()
        for process, ready, _ in started:
            _wait_ready(process, ready)
        for _, _, go in started:
            go.set()
        results = _results(out, 3)
        for process, _, _ in started:
            process.join(30)
        assert len(server.chat_requests) == 24
        assert server.max_seen_in_flight == 3
    assert all(replies == ["ok"] * 8 for replies, _, _ in results.values())


@pytest.mark.slow
def test_a_429_seen_by_one_process_pauses_the_other(tmp_path: Path) -> None:
    refused_at: list[float] = []
    arrivals: list[tuple[str, float]] = []
    lock = threading.Lock()

    def handler(body: dict) -> Any:
        content = body["messages"][-1]["content"]
        with lock:
            now = time.monotonic()
            if not refused_at:
                refused_at.append(now)
                return rate_limited(1.5)
            arrivals.append((content, now))
            return "ok"

    out = SPAWN.Queue()
    slots = str(tmp_path / "slots")
    with serve(handler) as server:
        first, first_ready, first_go = _start(_caller, server.base_url, str(tmp_path), slots, 8, "a", 1, out)
        second, second_ready, second_go = _start(_caller, server.base_url, str(tmp_path), slots, 8, "b", 4, out)
        first.start()
        second.start()
        _wait_ready(first, first_ready)
        _wait_ready(second, second_ready)
        first_go.set()
        deadline = time.monotonic() + 30
        while not refused_at and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # the 429 has reached process a
        second_go.set()
        results = _results(out, 2)
        first.join(30)
        second.join(30)
    # process b never saw a 429, yet sent nothing during the 1.5 s pause a's 429 asked for
    assert len(arrivals) == 5 and min(t for _, t in arrivals) >= refused_at[0] + 1.5 - 0.05
    assert results["a"][1:] == (1, 0) and results["b"][1:] == (0, 1)
    assert results["b"][0] == ["ok"] * 4


def _holder(base_url: str, cache_dir: str, slots: str, ready, go) -> None:
    os.environ[SLOTS_ENV] = slots
    client = _client(base_url, cache_dir, 1, "holder")
    ready.set()
    client.complete_text([{"role": "user", "content": "hang"}], purpose="p")


@pytest.mark.slow
def test_a_killed_holder_releases_its_slot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slots = tmp_path / "slots"
    monkeypatch.setenv(SLOTS_ENV, str(slots))
    release = threading.Event()

    def handler(body: dict) -> Any:
        if body["messages"][-1]["content"] == "hang":
            release.wait(60)
        return "ok"

    with serve(handler) as server:
        holder, ready, _ = _start(_holder, server.base_url, str(tmp_path), str(slots))
        holder.start()
        _wait_ready(holder, ready)
        deadline = time.monotonic() + 30
        while not server.chat_requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(server.chat_requests) == 1  # the holder's request is being served: it holds the only slot
        client = _client(server.base_url, str(tmp_path), 1, "main")
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(client.complete_text, [{"role": "user", "content": "mine"}], purpose="p")
            time.sleep(0.5)
            assert not waiting.done() and len(server.chat_requests) == 1  # held back by the holder's slot
            os.kill(holder.pid, signal.SIGKILL)
            holder.join(10)
            assert waiting.result(timeout=10).value == "ok"
        release.set()
    assert [r.json["messages"][-1]["content"] for r in server.chat_requests] == ["hang", "mine"]


def test_slots_are_exclusive_across_open_files_and_reused(tmp_path: Path) -> None:
    # MachineSlots objects stand for processes: flock conflicts between separately opened files
    a, b, c = (MachineSlots(tmp_path, "k", 2) for _ in range(3))
    mine, theirs = a.acquire(), b.acquire()
    assert {mine, theirs} == {0, 1}
    assert not c._try(0) and not c._try(1)
    a.release(mine)
    assert c._try(mine) and not c._try(theirs)


def test_the_pause_keeps_the_latest_end(tmp_path: Path) -> None:
    a, b = MachineSlots(tmp_path, "k", 1), MachineSlots(tmp_path, "k", 1)
    assert a.paused_until() == 0.0
    now = time.time()
    assert a.pause(now + 5) == pytest.approx(now + 5, abs=1e-3)
    assert b.pause(now + 2) == pytest.approx(now + 5, abs=1e-3)  # an earlier end does not shorten it
    assert b.paused_until() == pytest.approx(now + 5, abs=1e-3)
    gate = EndpointGate("m", 8, b)
    with gate._cond:
        gate._take_in_shared_pause()
    assert gate.limit == 4 and gate.paused_until > time.monotonic() + 4.5 and gate.shared_pauses_seen == 1
    with gate._cond:
        gate._take_in_shared_pause()  # the same pause is taken in once
    assert gate.limit == 4


def test_files_name_no_server_and_the_folder_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    key = endpoint_key("http://user:secret@host:8000/v1/", "m")
    assert key == endpoint_key("http://user:secret@host:8000/v1", "m") and len(key) == 16
    assert "secret" not in key and key != endpoint_key("http://user:secret@host:8000/v1", "m2")
    monkeypatch.setenv(SLOTS_ENV, "off")
    assert slots_dir() is None
    monkeypatch.delenv(SLOTS_ENV)
    assert slots_dir().name.startswith("eyt-endpoint-slots-")


def test_overhead_per_call_is_well_under_a_millisecond(tmp_path: Path) -> None:
    gate_here = EndpointGate("m", 4)
    gate_machine = EndpointGate("m", 4, MachineSlots(tmp_path, "k", 4))
    timings = {}
    for name, gate in (("process", gate_here), ("machine", gate_machine)):
        n = 2000
        started = time.perf_counter()
        for _ in range(n):
            with gate.slot():
                pass
            gate.answered(200, None)
        timings[name] = (time.perf_counter() - started) / n
    print(
        f"gate per call: in-process {timings['process'] * 1e6:.1f} us, machine-wide {timings['machine'] * 1e6:.1f} us"
    )
    assert timings["machine"] - timings["process"] < 0.0005


def _fork_holder(folder: str, out, ready, go) -> None:
    """Hold the only slot, fork a child that just lives on, then wait to be killed."""
    slots = MachineSlots(Path(folder), "k", 1)
    slots.acquire()
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    out.put(pid)
    ready.set()
    go.wait(60)


@pytest.mark.slow
def test_a_forked_child_does_not_keep_a_killed_parent_s_slot(tmp_path: Path) -> None:
    out = SPAWN.Queue()
    holder, ready, _ = _start(_fork_holder, str(tmp_path), out)
    holder.start()
    _wait_ready(holder, ready)
    child = out.get(timeout=10)
    try:
        other = MachineSlots(tmp_path, "k", 1)
        assert not other._try(0)  # held by the holder
        os.kill(holder.pid, signal.SIGKILL)
        holder.join(10)
        os.kill(child, 0)  # the forked child still lives
        assert other._try(0)  # yet the slot is free
    finally:
        os.kill(child, signal.SIGKILL)
