"""The SpeechEQ forced-choice loop with scripted targets: what each round shows, what round 2 carries under
sequential and direct inference, parse failures, failed calls, and the embedded chooser baselines."""

import base64
import json

import pytest
from pydantic import ValidationError

from eyt_dagster.core.errors import ReplyUnusableError, RoleCallError
from eyt_dagster.core.replies import CallStats, Reply
from eyt_dagster.speech_eq.baseline_choosers import AcousticChooser, RandomChooser, arousal_gap
from eyt_dagster.speech_eq.chat_chooser import oracle_text
from eyt_dagster.speech_eq.choice import choice_messages, choice_round, system_prompt
from eyt_dagster.speech_eq.conditions import CONDITIONS
from eyt_dagster.speech_eq.evaluation import evaluate_item, evaluate_items
from eyt_dagster.speech_eq.protocol import ChoiceReply, option_order
from resources.audio.audio_features import clip_features

from support.speech_items import make_item

pytestmark = pytest.mark.unit

SEED = 7


@pytest.fixture(scope="module")
def item(tmp_path_factory):
    return make_item(tmp_path_factory.mktemp("items"))


class Scripted:
    """A target that answers from a script of options (or exceptions) and records every request."""

    model_id = "scripted"

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []

    def choose(self, request):
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        reply = ChoiceReply(selected_option=answer, reasoning="scripted")
        return Reply(
            value=reply,
            raw=reply.model_dump_json(),
            stats=CallStats(calls=1, tokens_in=100, tokens_out=20, cost_usd=0.001, latency_s=0.5),
        )


def wrong(round_):
    return 2 if round_.order[0] == "resonant" else 1


def test_round_one_shows_the_opening_and_the_turn4_pair_in_the_seeded_order(item):
    r1 = choice_round(item, 1, SEED, "seeded")
    assert [u.turn for u in r1.shown] == [1, 2, 3] and all(u.role == "context" for u in r1.shown)
    assert r1.order == option_order(item.dataset_id, 1, SEED)
    assert {u.turn for u in r1.options} == {4} and {u.text for u in r1.options} == {item.conversation[3].text}
    flipped = choice_round(item, 1, SEED, "flipped")
    assert flipped.order == r1.order[::-1] and flipped.correct_option == 3 - r1.correct_option
    with pytest.raises(ValueError, match="round 2 needs"):
        choice_round(item, 2, SEED, "seeded")


def test_sequential_round2_carries_the_chosen_clip_and_direct_the_correct_one(item):
    r1 = choice_round(item, 1, SEED, "seeded")
    target = Scripted([wrong(r1), 1, 1])  # round 1 wrong, then round 2 (sequential), round 2 (direct)
    rows = evaluate_item(
        item,
        target,
        condition="default",
        system_prompt="sys",
        seed=SEED,
        orders=["seeded"],
        inference=["sequential", "direct"],
    )
    first, seq2, direct2 = target.requests
    assert first.round2 is None
    assert seq2.round2.shown[0].role == "dissonant" and seq2.round2.shown[0].path == item.clip(4, "low").path
    assert direct2.round2.shown[0].role == "resonant" and direct2.round2.shown[0].path == item.clip(4, "high").path
    assert seq2.round2.shown[1].turn == 5 and {u.turn for u in seq2.round2.options} == {6}
    assert json.loads(direct2.round1_answer)["selected_option"] == r1.correct_option
    assert json.loads(seq2.round1_answer)["selected_option"] == wrong(r1)
    # rows: round 1 once per inference mode (the second a shared copy), round 2 per mode
    assert [(r["round"], r["inference"], r["shared_call"]) for r in rows] == [
        (1, "sequential", False),
        (2, "sequential", False),
        (1, "direct", True),
        (2, "direct", False),
    ]
    assert rows[0]["correct"] is False and rows[1]["history_turn4"] == "dissonant"
    assert rows[3]["history_turn4"] == "resonant"
    assert rows[0]["tokens"] == 120 and rows[0]["cost_usd"] == pytest.approx(0.001)


def test_both_orders_ask_each_round_twice_with_options_swapped(item):
    target = Scripted([1] * 8)
    rows = evaluate_item(
        item,
        target,
        condition="default",
        system_prompt="sys",
        seed=SEED,
        orders=["seeded", "flipped"],
        inference=["sequential"],
    )
    assert [(r["order"], r["round"]) for r in rows] == [("seeded", 1), ("seeded", 2), ("flipped", 1), ("flipped", 2)]
    assert rows[0]["option1"] == rows[2]["option2"] and rows[0]["correct"] != rows[2]["correct"]


def test_a_reply_that_never_parses_is_wrong_and_counted(item):
    bad = ReplyUnusableError("model 'm' (speech_eq_round1): reply did not validate after 3 attempt(s): nope")
    bad.raw = "I like the second one"
    target = Scripted([bad, 1])
    rows = evaluate_item(
        item, target, condition="default", system_prompt="sys", seed=SEED, orders=["seeded"], inference=["sequential"]
    )
    assert rows[0]["parse_failed"] is True and rows[0]["correct"] is False and rows[0]["selected_option"] is None
    assert "did not parse" in rows[0]["reasoning"]
    # the trajectory goes on as after a wrong choice, with the unparsed text as the target's own answer
    assert target.requests[1].round2.shown[0].role == "dissonant"
    assert target.requests[1].round1_answer == "I like the second one"
    assert rows[1]["parse_failed"] is False


def test_a_failed_call_is_an_error_row_and_round2_is_not_asked(item):
    target = Scripted([RoleCallError("model 'm' at http://x: HTTP 500")])
    rows = evaluate_item(
        item,
        target,
        condition="default",
        system_prompt="sys",
        seed=SEED,
        orders=["seeded"],
        inference=["sequential", "direct"],
    )
    assert len(target.requests) == 1
    assert [r["round"] for r in rows] == [1, 1]
    assert all(r["correct"] is None and "HTTP 500" in r["error"] for r in rows)


def test_a_bug_in_a_target_fails_loudly(item):
    with pytest.raises(ZeroDivisionError):
        evaluate_item(
            item,
            Scripted([ZeroDivisionError()]),
            condition="default",
            system_prompt="s",
            seed=SEED,
            orders=["seeded"],
            inference=["sequential"],
        )


def test_every_condition_is_asked_with_its_own_system_prompt(item, tmp_path):
    items = [item, make_item(tmp_path, "item-2")]
    prompts = {name: system_prompt(name) for name in CONDITIONS}
    assert len(set(prompts.values())) == len(CONDITIONS)
    target = Scripted([1] * (2 * len(CONDITIONS) * 2))
    progress = []
    rows = evaluate_items(
        items,
        target,
        conditions=prompts,
        seed=SEED,
        both_orders=False,
        inference=["sequential"],
        on_done=lambda done, total: progress.append((done, total)),
    )
    assert {r["condition"] for r in rows} == set(CONDITIONS)
    assert {req.system_prompt for req in target.requests} == set(prompts.values())
    assert progress[-1] == (2 * len(CONDITIONS), 2 * len(CONDITIONS))


@pytest.mark.parametrize("raw, expected", [(1, 1), ("2", 2), ("Option 1", 1), ("option2", 2), ("OPTION 2", 2)])
def test_choice_reply_reads_the_ways_models_name_an_option(raw, expected):
    assert ChoiceReply.model_validate({"selected_option": raw}).selected_option == expected


@pytest.mark.parametrize("raw", [3, "Option 3", "both", "12", None])
def test_choice_reply_refuses_anything_else(raw):
    with pytest.raises(ValidationError):
        ChoiceReply.model_validate({"selected_option": raw})


def test_round2_messages_continue_round1_with_the_answer_and_the_history_clip(item):
    def render(clip):
        return [
            {
                "type": "input_audio",
                "input_audio": {"data": base64.b64encode(clip.path.encode()).decode(), "format": "wav"},
            }
        ]

    r1 = choice_round(item, 1, SEED, "seeded")
    target = Scripted([r1.correct_option, 1])
    evaluate_item(
        item, target, condition="default", system_prompt="SYS", seed=SEED, orders=["seeded"], inference=["sequential"]
    )
    messages = choice_messages(target.requests[1], render)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"] == "SYS"

    def heard(content):
        return [base64.b64decode(p["input_audio"]["data"]).decode() for p in content if p["type"] == "input_audio"]

    r1_paths = [item.clip(t).path for t in (1, 2, 3)] + [u.path for u in r1.options]
    assert heard(messages[1]["content"]) == r1_paths
    r2 = target.requests[1].round2
    assert heard(messages[3]["content"]) == [
        item.clip(4, "high").path,
        item.clip(5).path,
        *(u.path for u in r2.options),
    ]
    assert json.loads(messages[2]["content"])["selected_option"] == r1.correct_option


def test_oracle_rendering_gives_words_and_tone_instruction(item):
    target = Scripted([1, 1])
    evaluate_item(
        item, target, condition="default", system_prompt="s", seed=SEED, orders=["seeded"], inference=["sequential"]
    )
    messages = choice_messages(target.requests[0], oracle_text)
    text = messages[1]["content"]
    assert isinstance(text, str)  # text-only targets get one plain string
    assert "slow, low and warm" in text and "loud, fast and chirpy" in text and item.conversation[0].text in text
    assert "Option 1:" in text and "Option 2:" in text


def test_random_baseline_is_reproducible_and_near_chance(tmp_path):
    items = [make_item(tmp_path, f"item-{i}") for i in range(40)]
    prompts = {"default": "s"}
    runs = [
        evaluate_items(
            items,
            RandomChooser("random", SEED),
            conditions=prompts,
            seed=SEED,
            both_orders=False,
            inference=["sequential"],
        )
        for _ in range(2)
    ]
    assert [r["selected_option"] for r in runs[0]] == [r["selected_option"] for r in runs[1]]
    accuracy = sum(r["correct"] for r in runs[0]) / len(runs[0])
    assert 0.3 < accuracy < 0.7
    other = evaluate_items(
        items,
        RandomChooser("random", SEED + 1),
        conditions=prompts,
        seed=SEED,
        both_orders=False,
        inference=["sequential"],
    )
    assert [r["selected_option"] for r in other] != [r["selected_option"] for r in runs[0]]


def test_acoustic_baseline_picks_the_calm_voice_for_pain_and_the_lively_one_for_joy(tmp_path):
    calm = make_item(tmp_path / "neg", "neg", valence="Negative")
    assert (
        arousal_gap(
            clip_features(calm.clip(4, "low").path),
            clip_features(calm.clip(4, "high").path),
            AcousticChooser("a", clip_features).units,
        )
        > 0
    )  # the dissonant clip here is livelier
    chooser = AcousticChooser("acoustic", clip_features)
    rows = evaluate_item(
        calm,
        chooser,
        condition="default",
        system_prompt="s",
        seed=SEED,
        orders=["seeded", "flipped"],
        inference=["sequential"],
    )
    assert all(r["correct"] for r in rows)  # resonant = calm for a Negative scene, whatever the order
    # a Positive scene whose resonant clips are the lively ones
    lively = {"04": (320, 0.6, 0.8), "05": (190, 0.1, 1.6), "07": (330, 0.6, 0.8), "08": (185, 0.1, 1.6)}
    joy = make_item(tmp_path / "pos", "pos", valence="Positive", voices=lively)
    rows = evaluate_item(
        joy, chooser, condition="default", system_prompt="s", seed=SEED, orders=["seeded"], inference=["sequential"]
    )
    assert all(r["correct"] for r in rows)


def test_the_embedded_baselines_fill_the_paper_reply_structure(item):
    rows = evaluate_item(
        item,
        AcousticChooser("acoustic", clip_features),
        condition="default",
        system_prompt="s",
        seed=SEED,
        orders=["seeded"],
        inference=["sequential"],
    )
    first = rows[0]
    assert first["reply_format"] == "paper"
    # each option's profile is its measures: the calm resonant clip is quieter and longer than the lively one
    profiles = {first["option1"]: first["acoustic_profile_1"], first["option2"]: first["acoustic_profile_2"]}
    assert all(" Hz" in p and "dBFS" in p and "acoustic baseline" in p for p in profiles.values())
    resonant = clip_features(item.clip(4, "high").path)
    assert (
        f"{resonant.rms_db:.1f} dBFS" in profiles["resonant"] and f"{resonant.duration_s:.2f} s" in profiles["resonant"]
    )
    assert "calmer" in first["situational_demand"] and "negative" in first["situational_demand"]
    coin = evaluate_item(
        item,
        RandomChooser("random", SEED),
        condition="default",
        system_prompt="s",
        seed=SEED,
        orders=["seeded"],
        inference=["sequential"],
        reply_format="short",
    )
    assert coin[0]["reply_format"] == "short" and coin[0]["acoustic_profile_1"] is None
    paper = evaluate_item(
        item,
        RandomChooser("random", SEED),
        condition="default",
        system_prompt="s",
        seed=SEED,
        orders=["seeded"],
        inference=["sequential"],
    )
    assert "not listened to" in paper[0]["acoustic_profile_1"]
    assert [r["selected_option"] for r in paper] == [r["selected_option"] for r in coin]  # the same coin


def test_direct_history_answer_is_in_the_reply_format(item):
    r1 = choice_round(item, 1, SEED, "seeded")
    for reply_format, keys in (
        ("paper", ["acoustic_profile_1", "acoustic_profile_2", "situational_demand", "reasoning", "selected_option"]),
        ("short", ["reasoning", "selected_option"]),
    ):
        target = Scripted([1, 1])
        evaluate_item(
            item,
            target,
            condition="default",
            system_prompt="s",
            seed=SEED,
            orders=["seeded"],
            inference=["direct"],
            reply_format=reply_format,
        )
        answer = json.loads(target.requests[1].round1_answer)
        assert list(answer) == keys and answer["selected_option"] == r1.correct_option
        assert all(r.reply_format == reply_format for r in target.requests)


def test_an_unknown_reply_format_is_refused(item):
    with pytest.raises(ValueError, match="reply format 'long' is unknown"):
        evaluate_item(
            item,
            Scripted([1]),
            condition="default",
            system_prompt="s",
            seed=SEED,
            orders=["seeded"],
            inference=["sequential"],
            reply_format="long",
        )
