"""The sample `eyt annotate export` draws and the sheet it writes, on hand-made frames: only finished, judged
dialogues with a final verdict; the same ChatSEEDs for every target of a pool; seeded and uniform; all of them when
fewer are available; blind item ids; the sheet's rows; the rubric read from the judge's prompts."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from eyt_dagster.eyt_bench import annotation_sample as sample
from eyt_dagster.eyt_bench.annotation_sheet import SHEET_COLUMNS, SheetItem, SheetManifest, dialogue_digest
from eyt_dagster.eyt_bench.prompts import load_prompts, render

pytestmark = pytest.mark.unit

P, Q = "nemotron_usa", "personamem_v2"


def scores_frame(rows: list[tuple[str, str, str, object]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["target", "pool", "seed_id", "completed"])


def verdicts_frame(rows: list[tuple[str, str, str, int, str | None]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["target", "pool", "seed_id", "turn", "error"])


# Pool P: target a finished s1-s6, target b s1-s5. b's s3 has no verdict without error, b's s5 no final verdict,
# a's s6 is not b's: the ChatSEEDs both can be sampled on are s1, s2 and s4. Pool Q: only a played it (q1, q2).
SCORES = scores_frame(
    [("a", P, f"s{i}", True) for i in range(1, 7)]
    + [("b", P, f"s{i}", i % 2 == 0) for i in range(1, 5)]
    + [("b", P, "s5", None)]
    + [("a", Q, "q1", False), ("a", Q, "q2", True)]
)
VERDICTS = verdicts_frame(
    [(t, P, f"s{i}", n, None) for t in "ab" for i in range(1, 7) for n in (1, 2) if (t, i) != ("b", 3)]
    + [("b", P, "s3", 1, "timeout"), ("b", P, "s3", 2, "invalid reply")]
    + [("a", P, "s1", 3, "timeout"), ("a", P, "s1", 0, None)]  # a failed verdict and an error row's turn 0
    + [("a", Q, "q1", 1, None), ("a", Q, "q2", 2, None)]
)


def test_judged_turns_are_the_turns_with_a_verdict_without_error():
    judged = sample.judged_turns(VERDICTS)
    assert judged[("a", P, "s1")] == (1, 2)  # turn 3's verdict failed, turn 0 is no turn
    assert ("b", P, "s3") not in judged
    assert judged[("a", Q, "q2")] == (2,)


def test_only_finished_judged_dialogues_with_a_final_verdict_can_be_sampled():
    eligible = sample.finished_judged(SCORES, sample.judged_turns(VERDICTS))
    b_in_p = sorted(s for t, p, s in eligible if (t, p) == ("b", P))
    assert b_in_p == ["s1", "s2", "s4"]  # s3: no judged turn; s5: no final verdict (completed False still counts)
    assert sorted(s for t, p, s in eligible if (t, p) == ("a", P)) == ["s1", "s2", "s3", "s4", "s5", "s6"]


def test_every_target_of_a_pool_gets_the_same_chatseeds():
    eligible = sample.finished_judged(SCORES, sample.judged_turns(VERDICTS))
    by_pool = sample.pool_targets(SCORES, ["a", "b", "c"], [P, Q])
    assert by_pool == {P: ("a", "b"), Q: ("a",)}  # c played nothing; Q only a
    draws = {d.pool: d for d in sample.draw(eligible, by_pool, 2, seed=7)}
    assert draws[P].available == 3 and len(draws[P].seed_ids) == 2
    assert set(draws[P].seed_ids) <= {"s1", "s2", "s4"}
    assert draws[Q].seed_ids == ("q1", "q2") and draws[Q].available == 2
    judged = sample.judged_turns(VERDICTS)
    keys = {(t, d.pool, s) for d in draws.values() for t in d.targets for s in d.seed_ids}
    made = sample.blind_items(list(draws.values()), judged, dict.fromkeys(keys, "d"), 7)
    per_target = {t: sorted(i.seed_id for i in made if (i.target, i.pool) == (t, P)) for t in "ab"}
    assert per_target["a"] == per_target["b"] == sorted(draws[P].seed_ids)


def test_fewer_available_than_asked_takes_all_of_them_and_says_so():
    eligible = sample.finished_judged(SCORES, sample.judged_turns(VERDICTS))
    (drawn,) = sample.draw(eligible, {P: ("a", "b")}, 10, seed=1)
    assert drawn.seed_ids == ("s1", "s2", "s4")
    assert drawn.short and drawn.available == 3 and drawn.asked == 10
    (enough,) = sample.draw(eligible, {P: ("a", "b")}, 3, seed=1)
    assert not enough.short


def test_the_draw_is_seeded_and_uniform():
    ids = [f"s{i:02d}" for i in range(10)]
    eligible = [(t, P, s) for t in "ab" for s in ids]
    first = sample.draw(eligible, {P: ("a", "b")}, 3, seed=5)
    assert sample.draw(eligible, {P: ("a", "b")}, 3, seed=5) == first
    drawn = [sample.draw(eligible, {P: ("a", "b")}, 3, seed=s)[0].seed_ids for s in range(3000)]
    assert len(set(drawn)) > 100  # the seed changes the draw
    counts = Counter(s for d in drawn for s in d)
    # each ChatSEED in 3 of 10 draws: 900 of 3000 expected, sd 25; 6 sd either side
    assert all(750 < counts[s] < 1050 for s in ids), counts


def test_items_are_shuffled_with_the_seed_and_named_in_order():
    draws = [sample.PoolDraw(P, ("a", "b"), 3, 3, ("s1", "s2", "s4")), sample.PoolDraw(Q, ("a",), 2, 3, ("q1", "q2"))]
    judged = sample.judged_turns(VERDICTS)
    keys = [(t, d.pool, s) for d in draws for t in d.targets for s in d.seed_ids]
    digests = {k: "-".join(k) for k in keys}
    items = sample.blind_items(draws, judged, digests, 11)
    assert [i.item for i in items] == [f"i{n:03d}" for n in range(1, 9)]
    assert sorted((i.target, i.pool, i.seed_id) for i in items) == sorted(keys)
    assert all(i.digest == "-".join((i.target, i.pool, i.seed_id)) for i in items)
    assert all(i.turns == judged[(i.target, i.pool, i.seed_id)] for i in items)
    assert sample.blind_items(draws, judged, digests, 11) == items
    orders = {tuple(i.seed_id + i.target for i in sample.blind_items(draws, judged, digests, s)) for s in range(20)}
    assert len(orders) > 10  # the order is the seed's, not the keys'
    assert sample.item_name(7, 999) == "i007" and sample.item_name(7, 1000) == "i0007"


def test_the_sheet_has_a_row_per_judged_turn_and_a_final_row_per_item():
    items = (
        SheetItem(item="i001", target="a", pool=P, seed_id="s1", turns=(1, 3), digest="x"),
        SheetItem(item="i002", target="b", pool=P, seed_id="s1", turns=(2,), digest="y"),
    )
    manifest = SheetManifest(sheet="s7-abc", slate="t", seed=7, per_cell=1, created_at="now", items=items)
    blank = dict.fromkeys(SHEET_COLUMNS, "")
    expected = [
        blank | {"sheet": "s7-abc", "item": "i001", "turn": "1"},
        blank | {"sheet": "s7-abc", "item": "i001", "turn": "3"},
        blank | {"sheet": "s7-abc", "item": "i001", "turn": "final"},
        blank | {"sheet": "s7-abc", "item": "i002", "turn": "2"},
        blank | {"sheet": "s7-abc", "item": "i002", "turn": "final"},
    ]
    assert sample.sheet_rows(manifest) == expected
    assert sample.sheet_rows(manifest, "ann") == [r | {"annotator": "ann"} for r in expected]
    assert all(list(r) == list(SHEET_COLUMNS) for r in sample.sheet_rows(manifest))


def test_digests_and_views_come_from_the_dialogue_s_own_turns():
    turns = pd.DataFrame(
        [
            ("a", P, "s1", 2, "second", "reply 2", True, None),
            ("a", P, "s1", 1, "first", "reply 1", True, None),
            ("b", P, "s1", 1, "other", "other reply", True, None),
        ],
        columns=["target", "pool", "seed_id", "turn", "user_text", "response_text", "complete", "error"],
    )
    digests = sample.digests_of(turns, [("a", P, "s1")])
    assert digests == {("a", P, "s1"): dialogue_digest(turns.iloc[:2].to_dict("records"))}
    assert digests[("a", P, "s1")] != dialogue_digest(turns.iloc[2:].to_dict("records"))
    seeds = pd.DataFrame(
        [(P, "s1", "a nurse", "find a new job")], columns=["pool", "seed_id", "persona_text", "final_intent"]
    )
    item = SheetItem(item="i001", target="a", pool=P, seed_id="s1", turns=(2,), digest="x")
    manifest = SheetManifest(sheet="s", slate="t", seed=1, per_cell=1, created_at="now", items=(item,))
    (view,) = sample.dialogue_views(manifest, turns, seeds)
    assert (view.item, view.persona, view.goal) == ("i001", "a nurse", "find a new job")
    assert view.exchanges == (
        sample.Exchange(1, "first", "reply 1", judged=False),
        sample.Exchange(2, "second", "reply 2", judged=True),
    )


@pytest.mark.parametrize(
    ("language", "headings"),
    [
        ("en", ["Empathy", "Persona alignment", "Anthropomorphic interaction"]),
        ("zh", ["共情", "人设一致", "拟人化交流"]),
    ],
)
def test_the_rubric_is_read_from_the_judge_s_prompt(language, headings):
    dims = sample.rubric(str(load_prompts(language)["judge_turn"]["system"]))
    assert [d.field for d in dims] == ["empathy", "persona", "anthropomorphic"]
    assert [d.heading for d in dims] == headings
    assert [len(d.criteria) for d in dims] == [5, 5, 5]
    assert dims[0].criteria[0].name == "empathy_recognition"
    if language == "en":
        assert dims[0].criteria[0].text == "notices the feeling the user expresses or implies"
        assert dims[2].criteria[4].text == "length and pacing suit the moment"
    question = sample.final_question(render("judge_final", "system", language))
    assert "JSON" not in question and "rationale" not in question
    if language == "en":
        assert question.startswith("You are an impartial evaluator.")
        assert question.endswith("how satisfied the user would be overall.")


def test_a_prompt_missing_a_criterion_is_an_error():
    text = "Empathy\n- empathy_recognition: notices\n"
    with pytest.raises(ValueError, match="empathy_attribution"):
        sample.rubric(text)
