"""OpenAIChatClient and CallCache against a real HTTP stub server with the real openai client."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from eyt_dagster.core.errors import RequestRefusedError
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.eyt_bench.types import FinalVerdict
from resources.models.call_cache import CallCache
from resources.models.chat_client import (
    REASK_MAX_EXTRA_CHARS,
    OpenAIChatClient,
    ReplyCutError,
    ReplyParseError,
    extract_json_object,
)
from resources.models.chat_transport import SERVER_MESSAGE_MAX_CHARS, MissingApiKeyError, ModelCallError, request_body

from support.localhost_server import (
    ScriptedReplies,
    StubResponse,
    chat_completion,
    context_exceeded,
    error_response,
    llama_server_error,
    rate_limited,
    reject_response_formats,
    serve,
)

pytestmark = pytest.mark.unit

KEY_ENV = "EYT_TEST_STUB_KEY"
SECRET = "sk-test-S3CRET-do-not-leak-0123456789"
VALID = '{"completed": true, "satisfaction": 4, "rationale": "goal reached"}'
MESSAGES = [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Judge this dialogue."}]


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[CallCache]:
    with CallCache(tmp_path / "calls.sqlite") as c:
        yield c


def make_ref(base_url: str, **overrides: Any) -> ModelRef:
    fields: dict[str, Any] = dict(
        id="stub/judge-1",
        provider="openai",
        model="stub-model",
        family="stub",
        base_url=base_url,
        api_key_env=KEY_ENV,
        max_retries=2,
        parse_retries=2,
        timeout_s=10,
    )
    return ModelRef(**(fields | overrides))


def make_client(
    server: Any, cache: CallCache, *, seed: int = 7, role: str = "judge", **overrides: Any
) -> OpenAIChatClient:
    return OpenAIChatClient(make_ref(server.base_url, **overrides), role=role, cache=cache, seed=seed, run_id="run-1")


# -- text ---------------------------------------------------------------------------------------


def test_text_reply_usage_cost_and_request(cache: CallCache, localhost_server) -> None:
    replies = ScriptedReplies([chat_completion("Hello there.", prompt_tokens=1000, completion_tokens=500)])
    server = localhost_server(replies)
    client = make_client(server, cache, price_in_per_mtok=2.0, price_out_per_mtok=10.0, temperature=0.3)
    reply = client.complete_text(MESSAGES, purpose="respond")

    assert reply.value == "Hello there." and reply.raw == "Hello there."
    stats = reply.stats
    assert (stats.calls, stats.cache_hits, stats.tokens_in, stats.tokens_out) == (1, 0, 1000, 500)
    assert stats.cost_usd == pytest.approx(1000 * 2.0 / 1e6 + 500 * 10.0 / 1e6)
    assert stats.latency_s > 0

    [request] = server.chat_requests
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    body = request.json
    assert body["model"] == "stub-model" and body["messages"] == MESSAGES
    assert (body["seed"], body["temperature"], body["max_tokens"]) == (7, 0.3, 1024)
    assert "reasoning_effort" not in body and "response_format" not in body

    [row] = cache.ledger("run-1")
    assert row["role"] == "judge" and row["model_id"] == "stub/judge-1" and row["purpose"] == "respond"
    assert row["ok"] and not row["cached"] and (row["tokens_in"], row["tokens_out"]) == (1000, 500)
    assert row["cost_usd"] == pytest.approx(stats.cost_usd)


def test_thinking_and_extra_body_are_sent(cache: CallCache, localhost_server) -> None:
    server = localhost_server(ScriptedReplies(["<think>hmm</think>\nAnswer."]))
    client = make_client(server, cache, thinking=True, extra_body={"top_k": 20})
    reply = client.complete_text(MESSAGES, purpose="respond")
    assert reply.value == reply.raw == "Answer." and reply.reasoning == "hmm"  # the reasoning kept apart
    body = server.chat_requests[0].json
    assert body["reasoning_effort"] == "medium" and body["top_k"] == 20


def test_no_api_key_env_sends_placeholder(cache: CallCache, localhost_server) -> None:
    server = localhost_server(ScriptedReplies(["hi"]))
    make_client(server, cache, api_key_env=None).complete_text(MESSAGES, purpose="p")
    assert server.chat_requests[0].headers["authorization"] == "Bearer not-needed"


# -- JSON -----------------------------------------------------------------------------------------


def test_json_reply_validated_with_json_schema(cache: CallCache, localhost_server) -> None:
    server = localhost_server(ScriptedReplies([f"Sure! Here it is:\n```json\n{VALID}\n```"]))
    reply = make_client(server, cache).complete_json(MESSAGES, FinalVerdict, purpose="final")
    assert reply.value == FinalVerdict(completed=True, satisfaction=4, rationale="goal reached")
    assert reply.stats.calls == 1
    sent = server.chat_requests[0].json
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "FinalVerdict", "schema": FinalVerdict.model_json_schema()},
    }
    assert sent["messages"] == MESSAGES  # the schema travels in response_format, not the prompt


def test_invalid_json_is_reasked_with_the_error(cache: CallCache, localhost_server) -> None:
    bad = '{"completed": true, "satisfaction": 9}'
    server = localhost_server(ScriptedReplies([bad, VALID]))
    reply = make_client(server, cache).complete_json(MESSAGES, FinalVerdict, purpose="final")
    assert reply.value.satisfaction == 4
    assert reply.stats.calls == 2 and reply.stats.tokens_out > 0
    reask = server.chat_requests[1].json["messages"]
    assert reask[:2] == MESSAGES and reask[2] == {"role": "assistant", "content": bad}
    assert reask[3]["role"] == "user" and "satisfaction" in reask[3]["content"] and "5" in reask[3]["content"]
    first, second = cache.ledger()
    assert not first["ok"] and "satisfaction" in first["error"] and second["ok"]


def test_always_invalid_raises_reply_parse_error(cache: CallCache, localhost_server) -> None:
    """The first reply holds no JSON object: the server ignores response_format, so the same question is asked with
    the schema in the prompt (not a re-ask); then the re-asks as usual."""
    server = localhost_server(ScriptedReplies(["not json at all"] * 5))
    client = make_client(server, cache, parse_retries=2)
    with pytest.raises(ReplyParseError) as info:
        client.complete_json(MESSAGES, FinalVerdict, purpose="final")
    assert len(server.chat_requests) == 4 and client.json_mode == "none"
    assert "response_format" in server.chat_requests[0].json and "response_format" not in server.chat_requests[1].json
    err = info.value
    assert err.model_id == "stub/judge-1" and err.purpose == "final" and err.raw == "not json at all"
    assert "no JSON object" in err.error and "stub/judge-1" in str(err)
    assert [row["ok"] for row in cache.ledger()] == [False, False, False, False]
    assert [row["failure"] for row in cache.ledger()] == ["format_ignored", *["invalid_reply"] * 3]


def test_extract_json_object_variants() -> None:
    assert extract_json_object('{"a": {"b": 1}} trailing {x}') == {"a": {"b": 1}}
    assert extract_json_object('<think>{not this}</think>{"a": 2}') == {"a": 2}
    assert extract_json_object('```\n{"a": 3}\n```') == {"a": 3}
    with pytest.raises(ValueError):
        extract_json_object("[1, 2]")


# -- structured-output fallback -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rejected", "final_mode"), [({"json_schema"}, "json_object"), ({"json_schema", "json_object"}, "none")]
)
def test_structured_output_falls_back_and_remembers(
    cache: CallCache, rejected: set[str], final_mode: str, localhost_server
) -> None:
    server = localhost_server(reject_response_formats(rejected, ScriptedReplies([VALID, VALID])))
    client = make_client(server, cache)
    assert client.complete_json(MESSAGES, FinalVerdict, purpose="final").value.satisfaction == 4
    assert client.json_mode == final_mode
    used = server.chat_requests[-1].json
    assert (used.get("response_format") or {}).get("type") == (None if final_mode == "none" else final_mode)
    assert "JSON schema" in used["messages"][0]["content"]  # the schema is now in the prompt
    assert used["messages"][0]["content"].startswith("You are a judge.")

    before = len(server.chat_requests)
    client.complete_json([{"role": "user", "content": "Another dialogue."}], FinalVerdict, purpose="final")
    assert len(server.chat_requests) == before + 1  # straight to the remembered mode
    assert make_client(server, cache).json_mode == final_mode  # remembered for later runs too
    assert [row["ok"] for row in cache.ledger()][: len(rejected)] == [False] * len(rejected)


def test_explicit_json_schema_does_not_fall_back(cache: CallCache, localhost_server) -> None:
    server = localhost_server(reject_response_formats({"json_schema"}, ScriptedReplies([VALID])))
    client = make_client(server, cache, structured_output="json_schema")
    with pytest.raises(ModelCallError) as info:
        client.complete_json(MESSAGES, FinalVerdict, purpose="final")
    assert info.value.status == 400 and len(server.chat_requests) == 1


# -- HTTP errors and retries ----------------------------------------------------------------------


def test_429_with_retry_after_is_retried_after_the_delay(cache: CallCache, localhost_server) -> None:
    server = localhost_server(ScriptedReplies([rate_limited(1), "ok after waiting"]))
    client = make_client(server, cache)
    started = time.monotonic()
    reply = client.complete_text(MESSAGES, purpose="respond")
    elapsed = time.monotonic() - started
    assert reply.value == "ok after waiting"
    assert 0.95 <= elapsed < 3.0
    assert len(server.chat_requests) == 2
    assert reply.stats.calls == 1  # one logical call; the transport retry is in the ledger
    [row] = cache.ledger()
    assert row["ok"] and row["retries"] == 1


def test_retry_after_beyond_two_minutes_is_not_retried(cache: CallCache, localhost_server) -> None:
    server = localhost_server(ScriptedReplies([rate_limited(600), "never reached"]))
    with pytest.raises(ModelCallError) as info:
        make_client(server, cache).complete_text(MESSAGES, purpose="respond")
    assert info.value.status == 429 and len(server.chat_requests) == 1


def test_a_refused_request_keeps_the_servers_reason_in_the_error_and_the_ledger(
    cache: CallCache, localhost_server
) -> None:
    """llama-server refuses a prompt longer than a slot's context with HTTP 400 and its error JSON: the reason
    reaches the raised error (so the item's error row and the run log) and the ledger; it is not retried."""
    reason = "request (4569 tokens) exceeds the available context size (4096 tokens), try increasing it"
    server = localhost_server(lambda body: context_exceeded(4569, 4096))
    with pytest.raises(RequestRefusedError) as info:
        make_client(server, cache, role="simulator").complete_text(MESSAGES, purpose="next_turn")
    assert len(server.chat_requests) == 1
    err = info.value
    assert err.kind == "context_exceeded" and reason in str(err) and "HTTP 400" in str(err)
    assert "larger context per request" in str(err) and "Error code" not in str(err)
    [row] = cache.ledger()
    assert row["failure"] == "context_exceeded" and reason in row["error"] and row["retries"] == 0


@pytest.mark.parametrize(
    ("response", "kind", "reason"),
    [
        (llama_server_error(400, "'messages' must be an array", "invalid_request_error"), "refused", "must be an"),
        (StubResponse(413, "payload too large for this proxy"), "refused", "payload too large for this proxy"),
        (StubResponse(400, ""), "refused", "the server gave no reason"),
        (error_response(400, "maximum context length is 2048 tokens", code="context_length_exceeded"), None, None),
    ],
)
def test_refusals_name_the_reason_the_server_gave(cache: CallCache, response, kind, reason, localhost_server) -> None:
    server = localhost_server(lambda body: response)
    with pytest.raises(RequestRefusedError) as info:
        make_client(server, cache).complete_text(MESSAGES, purpose="respond")
    [row] = cache.ledger()
    assert info.value.kind == row["failure"] == (kind or "context_exceeded")
    assert (reason or "maximum context length is 2048 tokens") in str(info.value)


def test_a_server_reason_is_cut_and_never_carries_the_key(cache: CallCache, localhost_server) -> None:
    echo = llama_server_error(400, f"bad request from key {SECRET}: " + "x" * 2000, "invalid_request_error")
    server = localhost_server(lambda body: echo)
    with pytest.raises(RequestRefusedError) as info:
        make_client(server, cache).complete_text(MESSAGES, purpose="respond")
    [row] = cache.ledger()
    for text in (str(info.value), row["error"]):
        assert SECRET not in text and "bad request from key ***" in text
        assert "x" * (SERVER_MESSAGE_MAX_CHARS + 1) not in text and "authorization" not in text.lower()


def test_server_errors_exhaust_retries_and_raise(cache: CallCache, localhost_server) -> None:
    failing = StubResponse(503, {"error": {"message": "overloaded"}}, {"retry-after-ms": "20"})
    server = localhost_server(lambda body: failing)
    client = make_client(server, cache, max_retries=2)
    with pytest.raises(ModelCallError) as info:
        client.complete_text(MESSAGES, purpose="respond")
    assert len(server.chat_requests) == 3
    err = info.value
    assert err.status == 503 and err.model_id == "stub/judge-1" and err.base_url == server.base_url
    assert "503" in str(err) and server.base_url in str(err) and "stub/judge-1" in str(err)
    assert err.__cause__ is None and err.__suppress_context__
    [row] = cache.ledger()
    assert not row["ok"] and "503" in row["error"] and row["failure"] == "http"
    assert row["retries"] == 2  # the SDK's retries are in the ledger also for a call that failed
    assert len(cache) == 0  # failures are never cached


def test_timeout_raises_model_call_error(cache: CallCache, localhost_server) -> None:
    def slow(body: dict[str, Any]) -> str:
        time.sleep(1.0)
        return "too late"

    server = localhost_server(slow)
    client = make_client(server, cache, timeout_s=0.3, max_retries=0)
    with pytest.raises(ModelCallError, match="timed out"):
        client.complete_text(MESSAGES, purpose="respond")


def test_a_timeout_is_retried_once_then_names_timeout_s(cache: CallCache, localhost_server) -> None:
    server = localhost_server(lambda body: "too late", delay_s=1.0)
    client = make_client(server, cache, timeout_s=0.3, max_retries=4)
    started = time.monotonic()
    with pytest.raises(ModelCallError) as info:
        client.complete_text(MESSAGES, purpose="respond")
    elapsed = time.monotonic() - started
    arrived = len(server.chat_requests)
    assert arrived == 2  # not 1 + max_retries: the same request would time out again
    message = str(info.value)
    assert "timed out after 0.3 s twice" in message and "raise timeout_s" in message and "stub/judge-1" in message
    assert elapsed < 2.0  # two timeouts of 0.3 s and one backoff of at most 0.5 s
    [row] = cache.ledger()
    assert row["retries"] == 1 and row["failure"] == "timeout" and not row["ok"]
    assert "timeout_s" in row["error"]


def test_a_timeout_then_a_reply_counts_one_retry(cache: CallCache, localhost_server) -> None:
    state = {"calls": 0}

    def slow_once(body: dict[str, Any]) -> str:
        state["calls"] += 1
        if state["calls"] == 1:
            time.sleep(1.0)
        return "in time"

    server = localhost_server(slow_once)
    reply = make_client(server, cache, timeout_s=0.3).complete_text(MESSAGES, purpose="respond")
    assert reply.value == "in time" and len(server.chat_requests) == 2
    [row] = cache.ledger()
    assert row["ok"] and row["retries"] == 1


def test_rate_limited_server_is_waited_for_and_retries_are_counted(cache: CallCache, localhost_server) -> None:
    server = localhost_server(lambda body: "ok", rate_limit=(1, 1.0))
    client = make_client(server, cache)
    client.complete_text(MESSAGES, purpose="first")
    started = time.monotonic()
    assert client.complete_text([{"role": "user", "content": "second"}], purpose="second").value == "ok"
    elapsed = time.monotonic() - started
    assert server.refused >= 1 and len(server.chat_requests) == 2 + server.refused
    first, second = cache.ledger()
    assert first["retries"] == 0 and second["ok"] and second["retries"] == server.refused
    assert 0.9 <= elapsed < 3.5  # Retry-After: 1


def test_many_requests_at_once_and_a_limit_on_requests_in_flight(cache: CallCache) -> None:
    def ask(client: OpenAIChatClient, i: int) -> str:
        return client.complete_text([{"role": "user", "content": f"question {i}"}], purpose=f"p{i}").value

    with serve(lambda body: "ok", delay_s=0.4) as server:
        client = make_client(server, cache)
        started = time.monotonic()
        with ThreadPoolExecutor(6) as pool:
            assert list(pool.map(lambda i: ask(client, i), range(6))) == ["ok"] * 6
        assert time.monotonic() - started < 6 * 0.4 and server.max_seen_in_flight >= 3

    with serve(lambda body: "ok", delay_s=0.3, max_in_flight=2) as server:
        client = make_client(server, cache, max_retries=4)
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(lambda i: ask(client, 10 + i), range(4))) == ["ok"] * 4
        assert server.refused >= 1 and server.max_seen_in_flight <= 2
    assert sum(row["retries"] for row in cache.ledger()[6:]) == server.refused


def test_request_body_is_the_arguments_with_extra_body_merged() -> None:
    kwargs = {"model": "m", "messages": MESSAGES, "seed": 7, "extra_body": {"top_k": 5, "seed": 8}}
    # extra_body's keys go to the top level of the body and win, as the SDK's extra_json does
    assert request_body(kwargs) == {"model": "m", "messages": MESSAGES, "seed": 8, "top_k": 5}
    assert request_body({"model": "m", "messages": MESSAGES}) == {"model": "m", "messages": MESSAGES}


def test_the_same_request_from_threads_at_once_is_sent_once(cache: CallCache, localhost_server) -> None:
    """Four threads ask the same question while the first is still waiting for its reply: one network call,
    three cache hits, as when they ask one after another."""
    server = localhost_server(lambda body: "ok", delay_s=0.3)
    client = make_client(server, cache, max_concurrency=8)
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda _: client.complete_text(MESSAGES, purpose="same"), range(4)))
    assert len(server.chat_requests) == 1
    assert [r.value for r in replies] == ["ok"] * 4
    assert sorted(r.stats.calls for r in replies) == [0, 0, 0, 1]
    assert [row["cached"] for row in cache.ledger()].count(True) == 3


# -- replies cut at max_tokens, and the size of re-asks ---------------------------------------------

CUT = '{"completed": true, "satisfaction": 4, "rationale": "' + "and then again " * 300  # never closed


def test_reply_cut_by_a_full_context_says_so_not_max_tokens(cache: CallCache, localhost_server) -> None:
    """llama-server ends a reply with finish_reason=length when the slot's context fills up, after fewer tokens
    than max_tokens: raising max_tokens would not help, so the error says what would."""
    cut = chat_completion(CUT, prompt_tokens=4021, completion_tokens=75, finish_reason="length")
    server = localhost_server(ScriptedReplies([cut] * 3))
    client = make_client(server, cache, parse_retries=2)
    with pytest.raises(ReplyCutError) as info:
        client.complete_json(MESSAGES, FinalVerdict, purpose="final")
    message = str(info.value)
    assert "after 75 tokens" in message and "below max_tokens=1024" in message and "context" in message
    assert "raise max_tokens" not in message and "stub/judge-1" in message
    assert [row["failure"] for row in cache.ledger()] == ["cut_reply"] * 3


def test_reply_cut_at_max_tokens_is_its_own_failure(cache: CallCache, localhost_server) -> None:
    cut = chat_completion(CUT, completion_tokens=1024, finish_reason="length")
    server = localhost_server(ScriptedReplies([cut] * 3))
    client = make_client(server, cache, parse_retries=2)
    with pytest.raises(ReplyCutError) as info:
        client.complete_json(MESSAGES, FinalVerdict, purpose="final")
    message = str(info.value)
    assert "cut at max_tokens=1024" in message and "raise max_tokens" in message and "stub/judge-1" in message
    assert isinstance(info.value, ReplyParseError)  # still a per-item error of the dialogue
    assert len(server.chat_requests) == 3
    rows = cache.ledger()
    assert [row["failure"] for row in rows] == ["cut_reply"] * 3
    assert all("max_tokens=1024" in row["error"] for row in rows)
    assert cache.summary()["judge"]["failures_by_kind"] == {"cut_reply": 3}
    for request in server.chat_requests[1:]:
        sent = request.json["messages"]
        assert all("and then again and then again" not in m["content"] for m in sent)  # not pasted back
        assert sent[:2] == MESSAGES and "cut off" in sent[-1]["content"]
        assert _chars(sent) - _chars(MESSAGES) <= REASK_MAX_EXTRA_CHARS


def test_a_cut_reply_then_a_shorter_one(cache: CallCache, localhost_server) -> None:
    server = localhost_server(ScriptedReplies([chat_completion(CUT, finish_reason="length"), VALID]))
    reply = make_client(server, cache).complete_json(MESSAGES, FinalVerdict, purpose="final")
    assert reply.value.satisfaction == 4 and reply.stats.calls == 2
    first, second = cache.ledger()
    assert (first["ok"], first["failure"], second["ok"], second["failure"]) == (False, "cut_reply", True, None)


def _chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(m["content"]) for m in messages)


@pytest.mark.parametrize("mode", ["json_schema", "json_object"])
def test_reask_prompts_stay_within_a_bounded_size(cache: CallCache, mode: str, localhost_server) -> None:
    huge = "not json " * 2500  # 22,500 characters, finish_reason=stop
    server = localhost_server(ScriptedReplies([huge] * 4))
    client = make_client(server, cache, parse_retries=3, structured_output=mode)
    with pytest.raises(ReplyParseError):
        client.complete_json(MESSAGES, FinalVerdict, purpose="final")
    sizes = [_chars(r.json["messages"]) for r in server.chat_requests]
    assert len(sizes) == 4 and all(size - sizes[0] <= 1500 for size in sizes[1:]), sizes
    assert max(sizes) - sizes[0] <= REASK_MAX_EXTRA_CHARS == 1300
    # every re-ask is a request of its own (it names its attempt), so none is answered from the cache
    assert len({json.dumps(r.json["messages"]) for r in server.chat_requests}) == 4


# -- cache ------------------------------------------------------------------------------------------


def test_cache_replays_identical_calls_without_network(cache: CallCache, localhost_server) -> None:
    server = localhost_server(lambda body: f"reply #{len(server.requests)}")
    client = make_client(server, cache, price_in_per_mtok=1.0, price_out_per_mtok=1.0)
    first = client.complete_text(MESSAGES, purpose="respond")
    second = client.complete_text(MESSAGES, purpose="respond")
    assert len(server.chat_requests) == 1
    assert second.value == first.value
    assert (second.stats.calls, second.stats.cache_hits) == (0, 1)
    assert second.stats.tokens_out == first.stats.tokens_out and second.stats.cost_usd == first.stats.cost_usd

    # a rerun: new client, same cache file, no key needed for a replay
    rerun = OpenAIChatClient(client.ref, role="judge", cache=CallCache(cache.path), seed=7)
    assert rerun.complete_text(MESSAGES, purpose="respond").value == first.value
    assert len(server.chat_requests) == 1

    make_client(server, cache, seed=8).complete_text(MESSAGES, purpose="respond")
    assert len(server.chat_requests) == 2
    make_client(server, cache, temperature=0.7).complete_text(MESSAGES, purpose="respond")
    assert len(server.chat_requests) == 3
    make_client(server, cache, max_tokens=99).complete_text(MESSAGES, purpose="respond")
    assert len(server.chat_requests) == 4
    rows = cache.ledger("run-1")
    assert [row["cached"] for row in rows] == [False, True, False, False, False]
    summary = cache.summary()["judge"]
    assert summary["calls"] == 6 and summary["cache_hits"] == 2 and summary["network_calls"] == 4
    assert summary["spent_usd"] < summary["cost_usd"]


def test_a_reply_that_did_not_validate_is_asked_again_by_a_later_run(cache: CallCache, localhost_server) -> None:
    server = localhost_server(ScriptedReplies(['{"completed": "maybe"}', VALID, VALID]))
    first = make_client(server, cache).complete_json(MESSAGES, FinalVerdict, purpose="final")
    again = make_client(server, cache).complete_json(MESSAGES, FinalVerdict, purpose="final")
    replay = make_client(server, cache).complete_json(MESSAGES, FinalVerdict, purpose="final")
    # run 1: the invalid reply, then the re-ask's valid one; run 2: the original request again, answered validly
    # (the re-ask is not needed); run 3: everything from the cache
    assert len(server.chat_requests) == 3
    assert server.chat_requests[2].json["messages"] == MESSAGES
    assert first.value.satisfaction == again.value.satisfaction == replay.value.satisfaction == 4
    assert (first.stats.calls, again.stats.calls, replay.stats.calls, replay.stats.cache_hits) == (2, 1, 0, 1)
    first_key = cache.ledger()[0]["cache_key"]
    [rejected] = cache.rejected(first_key)
    assert (rejected.attempt, rejected.failure, rejected.reply.text) == (1, "invalid_reply", '{"completed": "maybe"}')
    assert "did not validate" in (rejected.error or "")
    assert cache.get(first_key) is not None and cache.get(first_key).text == VALID


def test_a_request_is_not_sent_again_after_reply_attempts_unusable_replies(cache: CallCache, localhost_server) -> None:
    bad = '{"completed": "maybe"}'
    server = localhost_server(ScriptedReplies([bad] * 3))
    for _ in range(3):  # three runs, each asking once (no re-ask): the third reaches the limit of two
        with pytest.raises(ReplyParseError) as failed:
            make_client(server, cache, parse_retries=0, reply_attempts=2).complete_json(
                MESSAGES, FinalVerdict, purpose="final"
            )
    assert len(server.chat_requests) == 2  # the third run sent nothing
    assert "not asked again: 2 replies to this request were unusable across runs (reply_attempts: 2" in str(
        failed.value
    )
    key = cache.ledger()[0]["cache_key"]
    assert [r.attempt for r in cache.rejected(key)] == [1, 2]
    assert [row["cached"] for row in cache.ledger()] == [0, 0, 1]


def test_a_cut_text_reply_is_used_now_and_asked_again_by_a_later_run(cache: CallCache, localhost_server) -> None:
    cut = chat_completion("The answer was cut", finish_reason="length")
    server = localhost_server(ScriptedReplies([cut, chat_completion("The whole answer.")]))
    now = make_client(server, cache).complete_text(MESSAGES, purpose="respond")
    later = make_client(server, cache).complete_text(MESSAGES, purpose="respond")
    replay = make_client(server, cache).complete_text(MESSAGES, purpose="respond")
    assert now.value == "The answer was cut" and now.stats.cut_replies == 1
    assert later.value == replay.value == "The whole answer." and later.stats.cut_replies == 0
    assert len(server.chat_requests) == 2 and replay.stats.cache_hits == 1
    [rejected] = cache.rejected(cache.ledger()[0]["cache_key"])
    assert rejected.failure == "cut_reply" and rejected.reply.finish_reason == "length"


def test_cache_key_is_canonical() -> None:
    base = dict(model="m", base_url="http://h/v1", messages=MESSAGES, seed=1)
    a = CallCache.key(settings={"temperature": 0.0, "max_tokens": 5}, **base)
    b = CallCache.key(settings={"max_tokens": 5, "temperature": 0.0}, **base | {"base_url": "http://h/v1/"})
    assert a == b and len(a) == 64
    assert a != CallCache.key(settings={"temperature": 0.0, "max_tokens": 5}, **base | {"seed": 2})


def test_a_ledger_written_before_the_failure_column_gets_it(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as old:
        old.execute(
            "CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, ts TEXT NOT NULL, run_id TEXT, role TEXT NOT NULL,"
            " model_id TEXT NOT NULL, purpose TEXT NOT NULL, cache_key TEXT, cached INTEGER NOT NULL,"
            " tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, cost_usd REAL NOT NULL, latency_s REAL NOT NULL,"
            " retries INTEGER NOT NULL, ok INTEGER NOT NULL, error TEXT)"
        )
        old.execute(
            "INSERT INTO ledger (ts, role, model_id, purpose, cached, tokens_in, tokens_out, cost_usd, latency_s,"
            " retries, ok, error) VALUES ('t', 'judge', 'm', 'p', 0, 0, 0, 0, 0, 4, 0, 'timed out')"
        )
    with CallCache(path) as cache:
        cache.record(role="judge", model_id="m", purpose="p", cached=False, ok=False, retries=1, failure="timeout")
        old_row, new_row = cache.ledger()
        assert old_row["failure"] is None and new_row["failure"] == "timeout"
        assert cache.summary()["judge"]["failures_by_kind"] == {"unknown": 1, "timeout": 1}
        with pytest.raises(ValueError, match="unknown failure kind"):
            cache.record(role="judge", model_id="m", purpose="p", cached=False, ok=False, failure="oops")


def test_cache_is_thread_safe(cache: CallCache) -> None:
    def work(i: int) -> None:
        for j in range(25):
            cache.put(f"k{i}-{j}", model="m", text="t", tokens_in=1, tokens_out=1, latency_s=0.1)
            cache.record(role="simulator", model_id="m", purpose="p", cached=False, tokens_in=1)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 200 and cache.summary()["simulator"]["tokens_in"] == 200


# -- secrets and keys -------------------------------------------------------------------------------


def test_key_never_reaches_cache_ledger_logs_or_errors(
    cache: CallCache, caplog: pytest.LogCaptureFixture, localhost_server
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = error_response(401, f"Incorrect API key provided: {SECRET}", type_="invalid_request_error")
    server = localhost_server(ScriptedReplies([VALID, "not json", "not json", echo]))
    client = make_client(server, cache, parse_retries=0)
    client.complete_json(MESSAGES, FinalVerdict, purpose="final")
    with pytest.raises(ReplyParseError) as parse_error:
        client.complete_json([{"role": "user", "content": "again"}], FinalVerdict, purpose="final")
    with pytest.raises(ModelCallError) as call_error:
        client.complete_text(MESSAGES, purpose="respond")
    assert server.chat_requests[0].headers["authorization"] == f"Bearer {SECRET}"  # it was really sent
    assert call_error.value.status == 401 and "***" in str(call_error.value)
    texts = [str(parse_error.value), str(call_error.value), repr(client), caplog.text, json.dumps(cache.ledger())]
    assert all(SECRET not in text for text in texts)
    kept = [cache.stored_request(row["cache_key"]) for row in cache.ledger()]
    assert len(kept) == 4 and all(kept) and all(SECRET not in json.dumps(r) for r in kept)  # stored compressed
    cache.close()  # checkpoint the WAL, then read every byte SQLite wrote
    for path in cache.path.parent.glob(cache.path.name + "*"):
        assert SECRET.encode() not in path.read_bytes(), path


def test_the_request_sent_is_kept_under_its_key(cache: CallCache, localhost_server) -> None:
    """The call cache keeps the exact request behind each key (what a call's page in eyt view shows), also for a
    call that failed; replaying from the cache stores nothing new."""
    server = localhost_server(ScriptedReplies(["first reply", error_response(400, "bad request")]))
    client = make_client(server, cache, max_retries=0, temperature=0.2)
    client.complete_text(MESSAGES, purpose="respond")
    client.complete_text(MESSAGES, purpose="respond")  # from the cache
    with pytest.raises(ModelCallError):
        client.complete_text([{"role": "user", "content": "fails"}], purpose="respond")
    sent, failed = server.chat_requests
    ok_row, _, failed_row = cache.ledger("run-1")
    kept = cache.stored_request(ok_row["cache_key"])
    assert kept is not None and CallCache.key_of(kept) == ok_row["cache_key"]
    assert kept["messages"] == sent.json["messages"] == MESSAGES and kept["model"] == sent.json["model"]
    assert kept["seed"] == 7 and kept["settings"]["temperature"] == 0.2 and kept["base_url"] == server.base_url
    failed_kept = cache.stored_request(failed_row["cache_key"])
    assert failed_kept is not None and failed_kept["messages"] == failed.json["messages"]
    assert cache.stored_request("0" * 64) is None


def test_a_kept_request_loses_url_credentials_and_a_key_in_its_settings(cache: CallCache, localhost_server) -> None:
    server = localhost_server(ScriptedReplies(["hi"]))
    url = server.base_url.replace("http://", "http://someone:pw-123@")
    client = OpenAIChatClient(
        make_ref(url, extra_body={"note": f"key {SECRET}"}), role="judge", cache=cache, seed=7, run_id="run-1"
    )
    client.complete_text(MESSAGES, purpose="respond")
    [row] = cache.ledger("run-1")
    kept = cache.stored_request(row["cache_key"])
    assert (
        kept is not None
        and kept["base_url"] == server.base_url
        and kept["settings"]["extra_body"] == {"note": "key ***"}
    )
    assert CallCache.key_of(kept) != row["cache_key"]  # what was sent had them: the page says it was altered


def test_missing_env_var_names_variable_model_and_fix(
    cache: CallCache, monkeypatch: pytest.MonkeyPatch, localhost_server
) -> None:
    server = localhost_server(ScriptedReplies(["hi"]))
    make_client(server, cache).complete_text(MESSAGES, purpose="respond")
    monkeypatch.delenv(KEY_ENV)
    client = make_client(server, cache)
    assert client.complete_text(MESSAGES, purpose="respond").value == "hi"  # a replay needs no key
    with pytest.raises(MissingApiKeyError) as info:
        client.complete_text([{"role": "user", "content": "new"}], purpose="respond")
    assert len(server.requests) == 1
    assert cache.ledger()[-1]["error"] == f"{KEY_ENV} is not set"
    message = str(info.value)
    assert KEY_ENV in message and "stub/judge-1" in message and f"export {KEY_ENV}=" in message


def test_stub_server_404s_other_paths(localhost_server) -> None:
    import urllib.error
    import urllib.request

    server = localhost_server(ScriptedReplies([]))
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(server.base_url + "/models", timeout=5)
    assert info.value.code == 404


def test_the_schema_sent_is_pydantics_and_a_fresh_copy_each_time() -> None:
    from eyt_dagster.eyt_bench.types import turn_scores_model
    from resources.models.chat_client import json_schema_of

    schema = turn_scores_model((0.0, 0.5, 1.0))
    first = json_schema_of(schema)
    assert first == schema.model_json_schema()
    first["properties"].clear()  # a caller changing its copy does not change the next request's schema
    assert json_schema_of(schema) == schema.model_json_schema()
