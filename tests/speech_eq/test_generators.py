"""SpeechEQ text generators: the template baseline behind the protocol (unchanged), the chat-model generator
against a real OpenAI-compatible server on localhost, and the four text-stage assets run on it in process."""

from __future__ import annotations

import duckdb
import pytest
from dagster import AssetKey, AssetSelection, DagsterInstance, materialize
from pydantic import ValidationError

from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.definitions import ASSETS
from eyt_dagster.slate import SlateError, load_slate
from eyt_dagster.speech_eq import templates
from eyt_dagster.speech_eq.generators import (
    DialogueReply,
    LLMSpeechGenerator,
    ScenarioReply,
    TemplateGenerator,
    tone_selection_schema,
    tone_slots,
)
from eyt_dagster.speech_eq.vocabulary import VALENCES
from resources.models.call_cache import CallCache
from resources.models.chat_client import OpenAIChatClient
from resources.models.model_access import ModelAccess
from resources.roles.speech_roles import SpeechRoles

from support.localhost_server import serve
from support.pipeline import resources_for
from support.slates import remote, write_slate
from support.speech_play import BLAND, DIALOGUE, SCENARIO, TONES, SpeechPlay

SLUG = "interpersonal_empathy"
TEXT_ASSETS = AssetSelection.assets(
    *[AssetKey(["speech", n]) for n in ("scenarios", "dialogues", "tone_instructions", "tone_selection")]
)

# the speech text model of these tests: family `stub`, no retries (the tests count its calls)
SPEECH_LLM = {"family": "stub", "max_retries": 0}


# -- the template baseline ----------------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize("slug", ["interpersonal_empathy", "stress_management_optimism", "self_perception_self_regard"])
def test_template_generator_is_the_templates_unchanged(slug):
    gen = TemplateGenerator(seed=7)
    assert gen.is_baseline and gen.name == "template-baseline"
    for valence in VALENCES:
        scenario = gen.scenario(slug, valence, 0)
        assert scenario == TemplateGenerator(seed=7).scenario(slug, valence, 0)  # deterministic under the seed
        assert scenario == templates.make_scenario(slug, valence, 0, 7)
        lines = gen.dialogue(scenario)
        assert lines == templates.make_dialogue(scenario, 7)
        assert gen.validate_dialogue(scenario, lines) == (True, "template lines are neutral by construction")
        options = templates.tone_options(scenario)
        for turn, kinds in tone_slots(scenario).items():
            assert [(k, gen.tone_instruction(scenario, lines, turn, k, 1, [])) for k in kinds] == options[turn]
        assert gen.select_tones(scenario, lines, 4, options[4]) == templates.select_tones(options[4])


# -- reply schemas ------------------------------------------------------------------------------------------


@pytest.mark.unit
def test_reply_schemas_reject_what_the_stages_cannot_use():
    reply = ScenarioReply.model_validate(SCENARIO)
    assert reply.dissonant_personas == ["toxic optimist", "anxious spiraler"] and reply.speaker1.gender == "female"
    for bad in (["grumpy cat", "toxic optimist"], ["toxic optimist"], ["Toxic Optimist", "the toxic optimist"]):
        with pytest.raises(ValidationError, match="dissonant_personas"):
            ScenarioReply.model_validate({**SCENARIO, "dissonant_personas": bad})
    lines = [{"turn": t, "speaker": 2 - t % 2, "text": text} for t, text in DIALOGUE]
    assert len(DialogueReply.model_validate({"lines": lines}).lines) == 6
    with pytest.raises(ValidationError, match="six lines"):
        DialogueReply.model_validate({"lines": lines[:5]})
    with pytest.raises(ValidationError, match="turn 4 is speaker 2"):
        DialogueReply.model_validate({"lines": [*lines[:3], {**lines[3], "speaker": 1}, *lines[4:]]})
    schema = tone_selection_schema(3)
    assert schema.model_validate({"resonant": 3, "dissonant": 1, "reasoning": "r"}).resonant == 3
    for bad in ({"resonant": 4, "dissonant": 1}, {"resonant": 2, "dissonant": 2}, {"resonant": 0, "dissonant": 1}):
        with pytest.raises(ValidationError):
            schema.model_validate({**bad, "reasoning": "r"})


# -- the chat-model generator against the stub server --------------------------------------------------------


@pytest.mark.unit
def test_llm_generator_against_a_real_localhost_server(tmp_path, localhost_server):
    play = SpeechPlay()
    server = localhost_server(play)
    ref = ModelRef.model_validate(remote("speech-llm", server.base_url, **SPEECH_LLM))
    cache = CallCache(tmp_path / "calls.sqlite")
    client = OpenAIChatClient(ref, role="speech_generator", cache=cache, seed=3)
    gen = LLMSpeechGenerator(client, seed=3, bland_words=("calm", "polite"))
    assert not gen.is_baseline and gen.name == gen.validator_name == gen.judge_name == "speech-llm"

    scenario = gen.scenario(SLUG, "Negative", 0)  # the first reply names a non-archetype: re-asked
    assert play.calls["speech_scenario"] == 2
    assert "grumpy cat" in play.requests["speech_scenario"][1]["messages"][-1]["content"]
    assert (scenario.subscale, scenario.valence) == (SLUG, "Negative")  # the caller's, not the model's
    assert scenario.dissonant_personas == ["toxic optimist", "anxious spiraler"]
    assert scenario.scenario_type == gen.scenario_type(SLUG, "Negative", 0)
    user = play.requests["speech_scenario"][0]["messages"][-1]["content"]
    assert "Interpersonal - Empathy" in user and "Negative" in user
    system = play.requests["speech_scenario"][0]["messages"][0]["content"]
    assert "apathetic wall" in system and "{" not in system.split("JSON schema")[0]

    lines = gen.dialogue(scenario)
    assert [(line.turn, line.speaker) for line in lines] == [(1, 1), (2, 2), (3, 1), (4, 2), (5, 1), (6, 2)]
    assert gen.validate_dialogue(scenario, lines)[0] is False
    again = gen.dialogue(scenario, [(lines, "turn 4 gives it away")])
    assert again[3].text != lines[3].text
    assert "turn 4 gives it away" in play.requests["speech_dialogue"][-1]["messages"][-1]["content"]
    assert gen.validate_dialogue(scenario, again) == (True, "Both test lines work in either voice.")

    assert gen.tone_instruction(scenario, again, 1, "context", 1, []) == BLAND
    retry = gen.tone_instruction(scenario, again, 1, "context", 2, [(BLAND, "bland word(s) ['calm', 'polite']")])
    assert retry == TONES["context"]
    tone_user = play.requests["speech_tone"][-1]["messages"][-1]["content"]
    assert BLAND in tone_user and "rejected" in tone_user
    assert '"calm", "polite"' in play.requests["speech_tone"][-1]["messages"][0]["content"]
    options = [(k, gen.tone_instruction(scenario, again, 4, k, 1, [])) for k in tone_slots(scenario)[4]]
    assert [text for _, text in options] == [TONES["resonant"], TONES["toxic optimist"], TONES["anxious spiraler"]]

    resonant, dissonant, why = gen.select_tones(scenario, again, 4, options)
    assert (resonant, dissonant) == (0, 1) and "makes room for grief" in why and "options shown" in why

    judge_less = LLMSpeechGenerator(client, seed=3, validator=None, judge=None)
    assert judge_less.validate_dialogue(scenario, again)[0] is True
    assert judge_less.select_tones(scenario, again, 4, options)[:2] == templates.select_tones(options)[:2]
    assert {row["role"] for row in cache.ledger()} == {"speech_generator"}


# -- config --------------------------------------------------------------------------------------------------


@pytest.mark.unit
def test_speech_generator_config(tmp_path):
    url = "http://127.0.0.1:9/v1"
    ok = write_slate(
        tmp_path,
        speech={
            "generator": "gen",
            "tone_judge": "tpl",
            "models": [
                remote("gen", url, **SPEECH_LLM),
                remote("check", url, **SPEECH_LLM),
                {"id": "tpl", "model": "template-baseline", "family": "tpl"},
            ],
            "validator": "check",
        },
    )
    speech = load_slate(ok).speech
    assert speech.text_model("generator").id == "gen" and speech.text_model("validator").id == "check"
    assert speech.text_model("tone_judge") is None  # the embedded template rule
    gen = SpeechRoles(load_slate(ok), ModelAccess(data_dir=str(tmp_path))).speech_generator()
    assert isinstance(gen, LLMSpeechGenerator) and gen.validator_name == "check" and gen.judge_name.endswith("rule")
    default = SpeechRoles(load_slate(write_slate(tmp_path)), ModelAccess(data_dir=str(tmp_path))).speech_generator()
    assert isinstance(default, TemplateGenerator)
    for speech, message in (
        ({"generator": "missing"}, "speech.generator: 'missing' is neither"),
        ({"generator": "gen", "validator": "nope", "models": [remote("gen", url, **SPEECH_LLM)]}, "speech.validator"),
        ({"validator": "gen", "models": [remote("gen", url, **SPEECH_LLM)]}, "needs a chat-model generator"),
        ({"models": [{"id": "x", "model": "reflective-baseline", "family": "x"}]}, "only embedded speech text"),
        (
            {"generator": "gen", "models": [remote("gen", url, **SPEECH_LLM), remote("gen", url, **SPEECH_LLM)]},
            "duplicate id",
        ),
        ({"generator": "gen", "extra": 1, "models": [remote("gen", url, **SPEECH_LLM)]}, "extra"),
    ):
        with pytest.raises(SlateError, match=message):
            load_slate(write_slate(tmp_path, speech=speech))


# -- the four text-stage assets on a remote generator --------------------------------------------------------


@pytest.fixture(scope="module")
def remote_text_stages(tmp_path_factory):
    directory = tmp_path_factory.mktemp("speech_llm")
    play = SpeechPlay()
    with serve(play) as server:
        slate = write_slate(
            directory,
            speech={
                "generator": "speech-llm",
                "max_tone_attempts": 3,
                "models": [remote("speech-llm", server.base_url, **SPEECH_LLM, max_concurrency=2)],
            },
        )
        data = directory / "data"
        data.mkdir()
        result = materialize(
            ASSETS,
            selection=TEXT_ASSETS,
            partition_key=SLUG,
            resources=resources_for(slate, data),
            instance=DagsterInstance.ephemeral(),
        )
        assert result.success
        network_calls = len(server.chat_requests)
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    yield con, play, network_calls, CallCache(data / "cache" / "model_calls.sqlite")
    con.close()


@pytest.mark.materialisation
def test_text_stages_on_a_remote_generator(remote_text_stages):
    con, play, network_calls, cache = remote_text_stages
    frames = {
        t: con.execute(f"SELECT * FROM speech.{t}").df()
        for t in ("scenarios", "dialogues", "tone_instructions", "tone_selection")
    }
    for name, df in frames.items():
        assert set(df["generator"]) == {"speech-llm"}, name
        assert df["prompt_hash"].notna().all(), name
    assert len(frames["scenarios"]) == 3 and set(frames["scenarios"]["subscale"]) == {SLUG}

    dialogues = frames["dialogues"]
    per_version = dialogues.groupby(["scenario_id", "attempt"]).size()
    assert set(per_version) == {6}
    rejected = dialogues[~dialogues["accepted"]]
    assert rejected["scenario_id"].nunique() == 1 and set(rejected["attempt"]) == {1}  # the one 'no'
    assert (~rejected["plausible_both_tones"]).all() and rejected["validator_note"].str.contains("Turn 4").all()
    sid = rejected["scenario_id"].iloc[0]
    regenerated = dialogues[(dialogues["scenario_id"] == sid) & dialogues["accepted"]]
    assert set(regenerated["attempt"]) == {2} and regenerated["plausible_both_tones"].all()
    assert regenerated.set_index("turn").loc[4, "text"] == "Okay. I'm here. Take a breath."
    assert (dialogues[dialogues["accepted"]].groupby("scenario_id").size() == 6).all()

    tones = frames["tone_instructions"]
    bad = tones[~tones["accepted"]]
    assert len(bad) == 1 and bad["rejection_reason"].iloc[0].startswith("bland word(s)") and bad["attempt"].iloc[0] == 1
    slot = bad[["scenario_id", "turn", "option_index"]].iloc[0].tolist()
    again = tones[(tones["scenario_id"] == slot[0]) & (tones["turn"] == slot[1]) & (tones["option_index"] == slot[2])]
    assert list(again["attempt"]) == [1, 2] and list(again["accepted"]) == [False, True]
    assert tones["rejection_reason"].isna().sum() == len(tones) - 1
    final = tones[tones["accepted"]]
    assert len(final) == 3 * 10 and final.groupby(["scenario_id", "turn", "option_index"]).size().max() == 1
    assert not final["instruction"].str.startswith('"').any()  # quotes around a reply are stripped

    selection = frames["tone_selection"]
    assert len(selection) == 6 and set(selection["turn"]) == {4, 6}
    assert set(selection["resonant_kind"]) == {"resonant"} and set(selection["dissonant_persona"]) == {"toxic optimist"}
    assert selection["reasoning"].str.contains("makes room for grief").all()
    assert set(selection["judge"]) == {"speech-llm"}

    # requests: 3 scenarios + 1 re-ask, 3 + 1 dialogues, 3 + 1 checks, 30 + 1 tones, 6 selections
    assert play.calls == {
        "speech_scenario": 4,
        "speech_dialogue": 4,
        "speech_dialogue_check": 4,
        "speech_tone": 31,
        "speech_tone_selection": 6,
    }
    assert network_calls == sum(play.calls.values())
    assert set(cache.summary()) == {"speech_generator", "speech_validator", "speech_tone_judge"}


@pytest.mark.materialisation
def test_tone_slots_of_one_scenario_are_asked_side_by_side(tmp_path, localhost_server):
    """One scenario has ten tone slots, independent of each other: with a budget of 4 they are asked four at a
    time (the other stages have at most two requests of one scenario to send at once)."""
    from resources.models.endpoint_gates import gate_for

    play = SpeechPlay()
    server = localhost_server(play, delay_s=0.05)
    slate = write_slate(
        tmp_path,
        speech={
            "generator": "speech-llm",
            "max_tone_attempts": 3,
            "valences": ["Negative"],
            "models": [remote("speech-llm", server.base_url, **SPEECH_LLM, max_concurrency=4)],
        },
    )
    data = tmp_path / "data"
    data.mkdir()
    result = materialize(
        ASSETS,
        selection=TEXT_ASSETS,
        partition_key=SLUG,
        resources=resources_for(slate, data),
        instance=DagsterInstance.ephemeral(),
    )
    assert result.success
    in_flight = gate_for(server.base_url, "speech-llm-v1", 4).max_in_flight
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    tones = con.execute("SELECT turn, option_index, attempt, accepted FROM speech.tone_instructions").df()
    con.close()
    assert in_flight == 4
    # rows in slot order (turn, option), each slot's attempts in order, one accepted instruction per slot
    assert list(tones.itertuples(index=False, name=None)) == sorted(tones.itertuples(index=False, name=None))
    assert int(tones["accepted"].sum()) == 10
