"""Per-endpoint budgets shared across clients and threads, and the shared pause after a 429, through the real
openai client against the localhost test server."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from eyt_dagster.core.model_ref import ModelRef
from resources.models.call_cache import CallCache
from resources.models.chat_client import OpenAIChatClient
from resources.models.endpoint_gates import EndpointGate, gate_for, retry_after_seconds

from support.localhost_server import rate_limited, serve

pytestmark = pytest.mark.unit


def make_client(base_url: str, cache: CallCache, role: str, **overrides: Any) -> OpenAIChatClient:
    ref = ModelRef(
        **(
            {
                "id": "gated",
                "provider": "openai",
                "model": "gated-model",
                "family": "stub",
                "base_url": base_url,
                "max_retries": 3,
            }
            | overrides
        )
    )
    return OpenAIChatClient(ref, role=role, cache=cache, seed=1, run_id="run-1")


def test_the_budget_of_an_endpoint_holds_across_clients_and_threads(tmp_path: Path) -> None:
    with CallCache(tmp_path / "calls.sqlite") as cache, serve(lambda body: "ok", delay_s=0.1) as server:
        # three client objects (three roles, one with another seed) of the same endpoint, budget 3
        clients = [make_client(server.base_url, cache, role, max_concurrency=3) for role in ("target", "judge")]
        clients.append(clients[0].with_seed(99))
        with ThreadPoolExecutor(24) as pool:
            replies = list(
                pool.map(
                    lambda i: (
                        clients[i % 3].complete_text([{"role": "user", "content": f"q{i}"}], purpose=f"p{i}").value
                    ),
                    range(24),
                )
            )
        assert replies == ["ok"] * 24 and len(server.chat_requests) == 24
        assert server.max_seen_in_flight == 3
        # another model on the same server is another endpoint with its own budget
        other = make_client(server.base_url, cache, "simulator", model="other-model", max_concurrency=2)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: other.complete_text([{"role": "user", "content": f"o{i}"}], purpose="o"), range(8)))
        assert gate_for(server.base_url, "other-model", 2).max_in_flight == 2


def test_a_429_pauses_every_caller_of_the_endpoint(tmp_path: Path) -> None:
    arrivals: list[float] = []
    refused_at: list[float] = []
    lock = threading.Lock()

    def handler(body: dict) -> Any:
        with lock:
            now = time.monotonic()
            if not refused_at:
                refused_at.append(now)
                return rate_limited(0.5)
            arrivals.append(now)
            return "ok"

    with CallCache(tmp_path / "calls.sqlite") as cache, serve(handler) as server:
        first = make_client(server.base_url, cache, "target", max_concurrency=8)
        others = [make_client(server.base_url, cache, role, max_concurrency=8) for role in ("judge", "simulator")]
        with ThreadPoolExecutor(7) as pool:
            futures = [pool.submit(first.complete_text, [{"role": "user", "content": "first"}], purpose="first")]
            while not refused_at:
                time.sleep(0.01)
            time.sleep(0.05)  # the 429 has reached the client
            futures += [
                pool.submit(others[i % 2].complete_text, [{"role": "user", "content": f"q{i}"}], purpose="q")
                for i in range(6)
            ]
            assert [f.result().value for f in futures] == ["ok"] * 7
    # nobody, not even clients that never saw the 429, sent during the 0.5 s pause
    assert len(arrivals) == 7 and min(arrivals) >= refused_at[0] + 0.5
    gate = gate_for(server.base_url, "gated-model", 8)
    assert gate.rate_limited_count == 1


def test_a_429_halves_the_budget_and_successes_grow_it_back() -> None:
    gate = EndpointGate("m", 8)
    gate.answered(429, None)
    assert gate.limit == 4 and gate.paused_until > time.monotonic() + 0.9  # no Retry-After: a 1 s pause
    gate.answered(429, 0.0)
    assert gate.limit == 2
    for expected in (3, 4, 5, 6, 7, 8, 8):
        gate.answered(200, None)
        assert gate.limit == expected


def test_retry_after_headers() -> None:
    assert retry_after_seconds({"retry-after-ms": "250"}) == pytest.approx(0.25)
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({}) is None
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 28 <= retry_after_seconds({"retry-after": when}) <= 31
