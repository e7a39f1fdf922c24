"""The embedded baselines: deterministic, in-taxonomy, and two targets of clearly different quality."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from statistics import mean

import pytest

from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.replies import CallStats
from eyt_dagster.eyt_bench.baselines import AgendaSimulator, ReflectiveTarget, RubricJudge, TerseTarget, make_embedded
from eyt_dagster.eyt_bench.baselines import lexicon as lx
from eyt_dagster.eyt_bench.baselines.judge import RULES, snap
from eyt_dagster.eyt_bench.baselines.simulator import addresses
from eyt_dagster.eyt_bench.taxonomy import EMOTIONS, EXPLICIT_INTENTS, JUDGE_SCALES, LATENT_INTENTS, SUBSCORE_COLUMNS
from eyt_dagster.eyt_bench.types import ChatSeed, Exchange, PersonaRecord, UserLabels

SEED = 20260521
PERSONAS = [
    PersonaRecord(
        persona_id="nemo-1",
        pool="nemotron_usa",
        source="test",
        persona_text="Maria is a registered nurse in Dayton who bakes bread on weekends and worries about her parents.",
        attributes={"occupation": "registered_nurse", "city": "Dayton", "state": "OH", "age": 34},
    ),
    PersonaRecord(
        persona_id="nemo-2",
        pool="nemotron_usa",
        source="test",
        persona_text="Dale is a retired machinist in Tulsa who coaches youth baseball and watches his savings.",
        attributes={"occupation": "machinist", "city": "Tulsa", "age": 67},
    ),
    PersonaRecord(
        persona_id="pm-1",
        pool="personamem_v2",
        source="test",
        persona_text="A graduate student who loves hiking and is planning a trip to Japan on a tight budget.",
        topic_tags=["travelPlanning", "studyConsultation"],
    ),
    PersonaRecord(
        persona_id="pm-2",
        pool="personamem_v2",
        source="test",
        persona_text="A software engineer dealing with burnout who is trying therapy and misses friends.",
        topic_tags=["therapy", "datingConsultation"],
    ),
]
ORDER = {"not_started": 0, "in_progress": 1, "achieved": 2}


def make_seed(sim: AgendaSimulator, persona: PersonaRecord, seed_id: str) -> ChatSeed:
    content = sim.generate_seed(persona, seed_id=seed_id).value
    return ChatSeed(
        **content.model_dump(),
        seed_id=seed_id,
        pool=persona.pool,
        persona_id=persona.persona_id,
        persona_text=persona.persona_text,
    )


def run_dialogue(sim: AgendaSimulator, target, seed: ChatSeed, t_max: int = 10):
    """Algorithm 1 in miniature: perceive, respond, next user turn; stop on two consecutive 'achieved'."""
    history: list[Exchange] = []
    query, gold, streak = seed.first_query, seed.opening_labels(), 0
    predicted: list[UserLabels] = []
    golds: list[UserLabels] = []
    progress: list[str] = []
    for _ in range(t_max):
        predicted.append(target.perceive(history, query).value)
        golds.append(gold)
        history.append(Exchange(user_text=query, response_text=target.respond(history, query).value))
        turn = sim.next_turn(seed, history).value
        progress.append(turn.progress)
        query, gold = turn.user_text, turn.labels
        streak = streak + 1 if turn.progress == "achieved" else 0
        if streak >= 2:
            break
    return history, predicted, golds, progress, streak >= 2


@pytest.fixture(scope="module")
def sim() -> AgendaSimulator:
    return AgendaSimulator("rule-simulator", SEED)


@pytest.fixture(scope="module")
def seeds(sim: AgendaSimulator) -> list[ChatSeed]:
    return [make_seed(sim, PERSONAS[i % 4], f"{PERSONAS[i % 4].pool}-{i:03d}") for i in range(12)]


def assert_labels(labels: UserLabels) -> None:
    assert labels.explicit_intent in EXPLICIT_INTENTS
    assert labels.latent_intent in LATENT_INTENTS
    assert labels.emotion in EMOTIONS
    assert labels.intent_description.strip()


@pytest.mark.unit
def test_lexicon_covers_the_taxonomies() -> None:
    assert set(lx.EMOTION_CUES) == set(lx.ACKNOWLEDGE) == set(lx.USER_OPENERS) == set(lx.EMOTION_PRIOR) == set(EMOTIONS)
    assert set(lx.EXPLICIT_CUES) == set(lx.EXPLICIT_GLOSS) == set(lx.EXPLICIT_PRIOR) == set(EXPLICIT_INTENTS)
    assert set(lx.LATENT_CUES) == set(lx.LATENT_HINTS) == set(lx.LATENT_PRIOR) == set(LATENT_INTENTS)
    assert set(lx.USER_REQUESTS) <= set(EXPLICIT_INTENTS)
    for topic in lx.TOPICS.values():
        for aspect in topic.aspects:  # each phrase names its own aspect and no sibling's
            assert [lx.has_cue(aspect.phrase, other.keywords) for other in topic.aspects].count(True) == 1
    assert lx.count_cues("I'm worried, so worried. On edge!", lx.EMOTION_CUES["anxiety"]) == 3
    assert lx.shift_person("the skills I'm missing in my job", "second") == "the skills you're missing in your job"


# --- simulator ------------------------------------------------------------------------------------
@pytest.mark.unit
def test_seed_is_deterministic_and_varies_with_seed_id(sim: AgendaSimulator) -> None:
    persona = PERSONAS[0]
    first = sim.generate_seed(persona, seed_id="a").value
    assert AgendaSimulator("other-id", SEED).generate_seed(persona, seed_id="a").value == first
    others = [sim.generate_seed(persona, seed_id=f"s{i}").value for i in range(6)]
    assert len({o.model_dump_json() for o in [*others, first]}) == 7
    assert AgendaSimulator("x", SEED + 1).generate_seed(persona, seed_id="a").value != first


@pytest.mark.cli
def test_seed_does_not_depend_on_python_hash_salt(sim: AgendaSimulator) -> None:
    code = (
        "import sys, json; sys.path.insert(0, '.'); from tests.eyt_bench.test_baselines import PERSONAS, SEED;"
        "from eyt_dagster.eyt_bench.baselines import AgendaSimulator;"
        "print(AgendaSimulator('s', SEED).generate_seed(PERSONAS[2], seed_id='pm-7').raw)"
    )
    expected = sim.generate_seed(PERSONAS[2], seed_id="pm-7").raw
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == expected


@pytest.mark.unit
def test_seed_fields_are_valid(seeds: list[ChatSeed]) -> None:
    for seed in seeds:
        assert_labels(seed.opening_labels())
        assert seed.final_intent.count(".") == 1 and seed.final_intent.endswith(".")
        assert seed.first_query and seed.topic
    assert {"Hello.", "Hey!", "Hi"} & {s.first_query.split()[0] for s in seeds}
    assert any("registered nurse from Dayton" in s.first_query for s in seeds)  # the persona's voice
    assert {s.topic for s in seeds if s.persona_id == "pm-1"} <= {"travel", "studies"}


@pytest.mark.unit
def test_agenda_expands_the_seed(sim: AgendaSimulator, seeds: list[ChatSeed]) -> None:
    for seed in seeds:
        steps = sim.agenda(seed)
        assert 3 <= len(steps) <= 5
        assert steps[0].labels == seed.opening_labels()
        for step in steps:
            assert_labels(step.labels)
            assert step.aspect.phrase.replace("my ", "their ").split()[-1] in seed.final_intent
        assert sim.agenda(seed) == steps


@pytest.mark.unit
def test_addressed_rule() -> None:
    keywords = ("resume", "cv")
    good = "That sounds stressful. You could try cutting your resume to one page with measurable results."
    assert addresses(good, keywords)
    question = "Your resume matters here: which achievements from your last two jobs would a hiring manager remember?"
    assert addresses(question, keywords)
    assert not addresses("Okay. Anything else?", keywords)
    assert not addresses("You could try cutting it to one page with measurable results and strong verbs.", keywords)
    assert not addresses("Your resume looks fine and solid and complete and strong overall.", keywords)


@pytest.mark.unit
def test_next_turn_is_deterministic_and_progress_monotone(sim: AgendaSimulator, seeds: list[ChatSeed]) -> None:
    for target in (ReflectiveTarget("reflective"), TerseTarget("terse")):
        for seed in seeds[:6]:
            history, _, golds, progress, _ = run_dialogue(sim, target, seed)
            assert all(ORDER[a] <= ORDER[b] for a, b in itertools.pairwise(progress)), progress
            for gold in golds:
                assert_labels(gold)
            again = AgendaSimulator("rule-simulator", SEED).next_turn(seed, history)
            assert again.value == sim.next_turn(seed, history).value


@pytest.mark.unit
def test_reflective_dialogue_walks_the_agenda(sim: AgendaSimulator, seeds: list[ChatSeed]) -> None:
    seed = seeds[0]
    steps = sim.agenda(seed)
    history, _, golds, progress, achieved = run_dialogue(sim, ReflectiveTarget("r"), seed)
    assert achieved and len(history) == len(steps) + 1
    assert progress[0] == "in_progress" and progress[-2:] == ["achieved", "achieved"]
    assert golds[-1].emotion == "gratitude" and "thank" in history[-1].user_text.lower()


@pytest.mark.unit
def test_unanswered_user_pushes_and_gets_frustrated(sim: AgendaSimulator, seeds: list[ChatSeed]) -> None:
    seed = seeds[1]
    history, _, golds, progress, achieved = run_dialogue(sim, TerseTarget("t"), seed)
    assert not achieved and len(history) == 10 and set(progress) == {"not_started"}
    assert golds[1].explicit_intent == "clarification"
    assert {g.explicit_intent for g in golds[2:]} == {"feedback"}
    assert {g.emotion for g in golds[2:]} <= {"frustration", "anger"}
    assert sim.agenda(seed)[0].aspect.phrase in history[-1].user_text


@pytest.mark.unit
def test_seed_from_another_simulator_still_runs(sim: AgendaSimulator) -> None:
    seed = ChatSeed(
        topic="choosing a piano teacher",
        initial_emotion="hope",
        initial_explicit_intent="seeking_advice",
        initial_latent_intent="self_improvement",
        initial_intent_description="Wants a teacher.",
        final_intent="The user picks a piano teacher and books a first lesson.",
        first_query="How do I find a piano teacher?",
        seed_id="llm-1",
        pool="personamem_v2",
        persona_id="x",
        persona_text="An adult beginner pianist.",
    )
    _history, _, golds, progress, _ = run_dialogue(sim, ReflectiveTarget("r"), seed)
    assert progress and all(g.emotion in EMOTIONS for g in golds)


# --- targets and judge: the quality gap ------------------------------------------------------------
def evaluate(sim: AgendaSimulator, target, judge: RubricJudge, seeds: list[ChatSeed]) -> dict[str, float]:
    achieved, completed, turn_means, hits, n_labels = 0, 0, [], 0, 0
    for seed in seeds:
        history, predicted, golds, _, done = run_dialogue(sim, target, seed)
        achieved += done
        completed += judge.judge_final(seed, history).value.completed
        for t in range(1, len(history) + 1):
            scores = judge.score_turn(seed, history, t).value
            turn_means.append(mean(getattr(scores, c) for c in SUBSCORE_COLUMNS))
        for p, g in zip(predicted, golds):
            hits += sum(getattr(p, f) == getattr(g, f) for f in ("explicit_intent", "latent_intent", "emotion"))
            n_labels += 3
    return {
        "achieved": achieved / len(seeds),
        "completed": completed / len(seeds),
        "judge": mean(turn_means),
        "accuracy": hits / n_labels,
    }


@pytest.mark.unit
def test_reflective_clearly_beats_terse(sim: AgendaSimulator, seeds: list[ChatSeed]) -> None:
    judge = RubricJudge("rubric-judge", JUDGE_SCALES["three_point"])
    good = evaluate(sim, ReflectiveTarget("reflective"), judge, seeds)
    poor = evaluate(sim, TerseTarget("terse"), judge, seeds)
    assert good["achieved"] >= 0.75 and poor["achieved"] <= 0.1
    assert good["completed"] >= 0.75 and poor["completed"] <= 0.1
    assert good["judge"] > poor["judge"] + 0.3
    assert good["accuracy"] > poor["accuracy"] + 0.3


@pytest.mark.unit
def test_respond_does_not_use_perception(sim: AgendaSimulator, seeds: list[ChatSeed], monkeypatch) -> None:
    target = ReflectiveTarget("r")
    expected = target.respond([], seeds[0].first_query).value
    monkeypatch.setattr(ReflectiveTarget, "perceive", lambda *a, **k: pytest.fail("respond called perceive"))
    assert target.respond([], seeds[0].first_query).value == expected


@pytest.mark.unit
@pytest.mark.parametrize("scale_name", ["three_point", "binary"])
def test_judge_scores_stay_on_the_scale(sim: AgendaSimulator, seeds: list[ChatSeed], scale_name: str) -> None:
    scale = JUDGE_SCALES[scale_name]
    judge = RubricJudge("j", scale)
    for target in (ReflectiveTarget("r"), TerseTarget("t")):
        history, *_ = run_dialogue(sim, target, seeds[2])
        for t in range(1, len(history) + 1):
            reply = judge.score_turn(seeds[2], history, t)
            assert all(getattr(reply.value, c) in scale for c in SUBSCORE_COLUMNS)
            assert all(c in reply.value.rationale for c in SUBSCORE_COLUMNS)
            assert json.loads(reply.raw) == reply.value.model_dump() and reply.stats == CallStats()
        final = judge.judge_final(seeds[2], history)
        assert 1 <= final.value.satisfaction <= 5 and "coverage" in final.value.rationale
    with pytest.raises(ValueError, match="outside"):
        judge.score_turn(seeds[2], history, len(history) + 1)


@pytest.mark.unit
def test_snap_and_rules_table() -> None:
    assert snap(0.5, JUDGE_SCALES["binary"]) == 0.0  # a half-met criterion is not met on the binary scale
    assert [snap(v, JUDGE_SCALES["three_point"]) for v in (0, 0.5, 1)] == [0, 0.5, 1]
    assert tuple(RULES) == SUBSCORE_COLUMNS and all(rule.__doc__ for rule in RULES.values())


@pytest.mark.unit
def test_calls_are_fast(sim: AgendaSimulator, seeds: list[ChatSeed]) -> None:
    target, judge = ReflectiveTarget("r"), RubricJudge("j", JUDGE_SCALES["three_point"])
    start = time.perf_counter()
    history, *_ = run_dialogue(sim, target, seeds[3])
    for t in range(1, len(history) + 1):
        judge.score_turn(seeds[3], history, t)
    per_call = (time.perf_counter() - start) / (4 * len(history))
    assert per_call < 0.01


# --- factory -----------------------------------------------------------------------------------------
def ref(model: str, family: str = "eyt-baseline") -> ModelRef:
    return ModelRef(id=f"{model}-baseline", provider="embedded", model=model, family=family)


@pytest.mark.unit
def test_make_embedded_builds_each_baseline() -> None:
    scale = JUDGE_SCALES["binary"]
    assert isinstance(make_embedded("simulator", ref("agenda-simulator"), seed=SEED, scale=scale), AgendaSimulator)
    assert isinstance(make_embedded("target", ref("reflective"), seed=SEED, scale=scale), ReflectiveTarget)
    terse = make_embedded("target", ref("terse"), seed=SEED, scale=scale)
    assert isinstance(terse, TerseTarget) and terse.model_id == "terse-baseline"
    judge = make_embedded("judge", ref("rubric-heuristic"), seed=SEED, scale=scale)
    assert isinstance(judge, RubricJudge) and judge.scale == scale


@pytest.mark.unit
def test_make_embedded_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="gpt-9-baseline.*reflective.*terse"):
        make_embedded("target", ref("gpt-9"), seed=SEED, scale=(0.0, 1.0))
    with pytest.raises(ValueError, match="roles are"):
        make_embedded("narrator", ref("reflective"), seed=SEED, scale=(0.0, 1.0))


@pytest.mark.unit
def test_judge_calibrations_order_strict_standard_lenient(sim: AgendaSimulator, seeds: list[ChatSeed]) -> None:
    scale = JUDGE_SCALES["three_point"]
    history, *_ = run_dialogue(sim, ReflectiveTarget("r"), seeds[0])
    judges = [RubricJudge(c, scale, c) for c in ("strict", "standard", "lenient")]
    totals = []
    for judge in judges:
        scores = [judge.score_turn(seeds[0], history, t).value for t in range(1, len(history) + 1)]
        rows = [[getattr(s, c) for c in SUBSCORE_COLUMNS] for s in scores]
        assert all(v in (0.0, 1.0) for row in rows for v in row) or judge.calibration == "standard"
        totals.append(sum(map(sum, rows)))
    assert totals[0] < totals[1] < totals[2]  # the rules award some partial credit on this dialogue
    with pytest.raises(ValueError, match="calibration"):
        RubricJudge("x", scale, "harsh")


@pytest.mark.unit
def test_thinking_flag_makes_the_reflective_baseline_deliberate(sim: AgendaSimulator, seeds: list[ChatSeed]) -> None:
    quick = make_embedded("target", ref("reflective"), seed=SEED, scale=(0.0, 1.0))
    deliberate = make_embedded(
        "target",
        ModelRef(id="r-think", provider="embedded", model="reflective", family="eyt-baseline", thinking=True),
        seed=SEED,
        scale=(0.0, 1.0),
    )
    differs = 0
    for seed in seeds:
        history, *_ = run_dialogue(sim, quick, seed)
        for t in range(1, len(history)):
            a = quick.perceive(history[:t], history[t].user_text).value
            b = deliberate.perceive(history[:t], history[t].user_text).value
            assert_labels(b)
            differs += a != b
    assert differs > 0  # weighing the whole dialogue changes some predictions
