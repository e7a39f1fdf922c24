"""Every JSON reply schema the project sends: what its JSON schema allows validates with the project's own
parser, what it forbids is rejected, and a server that enforces the schema gets no re-asks.

See docs/remote-models.md for the rule these tests hold the schemas to.
"""

from __future__ import annotations

import ast
import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.reply_limits import LONGEST_REPLY_CHARS
from eyt_dagster.eyt_bench.chat_roles import LLMJudge, LLMSimulator, LLMTarget
from eyt_dagster.eyt_bench.taxonomy import JUDGE_SCALES, SUBSCORE_COLUMNS
from eyt_dagster.eyt_bench.types import (
    AuditVerdict,
    ChatSeed,
    ChatSeedContent,
    Exchange,
    FinalVerdict,
    PersonaRecord,
    SimulatorTurn,
    UserLabels,
    turn_scores_model,
)
from eyt_dagster.speech_eq.generators import (
    DialogueCheckReply,
    DialogueReply,
    LLMSpeechGenerator,
    ScenarioReply,
    tone_selection_schema,
)
from eyt_dagster.speech_eq.protocol import REPLY_SCHEMAS as CHOICE_SCHEMAS
from eyt_dagster.speech_eq.vocabulary import FAILURE_ARCHETYPES, TURN_SPEAKER
from resources.models.call_cache import CallCache
from resources.models.chat_client import OpenAIChatClient, parse_reply, response_format_for

from support.json_schema_draw import break_instance, draw, is_valid, longest
from support.localhost_server import SchemaDrawnReplies, serve

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DRAWS = 40

# Every schema passed to complete_json in the package, by the source text of the call's schema argument.
REPLY_SCHEMAS: dict[str, list[type[BaseModel]]] = {
    "ChatSeedContent": [ChatSeedContent],
    "SimulatorTurn": [SimulatorTurn],
    "UserLabels": [UserLabels],
    "FinalVerdict": [FinalVerdict],
    "AuditVerdict": [AuditVerdict],
    "turn_scores_model(self.scale)": [turn_scores_model(scale) for scale in JUDGE_SCALES.values()],
    "ScenarioReply": [ScenarioReply],
    "DialogueReply": [DialogueReply],
    "DialogueCheckReply": [DialogueCheckReply],
    "tone_selection_schema(len(options))": [tone_selection_schema(n) for n in (2, 3, 4)],
    "reply_schema(request.reply_format)": list(CHOICE_SCHEMAS.values()),
}
ALL_SCHEMAS = [schema for schemas in REPLY_SCHEMAS.values() for schema in schemas]


def _sent_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema exactly as the chat client sends it in response_format."""
    return response_format_for("json_schema", model)["json_schema"]["schema"]


def test_the_list_covers_every_complete_json_call_in_the_package():
    found = set()
    for path in (ROOT / "eyt_dagster").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "complete_json":
                found.add(ast.unparse(node.args[1]))
    assert found and found == set(REPLY_SCHEMAS), "a reply schema was added or renamed: list it in REPLY_SCHEMAS"


@pytest.mark.parametrize("model", ALL_SCHEMAS, ids=lambda m: m.__name__)
def test_every_instance_the_schema_allows_validates(model):
    schema = _sent_schema(model)
    for i in range(DRAWS):
        instance = draw(schema, random.Random(f"{model.__name__}:{i}"))
        assert is_valid(schema, instance), instance  # the generator keeps to the schema
        text = json.dumps(instance, ensure_ascii=False)
        try:
            parse_reply(text, model)
        except (ValueError, ValidationError) as exc:
            pytest.fail(f"{model.__name__}: the schema allows {text[:300]} but the parser rejects it: {exc}")


@pytest.mark.parametrize("model", ALL_SCHEMAS, ids=lambda m: m.__name__)
def test_every_instance_the_schema_forbids_is_rejected(model):
    schema = _sent_schema(model)
    broken_any = 0
    for i in range(5):
        instance = draw(schema, random.Random(f"{model.__name__}:{i}"))
        for what, bad in break_instance(schema, instance):
            broken_any += 1
            with pytest.raises((ValueError, ValidationError)):
                parse_reply(json.dumps(bad, ensure_ascii=False), model)
                pytest.fail(f"{model.__name__}: {what} was accepted: {json.dumps(bad)[:300]}")
    assert broken_any > 0


def _properties(model: type[BaseModel]) -> dict[str, Any]:
    return _sent_schema(model)["properties"]


@pytest.mark.parametrize("scale_name", sorted(JUDGE_SCALES))
def test_judge_schema_says_the_configured_scale(scale_name):
    scale = JUDGE_SCALES[scale_name]
    model = turn_scores_model(scale)
    properties = _properties(model)
    for column in SUBSCORE_COLUMNS:
        assert properties[column]["enum"] == list(scale)
    assert properties["rationale"]["maxLength"] > 0
    off_scale = {column: 1.0 for column in SUBSCORE_COLUMNS} | {"empathy_support": 0.41}
    with pytest.raises(ValidationError, match="empathy_support"):
        model.model_validate(off_scale)
    if 0.5 not in scale:
        with pytest.raises(ValidationError):
            model.model_validate({column: 0.5 for column in SUBSCORE_COLUMNS})
    # an integer-looking number is the same JSON number
    assert model.model_validate_json(json.dumps({c: 1 for c in SUBSCORE_COLUMNS})).empathy_support == 1.0


def test_taxonomy_labels_are_enums_and_free_text_is_bounded():
    labels = _properties(UserLabels)
    assert len(labels["emotion"]["enum"]) == 15 and len(labels["explicit_intent"]["enum"]) == 12
    for model in ALL_SCHEMAS:
        strings = _string_nodes(_sent_schema(model))
        unbounded = [node for node in strings if not ({"maxLength", "enum", "const"} & set(node))]
        assert strings and not unbounded, f"{model.__name__} has unbounded string fields: {unbounded}"


def test_the_longest_reply_fits_the_default_max_tokens():
    default_max_tokens = ModelRef.model_fields["max_tokens"].default
    assert LONGEST_REPLY_CHARS <= 4 * default_max_tokens  # ~4 characters a token of English
    sizes = {model.__name__: longest(_sent_schema(model)) for model in ALL_SCHEMAS}
    assert max(sizes.values()) <= LONGEST_REPLY_CHARS, sizes
    assert sizes["FinalVerdict"] == len('{"completed":false,"satisfaction":') + 24 + len(',"rationale":""}') + 800


def _string_nodes(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "string":
            found.append(schema)
        for value in schema.values():
            found.extend(_string_nodes(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_string_nodes(value))
    return found


def test_cross_field_rules_are_in_the_schema():
    """The rules that tie fields together are stated in the schema too (as alternatives), so a
    schema-enforcing server cannot break them: two different archetypes, six lines in turn order with the
    right speakers, two different tone options."""
    pairs = draw(
        _sent_schema(ScenarioReply)["properties"]["dissonant_personas"],
        random.Random(1),
        root=_sent_schema(ScenarioReply),
    )
    assert len(pairs) == 2 and pairs[0] != pairs[1] and set(pairs) <= set(FAILURE_ARCHETYPES)
    for i in range(20):
        lines = draw(_sent_schema(DialogueReply), random.Random(i))["lines"]
        assert [(line["turn"], line["speaker"]) for line in lines] == sorted(TURN_SPEAKER.items())
        choice = draw(_sent_schema(tone_selection_schema(3)), random.Random(i))
        assert choice["resonant"] != choice["dissonant"] and {choice["resonant"], choice["dissonant"]} <= {1, 2, 3}
    # and the parser keeps rejecting them when a server does not enforce the schema
    for bad in ({"resonant": 2, "dissonant": 2, "reasoning": "r"},):
        with pytest.raises(ValidationError):
            tone_selection_schema(3).model_validate(bad)


# -- the judge against a server that enforces the schema, through the real openai client ------------------


SEED = ChatSeed(
    seed_id="seed-1",
    pool="nemotron_usa",
    persona_id="p1",
    persona_text="A nurse who works nights.",
    topic="sleep",
    initial_emotion="anxiety",
    initial_explicit_intent="seeking_advice",
    initial_latent_intent="seeking_relief",
    initial_intent_description="The user wants to sleep better.",
    final_intent="The user leaves with a plan for sleeping after night shifts.",
    first_query="How do I sleep by day?",
)
HISTORY = [Exchange(user_text=f"Question {t}?", response_text=f"Answer {t}.") for t in range(1, 4)]


@pytest.mark.parametrize("scale_name", sorted(JUDGE_SCALES))
def test_judge_against_a_schema_enforcing_server_never_reasks(tmp_path, scale_name):
    scale = JUDGE_SCALES[scale_name]
    handler = SchemaDrawnReplies(seed=11)
    with serve(handler, delay_s=0.05) as server, CallCache(tmp_path / "calls.sqlite") as cache:
        ref = ModelRef(
            id="judge-x",
            provider="openai",
            model="judge-x-v1",
            family="j",
            base_url=server.base_url,
            structured_output="json_schema",
        )
        judge = LLMJudge(OpenAIChatClient(ref, role="judge", cache=cache, seed=5, run_id="r"), scale)
        with ThreadPoolExecutor(3) as pool:  # several verdicts at once, like a partition's dialogues
            verdicts = list(pool.map(lambda t: judge.score_turn(SEED, HISTORY, t), [1, 2, 3]))
        final = judge.judge_final(SEED, HISTORY)
        rows = cache.ledger("r")
    assert len(server.chat_requests) == len(rows) == 4  # one request per verdict: no re-ask
    assert all(row["ok"] and not row["cached"] and row["retries"] == 0 for row in rows)
    assert server.max_seen_in_flight >= 2
    for verdict in verdicts:
        assert all(getattr(verdict.value, column) in scale for column in SUBSCORE_COLUMNS)
    assert 1 <= final.value.satisfaction <= 5
    assert [name for name, _ in handler.drawn].count("FinalVerdict") == 1


def test_every_role_against_a_schema_enforcing_server_never_reasks(tmp_path):
    """Simulator, target perception and the SpeechEQ text stages, each answered with drawn instances."""
    with serve(SchemaDrawnReplies(seed=3)) as server, CallCache(tmp_path / "calls.sqlite") as cache:

        def client(role: str) -> OpenAIChatClient:
            ref = ModelRef(
                id=f"{role}-x",
                provider="openai",
                model=f"{role}-v1",
                family=role,
                base_url=server.base_url,
                structured_output="json_schema",
            )
            return OpenAIChatClient(ref, role=role, cache=cache, seed=5, run_id="r")

        simulator, target = LLMSimulator(client("simulator")), LLMTarget(client("target"))
        persona = PersonaRecord(persona_id="p1", pool="nemotron_usa", source="fixture", persona_text="A nurse.")
        content = simulator.generate_seed(persona, seed_id="s1").value
        seed = ChatSeed(
            **content.model_dump(), seed_id="s1", pool="nemotron_usa", persona_id="p1", persona_text="A nurse."
        )
        turn = simulator.next_turn(seed, HISTORY).value
        labels = target.perceive(HISTORY, turn.user_text).value
        assert turn.progress in ("not_started", "in_progress", "achieved") and labels.emotion

        speech = LLMSpeechGenerator(client("speech_generator"), seed=3)
        for index in range(3):
            scenario = speech.scenario("interpersonal_empathy", "Negative", index)
            lines = speech.dialogue(scenario)
            assert [line.turn for line in lines] == [1, 2, 3, 4, 5, 6]
            speech.validate_dialogue(scenario, lines)
            options = [("resonant", "warm"), ("dissonant:a", "cold"), ("dissonant:b", "flat")]
            resonant, dissonant, _ = speech.select_tones(scenario, lines, 4, options)
            assert resonant != dissonant
        rows = cache.ledger("r")
    assert rows and all(row["ok"] for row in rows), [row["error"] for row in rows if not row["ok"]]
    assert len(server.chat_requests) == len(rows) == 3 + 4 * 3
