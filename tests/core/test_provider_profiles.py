"""Provider profiles and what a refusal teaches (eyt_dagster/core/provider_profiles.py), reasoning kept apart
(eyt_dagster/core/reasoning.py), and the chat client against the localhost server behaving as each provider's public
documentation says (tests/support/provider_behaviours.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.provider_profiles import (
    PROFILE_NAMES,
    PROFILES,
    Adaptation,
    ProfileName,
    Unadaptable,
    adapt,
    adaptation_for_refusal,
    changes_condition,
    detect_profile,
    nearest_effort,
)
from eyt_dagster.core.reasoning import reasoning_tokens, split_inline, split_reply
from eyt_dagster.eyt_bench.types import FinalVerdict
from resources.models.call_cache import CallCache
from resources.models.chat_client import OpenAIChatClient
from resources.models.chat_transport import IncompatibleEndpointError, RefusedRequestError

from support.localhost_server import ScriptedReplies, StubResponse, chat_completion, error_response, serve
from support.provider_behaviours import (
    BEHAVIOURS,
    HIDDEN_REASONING_TOKENS,
    REASONING_MARK,
    behave_as,
    returns_reasoning,
)

HERE = Path(__file__).resolve().parent  # a fresh process imports this module from here
VALID = '{"completed": true, "satisfaction": 4, "rationale": "goal reached"}'
MESSAGES = [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Judge this dialogue."}]
# what a provider's documentation shows, as its server sends it
MAX_TOKENS_REFUSED = {
    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead.",
    "type": "invalid_request_error",
    "param": "max_tokens",
    "code": "unsupported_parameter",
}
TEMPERATURE_REFUSED = {
    "message": "Unsupported value: 'temperature' does not support 0.7 with this model. "
    "Only the default (1) value is supported.",
    "type": "invalid_request_error",
    "param": "temperature",
    "code": "unsupported_value",
}


def ref(base_url: str, **overrides: Any) -> ModelRef:
    fields = {
        "id": "remote-1",
        "provider": "openai",
        "model": "remote-model",
        "family": "remote",
        "base_url": base_url,
        "max_retries": 0,
        **overrides,
    }
    return ModelRef.model_validate(fields)


def client(base_url: str, cache: CallCache, **overrides: Any) -> OpenAIChatClient:
    return OpenAIChatClient(ref(base_url, **overrides), role="target", cache=cache, seed=7, run_id="run-1")


@pytest.fixture
def cache(tmp_path: Path) -> CallCache:
    return CallCache(tmp_path / "calls.sqlite")


def judge_verdict(body: dict[str, Any]) -> str:
    """A model that answers every question with a valid verdict (a JSON question) or a sentence."""
    wants_json = body.get("response_format") or "JSON schema" in json.dumps(body["messages"])
    return VALID if wants_json else "A plain answer."


# -- profiles ------------------------------------------------------------------------------------------------


@pytest.mark.unit
def test_the_slate_names_exactly_the_profiles_there_are() -> None:
    assert PROFILE_NAMES == get_args(ProfileName) and set(PROFILES) == set(PROFILE_NAMES) - {"auto"}
    with pytest.raises(ValidationError) as info:
        ref("http://127.0.0.1:1/v1", profile="openrouter")
    assert "profile" in str(info.value) and "'openai-reasoning'" in str(info.value)  # the choices named


@pytest.mark.unit
@pytest.mark.parametrize(
    ("base_url", "model", "expected"),
    [
        ("https://api.openai.com/v1", "gpt-5-mini", "openai-reasoning"),
        ("https://api.openai.com/v1", "o4-mini", "openai-reasoning"),
        ("https://api.openai.com/v1", "o3", "openai-reasoning"),
        ("https://api.openai.com/v1", "gpt-4.1-mini", "openai"),
        ("https://api.anthropic.com/v1/", "claude-sonnet-4-6", "anthropic"),
        ("https://generativelanguage.googleapis.com/v1beta/openai/", "gemini-2.5-flash", "gemini"),
        ("http://localhost:11434/v1", "qwen3:8b", "ollama"),
        ("http://127.0.0.1:8000/v1", "Qwen/Qwen3-8B", "generic"),
    ],
)
def test_auto_picks_the_profile_from_the_base_url_and_model(base_url: str, model: str, expected: str) -> None:
    assert detect_profile(base_url, model) == expected


@pytest.mark.unit
def test_a_reasoning_profile_adapts_the_request_and_says_so() -> None:
    body = {"model": "gpt-5-mini", "messages": [], "max_tokens": 1024, "temperature": 0.7, "reasoning_effort": "medium"}
    notes = adapt(body, PROFILES["openai-reasoning"].adaptations)
    assert body == {"model": "gpt-5-mini", "messages": [], "max_completion_tokens": 1024, "reasoning_effort": "medium"}
    assert notes == [
        "max_tokens sent as max_completion_tokens",
        "temperature: provider default (1); the slate asked 0.7",
    ]
    assert [changes_condition(n) for n in notes] == [False, True]  # a different sampling condition
    same = {"messages": [], "max_tokens": 8, "temperature": 1.0}
    assert adapt(same, PROFILES["openai-reasoning"].adaptations) == ["max_tokens sent as max_completion_tokens"]


@pytest.mark.unit
def test_anthropic_caps_temperature_and_ignores_reasoning_effort() -> None:
    body = {"messages": [], "temperature": 1.3, "max_tokens": 10, "reasoning_effort": "high"}
    notes = adapt(body, PROFILES["anthropic"].adaptations)
    assert body == {"messages": [], "temperature": 1.0, "max_tokens": 10}
    assert notes == [
        "temperature: 1 (the provider's maximum); the slate asked 1.3",
        "reasoning_effort: provider default; the slate asked high",
    ]
    assert all(map(changes_condition, notes)) and not PROFILES["anthropic"].honours_response_format
    assert adapt({"temperature": 0.2}, PROFILES["anthropic"].adaptations) == []


@pytest.mark.unit
def test_an_effort_the_provider_lacks_maps_to_its_nearest() -> None:
    assert nearest_effort("minimal", ("none", "low", "medium", "high")) == "low"
    assert nearest_effort("minimal", ("low", "medium", "high")) == "low"
    assert nearest_effort("high", ("low", "medium")) == "medium"
    assert nearest_effort("medium", ("minimal", "low", "medium", "high")) == "medium"
    body = {"reasoning_effort": "minimal"}
    assert adapt(body, PROFILES["ollama"].adaptations) == [
        "reasoning_effort: low (the provider has no 'minimal'); the slate asked minimal"
    ]


# -- what a refusal teaches ----------------------------------------------------------------------------------

SENT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1024, "temperature": 0.7}


@pytest.mark.unit
def test_openai_refusals_teach_a_rename_and_the_provider_default() -> None:
    rename = adaptation_for_refusal(MAX_TOKENS_REFUSED, MAX_TOKENS_REFUSED["message"], SENT)
    assert isinstance(rename, Adaptation) and (rename.param, rename.action, rename.value) == (
        "max_tokens",
        "rename",
        "max_completion_tokens",
    )
    drop = adaptation_for_refusal(TEMPERATURE_REFUSED, TEMPERATURE_REFUSED["message"], SENT)
    assert isinstance(drop, Adaptation) and (drop.param, drop.action, drop.value) == ("temperature", "drop", 1)
    assert "Only the default (1)" in drop.source


@pytest.mark.unit
def test_the_facts_in_the_message_alone_are_enough() -> None:
    """llama-server and Google send no `param`: the parameter and what to do come from the message."""
    message = (
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
    )
    learned = adaptation_for_refusal({"code": 400, "message": message, "type": "invalid_request_error"}, message, SENT)
    assert isinstance(learned, Adaptation) and learned.action == "rename"
    ranged = "temperature must be between 0 and 1"
    clamp = adaptation_for_refusal({}, ranged, SENT | {"temperature": 1.5})
    assert isinstance(clamp, Adaptation) and (clamp.action, clamp.value) == ("clamp", 1)
    unknown = "Unrecognized request argument supplied: seed"
    seed = adaptation_for_refusal({}, unknown, SENT | {"seed": 3})
    assert isinstance(seed, Adaptation) and (seed.param, seed.action, seed.value) == ("seed", "drop", None)
    vllm = "[{'type': 'extra_forbidden', 'loc': ('body', 'seed'), 'msg': 'Extra inputs are not permitted'}]"
    dropped = adaptation_for_refusal({"object": "error", "message": vllm}, vllm, SENT | {"seed": 3})
    assert isinstance(dropped, Adaptation) and (dropped.param, dropped.action) == ("seed", "drop")
    effort = "Invalid reasoning_effort 'minimal': supported values are 'low', 'medium', 'high'"
    mapped = adaptation_for_refusal({"param": "reasoning_effort"}, effort, SENT | {"reasoning_effort": "minimal"})
    assert isinstance(mapped, Adaptation) and mapped.action == "map" and mapped.value == ("low", "medium", "high")


@pytest.mark.unit
def test_what_no_adaptation_can_help_and_what_is_no_parameter_refusal() -> None:
    needed = adaptation_for_refusal(
        {"param": "messages", "code": "unsupported_value"}, "Unsupported value: 'messages' ...", SENT
    )
    assert isinstance(needed, Unadaptable) and needed.param == "messages"
    role = "Unsupported value: 'messages[0].role' does not support 'system' with this model."
    system = adaptation_for_refusal({"param": "messages[0].role", "code": "unsupported_value"}, role, SENT)
    assert isinstance(system, Unadaptable) and system.param == "messages"
    extra = adaptation_for_refusal(
        {"param": "top_k", "code": "unsupported_parameter"},
        "Unsupported parameter: 'top_k'",
        SENT | {"top_k": 20},
        extra_fields=frozenset({"top_k"}),
    )
    assert isinstance(extra, Unadaptable) and "extra_body" in extra.reason
    n = adaptation_for_refusal(
        {"param": "n"}, "n: only n=1 is supported", SENT | {"n": 2}, extra_fields=frozenset({"n"})
    )
    assert isinstance(n, Unadaptable) and n.param == "n"  # named by the error's own field
    again = adaptation_for_refusal(
        TEMPERATURE_REFUSED, TEMPERATURE_REFUSED["message"], SENT, adapted=frozenset({"temperature"})
    )
    assert isinstance(again, Unadaptable)
    # a prompt too long, a bad message, a response_format refusal: no parameter to adapt
    too_long = "Invalid 'messages[1].content': string too long. Expected a maximum length of 10485760"
    assert adaptation_for_refusal({"param": "messages[1].content"}, too_long, SENT) is None
    context = "request (4569 tokens) exceeds the available context size (4096 tokens), try increasing it"
    assert adaptation_for_refusal({"code": 400}, context, SENT) is None
    form = "response_format type 'json_schema' is not supported"
    assert adaptation_for_refusal({"param": "response_format"}, form, SENT | {"response_format": {}}) is None
    assert adaptation_for_refusal({"param": "stop"}, "Unsupported parameter: 'stop'", SENT) is None  # never sent


# -- reasoning apart ------------------------------------------------------------------------------------------


@pytest.mark.unit
def test_reasoning_blocks_are_split_from_the_answer() -> None:
    assert split_inline("Plain answer.") == ("", "Plain answer.")
    assert split_inline("<think>\nweigh it\n</think>\n\nAnswer.") == ("weigh it", "Answer.")
    assert split_inline('<thought>plan</thought>{"a": 1}') == ("plan", '{"a": 1}')
    assert split_inline("<think>a</think><think>b</think>Done") == ("a\n\nb", "Done")
    assert split_inline("<think>cut while reasoning") == ("cut while reasoning", "")  # no answer yet
    assert split_inline("the template opened the block</think>\nAnswer") == ("the template opened the block", "Answer")
    assert split_inline("Use <b>bold</b> here") == ("", "Use <b>bold</b> here")
    message = {"content": "Answer.", "reasoning_content": "from the field"}
    assert split_reply("Answer.", message) == ("from the field", "Answer.")
    assert split_reply("<think>inline</think>Answer.", {"reasoning": "field"}) == ("field\n\ninline", "Answer.")


@pytest.mark.unit
def test_reasoning_tokens_are_the_providers_else_a_share() -> None:
    assert reasoning_tokens(48, 100, "r" * 10, "a" * 10) == 48
    assert reasoning_tokens(0, 100, "r" * 30, "a" * 10) == 75
    assert reasoning_tokens(0, 100, "", "answer") == 0


# -- the client against each provider's behaviour -------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_every_provider_answers_text_and_json(behaviour: str, cache: CallCache, localhost_server) -> None:
    profile = "generic" if behaviour == "thinking" else behaviour
    extra = {"google": {"thinking_config": {"include_thoughts": True}}} if behaviour == "gemini" else {}
    server = localhost_server(behave_as(behaviour, judge_verdict))
    c = client(server.base_url, cache, profile=profile, temperature=0.7, thinking=True, extra_body=extra)
    text = c.complete_text(MESSAGES, purpose="respond")
    verdict = c.complete_json(MESSAGES, FinalVerdict, purpose="final")
    assert text.value == "A plain answer." and verdict.value.satisfaction == 4
    for reply in (text, verdict):
        assert REASONING_MARK not in reply.raw and REASONING_MARK not in str(reply.value)
        if returns_reasoning(behaviour, {"google": extra.get("google")}):
            assert REASONING_MARK in reply.reasoning and reply.stats.reasoning_tokens > 0
    if behaviour == "openai-reasoning":  # hidden reasoning, its tokens reported
        assert text.reasoning == "" and text.stats.reasoning_tokens == HIDDEN_REASONING_TOKENS
        assert "temperature: provider default (1); the slate asked 0.7" in text.stats.adaptations
    rows = cache.ledger()
    assert all(row["ok"] or row["failure"] == "format_ignored" for row in rows)
    if behaviour == "anthropic":  # the schema went in the prompt from the first request: nothing wasted
        assert all(row["ok"] for row in rows) and c.json_mode == "none"
        assert all("response_format" not in r.json for r in server.chat_requests)


@pytest.mark.cli
def test_a_reasoning_model_behind_an_unknown_url_teaches_its_rules_once(tmp_path: Path) -> None:
    """gpt-5-mini at a gateway the profile cannot recognise: the first request learns max_completion_tokens, the
    second the provider's temperature; both are kept, so a second process sends the adapted request at once and
    nothing already answered is asked again."""
    path = tmp_path / "calls.sqlite"
    with serve(behave_as("openai-reasoning", judge_verdict)) as server:
        c = client(server.base_url, CallCache(path), temperature=0.7)
        assert c._transport.profile.name == "generic"
        first = c.complete_text(MESSAGES, purpose="respond")
        assert [r.json.get("max_tokens") for r in server.chat_requests] == [1024, None, None]
        assert (
            "max_completion_tokens" in server.chat_requests[-1].json
            and "temperature" not in server.chat_requests[-1].json
        )
        assert set(first.stats.adaptations) == {
            "max_tokens sent as max_completion_tokens",
            "temperature: provider default (1); the slate asked 0.7",
        }
        (row,) = CallCache(path).ledger()
        assert row["ok"] and row["retries"] == 2 and "max_completion_tokens" in row["adaptations"]
        # a fresh process: the lessons come from the cache file; the answered call from the cache
        script = (
            f"import sys; sys.path[:0] = [{str(HERE)!r}, {str(HERE.parent)!r}];"
            "from test_provider_profiles import client, MESSAGES;"
            "from resources.models.call_cache import CallCache;"
            f"c = client({server.base_url!r}, CallCache({str(path)!r}), temperature=0.7);"
            "print(c.complete_text(MESSAGES, purpose='respond').stats.cache_hits);"
            "print(c.complete_text(MESSAGES + [{'role': 'user', 'content': 'more'}], purpose='respond').stats.calls)"
        )
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
        assert out.split() == ["1", "1"]
        assert len(server.chat_requests) == 4  # the new question, sent adapted at once
        assert "max_tokens" not in server.chat_requests[-1].json and "temperature" not in server.chat_requests[-1].json


@pytest.mark.unit
def test_a_refusal_no_adaptation_helps_fails_at_once_with_the_reason(cache: CallCache, localhost_server) -> None:
    refuse = error_response(
        400,
        "Unsupported parameter: 'top_k' is not supported with this model.",
        param="top_k",
        code="unsupported_parameter",
    )
    server = localhost_server(ScriptedReplies([refuse] * 3))
    c = client(server.base_url, cache, extra_body={"top_k": 20})
    with pytest.raises(IncompatibleEndpointError) as info:
        c.complete_text(MESSAGES, purpose="respond")
    message = str(info.value)
    assert message.startswith(f"model 'remote-1' (target, respond) at {server.base_url}: HTTP 400: Unsupported")
    assert "extra_body" in message and len(server.chat_requests) == 1
    assert "Error" not in message.split(":")[0]
    (row,) = cache.ledger()
    assert not row["ok"] and row["failure"] == "refused"


@pytest.mark.unit
def test_an_ordinary_refusal_is_still_a_per_item_refusal(cache: CallCache, localhost_server) -> None:
    too_long = error_response(400, "Invalid 'messages[1].content': string too long.", param="messages[1].content")
    server = localhost_server(ScriptedReplies([too_long]))
    with pytest.raises(RefusedRequestError) as info:
        client(server.base_url, cache).complete_text(MESSAGES, purpose="respond")
    assert "string too long" in str(info.value) and len(server.chat_requests) == 1


@pytest.mark.unit
def test_a_reply_cut_at_max_tokens_is_used_and_counted(cache: CallCache, localhost_server) -> None:
    cut = chat_completion("An answer that stops in the mid", finish_reason="length", completion_tokens=16)
    server = localhost_server(ScriptedReplies([cut]))
    reply = client(server.base_url, cache, max_tokens=16).complete_text(MESSAGES, purpose="respond")
    assert reply.value == "An answer that stops in the mid" and reply.stats.cut_replies == 1


@pytest.mark.unit
def test_googles_list_wrapped_error_keeps_its_reason(cache: CallCache, localhost_server) -> None:
    body = [
        {"error": {"code": 403, "message": "Method doesn't allow unregistered callers.", "status": "PERMISSION_DENIED"}}
    ]
    server = localhost_server(ScriptedReplies([StubResponse(403, body)]))
    with pytest.raises(Exception) as info:
        client(server.base_url, cache).complete_text(MESSAGES, purpose="respond")
    assert "HTTP 403: Method doesn't allow unregistered callers." in str(info.value)


@pytest.mark.unit
def test_a_step_down_asks_nothing_already_answered_again(cache: CallCache, localhost_server) -> None:
    """Question A is answered in json_schema mode; question B's reply holds no JSON object, so the endpoint moves to
    the prompt mode. A new client (a rerun) starts in that mode, and A still comes from the cache."""
    other = [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Judge another."}]
    server = localhost_server(ScriptedReplies([VALID, "Sure, I think it went well.", VALID]))
    first = client(server.base_url, cache)
    first.complete_json(MESSAGES, FinalVerdict, purpose="final")
    first.complete_json(other, FinalVerdict, purpose="final")
    assert first.json_mode == "none" and len(server.chat_requests) == 3
    rerun = client(server.base_url, cache)
    assert rerun.json_mode == "none"
    again = rerun.complete_json(MESSAGES, FinalVerdict, purpose="final")
    again_b = rerun.complete_json(other, FinalVerdict, purpose="final")
    assert again.stats.cache_hits == 1 and again_b.stats.cache_hits == 1 and len(server.chat_requests) == 3
    assert [row["failure"] for row in cache.ledger()][:3] == [None, "format_ignored", None]


@pytest.mark.materialisation
def test_an_incompatible_endpoint_fails_the_cell_at_once_with_one_clear_line(tmp_path: Path, localhost_server) -> None:
    """The slate's extra_body adds a field the server refuses: the cell's run fails at its first call, and the run's
    summary line says which model, role and endpoint, the server's reason and the fix, without a class name."""
    from dagster import DagsterInstance, materialize

    from assets.eyt_bench.partitions import TARGETS_PARTITION, target_pool_key
    from eyt_dagster.definitions import ASSETS
    from eyt_dagster.jobs import DIALOGUE_ASSETS, POOL_ASSETS
    from eyt_dagster.ops.launch import failure_reason

    from support.pipeline import resources_for
    from support.role_play import RolePlay
    from support.slates import write_slate

    server = localhost_server(behave_as("anthropic", RolePlay()))
    target = ref(server.base_url, id="claude", profile="anthropic", extra_body={"n": 2}).model_dump()
    target["family"] = "claude"
    slate = write_slate(tmp_path, pools={"nemotron_usa": {"source": "fixture"}}, dialogues_per_pool=2, targets=[target])
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(TARGETS_PARTITION, ["claude"])
    resources = resources_for(slate, tmp_path)
    materialize(ASSETS, selection=POOL_ASSETS, partition_key="nemotron_usa", resources=resources, instance=instance)
    result = materialize(
        ASSETS,
        selection=DIALOGUE_ASSETS,
        partition_key=str(target_pool_key("claude", "nemotron_usa")),
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )
    assert not result.success
    (failed,) = [e for e in result.all_events if e.is_failure and e.step_key]
    line = failure_reason(failed)
    assert line.startswith(f"model 'claude' (target, perceive:1) at {server.base_url}: HTTP 400: n: only n=1")
    assert line.endswith("which the slate's extra_body adds: remove it there") and "Error" not in line
    # only the calls already under way when the first refusal came (each dialogue's perception and reply go out
    # together): none was retried, and no later call was sent
    assert len(server.chat_requests) <= 4


@pytest.mark.unit
def test_requests_in_flight_together_learn_each_lesson_once(cache: CallCache, localhost_server) -> None:
    """Eight questions at once to a reasoning model behind an unknown address: the first request goes alone and
    learns both lessons, so the server refuses exactly two requests, not two per thread."""
    from concurrent.futures import ThreadPoolExecutor

    server = localhost_server(behave_as("openai-reasoning", judge_verdict), delay_s=0.05)
    c = client(server.base_url, cache, temperature=0.7, max_concurrency=8)
    questions = [[*MESSAGES, {"role": "user", "content": f"question {i}"}] for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda m: c.complete_text(m, purpose="respond"), questions))
    assert all(r.value == "A plain answer." for r in replies)
    refused = [r for r in server.chat_requests if "max_tokens" in r.json or "temperature" in r.json]
    assert len(server.chat_requests) == 8 + 2 and len(refused) == 2


@pytest.mark.unit
def test_a_cache_file_written_before_reasoning_and_adaptations_gets_them(tmp_path: Path) -> None:
    """A call cache from before this release (replies without reasoning or adaptation columns, no adaptations table):
    its old reply still reads (its inline <think> block split off at read time), and new rows keep the new fields."""
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as old:
        old.execute(
            "CREATE TABLE replies (key TEXT PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT NULL, tokens_in INTEGER NOT"
            " NULL, tokens_out INTEGER NOT NULL, latency_s REAL NOT NULL, finish_reason TEXT, created_at TEXT NOT NULL)"
        )
        old.execute(
            "INSERT INTO replies VALUES ('k', 'm', '<think>old plan</think>Old answer.', 5, 8, 0.1, 'stop', 't')"
        )
    with CallCache(path) as cache:
        old_reply = cache.get("k")
        assert old_reply is not None and old_reply.reasoning is None and old_reply.text.startswith("<think>")
        cache.put(
            "k2",
            model="m",
            text="New.",
            tokens_in=1,
            tokens_out=9,
            latency_s=0.1,
            reasoning="why",
            reasoning_tokens=4,
            adaptations="max_tokens sent as max_completion_tokens",
        )
        new = cache.get("k2")
        assert new is not None and (new.reasoning, new.reasoning_tokens) == ("why", 4)
        assert new.notes == ("max_tokens sent as max_completion_tokens",)
        cache.set_adaptation("m", "http://h/v1/", Adaptation("temperature", "drop", 1, "the server refused it"))
        assert cache.adaptations("m", "http://h/v1") == [Adaptation("temperature", "drop", 1, "the server refused it")]
    with serve(ScriptedReplies([])) as server:  # the old reply, read through a client: answer and reasoning apart
        c = client(server.base_url, CallCache(path))
        outcome = c._outcome(old_reply, "k", cached=True, retries=0)
    assert (outcome.text, outcome.reasoning) == ("Old answer.", "old plan") and outcome.stats.reasoning_tokens > 0
