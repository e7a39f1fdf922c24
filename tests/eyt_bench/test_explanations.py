"""Every explained EYT-Bench number against a hand-computed dialogue: the number the pipeline stores
(score_dialogues, the leaderboard's aggregate) and the explanation's value are one and the same, equal to the
arithmetic written out below from docs/eyt-metrics.md, and the explanation's steps carry the actual values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core.explained import agrees, figure, sum_of, term
from eyt_dagster.eyt_bench import analysis, metrics
from eyt_dagster.eyt_bench.dialogue_scoring import explained_dimension_scores, explained_final_verdicts, score_dialogues
from eyt_dagster.eyt_bench.encoder_calibration import CALIBRATIONS, USE_MULTILINGUAL
from eyt_dagster.eyt_bench.leaderboard import AGGREGATED, aggregate, explained_metric
from eyt_dagster.eyt_bench.taxonomy import RUBRIC, SUBSCORE_COLUMNS

pytestmark = pytest.mark.unit

CELL = {"target": "tgt", "pool": "nemotron_usa"}
ALPHA = 0.1
EMPATHY = [f"empathy_{s}" for s in RUBRIC["empathy"]]

# Dialogue a: T = 4, judges j1 and j2; turn 2's calls both failed. Empathy sub-indicators per turn and judge:
A_EMPATHY = {
    1: ((1, 1, 1, 0.5, 0), (1, 0.5, 1, 0.5, 0)),  # sums 3.5 and 3; mean per sub-indicator (1, .75, 1, .5, 0): 3.25
    3: ((1, 1, 1, 1, 0), (1, 1, 1, 1, 1)),  # 4 and 5: 4.5
    4: ((1, 1, 0, 0, 0), (1, 1, 1, 0, 0)),  # 2 and 3: 2.5
}
# Eq. 4 at T = 4, alpha = 0.1: (0.1, 0.1, (1 - 0.2) / 2, (1 - 0.2) / 2) = (0.1, 0.1, 0.4, 0.4). Turn 2 has no verdict,
# so turns 1, 3, 4 weigh 0.1 / 0.9, 0.4 / 0.9, 0.4 / 0.9 = 1/9, 4/9, 4/9 (docs/eyt-metrics.md, missing verdicts).
A_WEIGHTED = (3.25 * 1 + 4.5 * 4 + 2.5 * 4) / 9  # 31.25 / 9 on 0-5
A_EMPATHY_100 = A_WEIGHTED * 20  # 69.44
# Dialogue b: T = 5, judge j1 alone, every turn judged; Empathy turn sums 5, 4, 3, 2, 1.
# Eq. 4: (0.1, 0.1, 0.8 / 3, 0.8 / 3, 0.8 / 3); Eq. 3: 0.5 + 0.4 + (3 + 2 + 1) x 0.8 / 3 = 2.5, on 0-100: 50.
B_SUMS = (5, 4, 3, 2, 1)
B_EMPATHY_100 = (0.1 * 5 + 0.1 * 4 + (3 + 2 + 1) * 0.8 / 3) * 20
# Persona and Anthropomorphic sub-indicators are 0.5 everywhere: 2.5 per turn, 50 on 0-100.


def _subs(empathy: tuple[float, ...]) -> dict[str, float]:
    row = dict.fromkeys(SUBSCORE_COLUMNS, 0.5)
    row.update({c: float(v) for c, v in zip(EMPATHY, empathy)})
    return row


def _verdict(seed_id: str, turn: int, judge: str, empathy: tuple[float, ...] | None) -> dict:
    failed = empathy is None
    subs = dict.fromkeys(SUBSCORE_COLUMNS, np.nan) if failed else _subs(empathy)
    return {**CELL, "seed_id": seed_id, "turn": turn, "judge": judge, "error": "timeout" if failed else None, **subs}


def _turn(seed_id: str, turn: int) -> dict:
    return {
        **CELL,
        "seed_id": seed_id,
        "turn": turn,
        "error": None,
        "complete": True,
        **{f"{side}_{label}": "x" for side in ("gold", "pred") for label in ("explicit_intent", "latent_intent")},
        "gold_emotion": "joy",
        "pred_emotion": "joy",
    }


def _half_points(total: int) -> tuple[float, ...]:
    """`total` whole points over the five sub-indicators, the first ones first."""
    return tuple(1.0 if k < total else 0.0 for k in range(5))


def tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    turns = [_turn("a", t) for t in range(1, 5)] + [_turn("b", t) for t in range(1, 6)]
    verdicts = [_verdict("a", 2, judge, None) for judge in ("j1", "j2")]
    for turn, (one, two) in A_EMPATHY.items():
        verdicts += [_verdict("a", turn, "j1", one), _verdict("a", turn, "j2", two)]
    verdicts += [_verdict("b", t, "j1", _half_points(s)) for t, s in enumerate(B_SUMS, start=1)]
    finals = pd.DataFrame(
        [
            # a: j1 and j2 say completed, j3 not: 2 of 3, completed; satisfaction 5, 4, 2
            {**CELL, "seed_id": "a", "judge": "j1", "completed": True, "satisfaction": 5, "error": None},
            {**CELL, "seed_id": "a", "judge": "j2", "completed": True, "satisfaction": 4, "error": None},
            {**CELL, "seed_id": "a", "judge": "j3", "completed": False, "satisfaction": 2, "error": None},
            # b: one judge says not completed, the other's call failed
            {**CELL, "seed_id": "b", "judge": "j1", "completed": False, "satisfaction": 3, "error": None},
            {**CELL, "seed_id": "b", "judge": "j2", "completed": None, "satisfaction": None, "error": "refused"},
        ]
    ).astype({"completed": "boolean", "satisfaction": "Int64"})
    # intent similarity: a's cos(gold, predicted) per turn; b's are all 1 (drift 0)
    cosines = {"a": (0.9, 0.6, 0.75, 0.35), "b": (1.0,) * 5}
    similarity = pd.DataFrame(
        [
            {**CELL, "seed_id": s, "turn": t, "cos_gold_pred": c, "cos_pred_final": 0.5}
            for s, values in cosines.items()
            for t, c in enumerate(values, start=1)
        ]
    )
    return pd.DataFrame(turns), pd.DataFrame(verdicts), finals, similarity


@pytest.fixture(scope="module")
def scored() -> pd.DataFrame:
    turns, verdicts, finals, similarity = tables()
    return score_dialogues(turns, verdicts, finals, similarity, ALPHA, "mean").set_index("seed_id")


def test_a_dimension_score_is_its_explanation_through_judges_and_warmup_weights(scored):
    _, verdicts, _, _ = tables()
    explained = explained_dimension_scores(verdicts[verdicts["seed_id"] == "a"], 4, ALPHA, "mean")
    empathy = explained["empathy"]
    assert empathy.value == scored.loc["a", "empathy"] == pytest.approx(A_EMPATHY_100)
    steps = {s.label.split(":")[0]: s for s in empathy.steps}
    assert steps["Eq. 4 warm-up weights at T = 4, alpha = 0.1"].values == pytest.approx((0.1, 0.1, 0.4, 0.4))
    assert steps["turn 1"].values == pytest.approx((1, 0.75, 1, 0.5, 0))  # the two judges' mean, per sub-indicator
    assert steps["turn 1"].result == pytest.approx(3.25)
    assert "j1 (1, 1, 1, 0.5, 0); j2 (1, 0.5, 1, 0.5, 0); mean per sub-indicator" in steps["turn 1"].arithmetic
    assert steps["turn 2"].result is None and "no verdict" in steps["turn 2"].label
    assert (steps["turn 3"].result, steps["turn 4"].result) == (4.5, 2.5)
    renormalised = next(s for s in empathy.steps if s.label.startswith("weights renormalised"))
    assert renormalised.values == pytest.approx((1 / 9, 4 / 9, 4 / 9))
    assert renormalised.arithmetic == "0.1 / 0.9, 0.4 / 0.9, 0.4 / 0.9"
    weighted = next(s for s in empathy.steps if s.label.startswith("Eq. 3"))
    assert weighted.values == pytest.approx((1 / 9, 3.25, 4 / 9, 4.5, 4 / 9, 2.5))
    assert weighted.result == pytest.approx(A_WEIGHTED)
    assert empathy.steps[-1].arithmetic == f"{figure(A_WEIGHTED)} x 20" and empathy.steps[-1].result == empathy.value
    assert any("2 judges" in note and "mean" in note for note in empathy.notes)
    for name in ("persona", "anthropomorphic"):
        assert explained[name].value == scored.loc["a", name] == pytest.approx(50.0)


def test_one_judge_and_every_turn_judged_is_eq4_unchanged(scored):
    _, verdicts, _, _ = tables()
    empathy = explained_dimension_scores(verdicts[verdicts["seed_id"] == "b"], 5, ALPHA, "mean")["empathy"]
    assert empathy.value == scored.loc["b", "empathy"] == pytest.approx(B_EMPATHY_100) == pytest.approx(50.0)
    assert [s.result for s in empathy.steps if s.label.startswith("turn ")] == [5, 4, 3, 2, 1]
    assert not any(s.label.startswith("weights renormalised") for s in empathy.steps)
    assert empathy.steps[0].values == pytest.approx((0.1, 0.1, 0.8 / 3, 0.8 / 3, 0.8 / 3))
    assert empathy.steps[0].arithmetic == "w1 = w2 = 0.1; w3..w5 = (1 - 2 x 0.1) / (5 - 2)"


def test_completion_and_satisfaction_from_the_final_verdicts(scored):
    _, _, finals, _ = tables()
    completed, satisfaction = explained_final_verdicts(finals[finals["seed_id"] == "a"], "mean")
    # 2 of 3 judges: 2 x 2 > 3, completed; satisfaction (5 + 4 + 2) / 3 = 11/3, on 0-100 (11/3 - 1) x 25 = 66.67
    assert completed.value is True and bool(scored.loc["a", "completed"]) is True
    vote = completed.steps[-1]
    assert (vote.arithmetic, vote.values) == ("2 of 3: 2 x 2 > 3", (2.0, 3.0))
    assert satisfaction.value == scored.loc["a", "satisfaction"] == pytest.approx((11 / 3 - 1) * 25)
    assert satisfaction.steps[-2].arithmetic == "(5 + 4 + 2) / 3" and satisfaction.steps[-2].result == 11 / 3
    assert satisfaction.steps[-1].arithmetic == f"({figure(11 / 3)} - 1) x 25"
    # b: one verdict (the other call failed): 0 of 1, not completed; satisfaction (3 - 1) x 25 = 50
    completed, satisfaction = explained_final_verdicts(finals[finals["seed_id"] == "b"], "mean")
    assert completed.value is False and bool(scored.loc["b", "completed"]) is False
    assert satisfaction.value == scored.loc["b", "satisfaction"] == 50.0
    assert "j2: its call failed, not counted" in satisfaction.notes
    # the median of three is the middle verdict: 4, (4 - 1) x 25 = 75
    _, median = explained_final_verdicts(finals[finals["seed_id"] == "a"], "median")
    assert median.value == 75.0 and median.steps[-2].arithmetic == "median(5, 4, 2)"


def test_a_tie_is_not_completed():
    _, _, finals, _ = tables()
    tie = finals[finals["seed_id"] == "a"].iloc[[0, 2]]  # j1 yes, j3 no
    completed, _ = explained_final_verdicts(tie, "mean")
    assert completed.value is False and completed.steps[-1].arithmetic == "1 of 2: 1 x 2 > 2"


def test_drift_from_the_turns_similarity(scored):
    _, _, _, similarity = tables()
    a = similarity[similarity["seed_id"] == "a"]
    texts = [("gold one", "predicted one")] * 4
    drift = metrics.explained_intent_drift(a["cos_gold_pred"], turns=a["turn"].tolist(), texts=texts)
    # Eq. 1: 1 - cos per turn (0.1, 0.4, 0.25, 0.65), their mean 1.4 / 4 = 0.35
    assert drift.value == scored.loc["a", "drift"] == pytest.approx(0.35)
    assert [s.result for s in drift.steps[:4]] == pytest.approx([0.1, 0.4, 0.25, 0.65])
    assert drift.steps[0].arithmetic == "1 - 0.9" and drift.steps[0].values == (0.9,)
    assert "gold 'gold one', predicted 'predicted one'" in drift.steps[0].label
    assert drift.steps[-1].arithmetic == "(0.1 + 0.4 + 0.25 + 0.65) / 4"
    # on another encoder's scale: 1.06 x (1 - cos), mean 1.06 x 0.35
    use = CALIBRATIONS[USE_MULTILINGUAL]
    scaled = metrics.explained_intent_drift(a["cos_gold_pred"], use)
    assert scaled.value == metrics.calibrated_intent_drift(a["cos_gold_pred"], use) == pytest.approx(1.06 * 0.35)
    assert scaled.steps[0].arithmetic == "1.06 x (1 - 0.9)"


def test_a_cells_means_are_their_explanations(scored):
    cell = scored.reset_index()
    stored = aggregate(cell)
    for metric in AGGREGATED:
        assert agrees(stored[metric], explained_metric(cell, metric).value), metric
    empathy = explained_metric(cell, "empathy")  # a mean over dialogues: (69.44 + 50) / 2
    assert empathy.value == pytest.approx((A_EMPATHY_100 + B_EMPATHY_100) / 2)
    assert empathy.steps[0].arithmetic == f"{figure(A_EMPATHY_100)} + 50"
    unweighted = explained_metric(cell, "empathy_unweighted")  # pooled over judged turns: turn sums / turns x 20
    assert unweighted.value == pytest.approx((3.25 + 4.5 + 2.5 + 5 + 4 + 3 + 2 + 1) / 8 * 20)
    assert [s.result for s in unweighted.steps] == pytest.approx([25.25, 8, 63.125])
    ficr = explained_metric(cell, "ficr")
    assert (ficr.value, ficr.steps[0].arithmetic) == (0.5, "1 / 2")
    accuracy = explained_metric(cell, "emotion_acc")
    assert (accuracy.value, accuracy.steps[-1].arithmetic) == (1.0, "9 / 9")


def test_a_dialogue_without_a_value_is_left_out_and_said_so(scored):
    cell = scored.reset_index()
    cell.loc[cell["seed_id"] == "b", "satisfaction"] = np.nan
    satisfaction = explained_metric(cell, "satisfaction")
    assert satisfaction.value == aggregate(cell)["satisfaction"] == pytest.approx((11 / 3 - 1) * 25)
    assert "1 finished dialogue(s) left out: no final verdict" in satisfaction.notes[0]


def test_emotion_macro_f1_explained_per_label():
    frame = pd.DataFrame(
        {**CELL, "gold": ["joy", "joy", "sadness", "anger"], "pred": ["joy", "sadness", "sadness", "joy"]}
    )
    explained = metrics.explained_macro_f1(frame, ["target", "pool"], "gold", "pred")
    # anger: 0 right, 0 predicted wrongly, 1 missed: 0; joy: 1, 1, 1: 2/4; sadness: 1, 1, 0: 2/3; mean of the three
    stored = metrics.macro_f1_by(frame, ["target", "pool"], "gold", "pred").iloc[0]
    assert explained.value == stored == pytest.approx((0 + 0.5 + 2 / 3) / 3)
    assert stored == pytest.approx(metrics.macro_f1(frame["gold"], frame["pred"]))
    assert [s.values for s in explained.steps[:3]] == [(0.0, 0.0, 1.0), (1.0, 1.0, 1.0), (1.0, 1.0, 0.0)]
    assert explained.steps[1].label.startswith("joy") and explained.steps[1].arithmetic == "2 x 1 / (2 x 1 + 1 + 1)"
    assert explained.steps[-1].arithmetic == "(0 + 0.5 + 0.666667) / 3"


def test_the_interval_says_how_it_was_drawn(scored):
    cell = scored.reset_index()
    turns = tables()[0]
    row = analysis.leaderboard_intervals(cell, turns, resamples=300, seed=11).set_index("metric").loc["empathy"]
    assert (row["resamples"], row["seed"], row["n_dialogues"]) == (300, 11, 2)
    steps = analysis.explained_interval("empathy", 2, 300, 11, row["ci_low"], row["ci_high"])
    assert steps[0].label.startswith("300 resamples of the 2 dialogue(s), drawn with replacement (default_rng(11))")
    assert steps[0].values == (300.0, 2.0, 11.0) and "the mean of its dialogues' values" in steps[0].label
    assert steps[1].values == (row["ci_low"], row["ci_high"])
    assert steps[1].label == "95% interval: the 2.5th and 97.5th percentiles of the resamples"
    ratio = analysis.explained_interval("emotion_acc", 2, 300, None, float("nan"), float("nan"))
    assert "numerator and denominator" in ratio[0].label and "not recorded" in ratio[0].label
    assert ratio[1].label.startswith("fewer than two dialogues")


def test_figures_and_sums_as_an_explanation_writes_them():
    assert [figure(v) for v in (0.1, 2.0, 1 / 3, np.nan, None, True, np.int64(4), "x")] == [
        "0.1",
        "2",
        "0.333333",
        "missing",
        "missing",
        "yes",
        "4",
        "x",
    ]
    assert sum_of(list(range(20)), limit=4) == "0 + 1 + ... (16 more) ... + 18 + 19"
    assert (term(-1.5), term(2.0)) == ("(-1.5)", "2")
    assert agrees(1.0, 1.0 + 1e-15) and not agrees(1.0, 1.001) and agrees(None, np.nan) and not agrees(1.0, None)
