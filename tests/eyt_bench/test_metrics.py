"""The metric formulas against hand-computed cases and the paper's worked values."""

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench import metrics
from eyt_dagster.eyt_bench.dialogue_scoring import weighted_by_dialogue
from eyt_dagster.eyt_bench.leaderboard import aggregate
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS

pytestmark = pytest.mark.unit


def test_table2_weights_t10_alpha010_are_all_one_tenth():
    # Paper Table 2: T = 10, alpha = 0.10 gives ten weights of 0.10.
    np.testing.assert_allclose(metrics.warmup_weights(10, 0.10), [0.1] * 10)


@pytest.mark.parametrize(
    ("n", "alpha", "expected"),
    [
        (4, 0.10, [0.1, 0.1, 0.4, 0.4]),  # (1 - 0.2) / 2
        (5, 0.15, [0.15, 0.15, 0.7 / 3, 0.7 / 3, 0.7 / 3]),
        (2, 0.10, [0.5, 0.5]),  # T_actual = 2 uses (0.5, 0.5) (docs/eyt-metrics.md)
        (3, 0.05, [0.05, 0.05, 0.9]),
    ],
)
def test_weights_regenerate_at_the_dialogue_length(n, alpha, expected):
    w = metrics.warmup_weights(n, alpha)
    np.testing.assert_allclose(w, expected)
    assert w.sum() == pytest.approx(1.0)


def _verdicts(rows):
    """rows: (seed_id, turn, empathy sum 0-5 spread over the empathy sub-scores)."""
    out = []
    for seed_id, turn, value in rows:
        row = {"target": "t", "pool": "nemotron_usa", "seed_id": seed_id, "turn": turn}
        row.update({c: 0.0 for c in SUBSCORE_COLUMNS})
        # put `value` as whole and half points on the empathy sub-indicators
        remaining = value
        for c in [c for c in SUBSCORE_COLUMNS if c.startswith("empathy_")]:
            row[c] = min(1.0, remaining)
            remaining -= row[c]
        out.append(row)
    return pd.DataFrame(out)


def test_short_early_stopped_dialogue_weighted_and_unweighted():
    # Dialogue a stops at T = 3 with empathy sums 5, 1, 2; dialogue b runs T = 2 with 4, 2.
    sums = metrics.dimension_sums(_verdicts([("a", 1, 5), ("a", 2, 1), ("a", 3, 2), ("b", 1, 4), ("b", 2, 2)]))
    lengths = pd.Series({("t", "nemotron_usa", "a"): 3, ("t", "nemotron_usa", "b"): 2}, name="n_turns")
    lengths.index.names = ["target", "pool", "seed_id"]
    per_dialogue = weighted_by_dialogue(sums, lengths, alpha=0.10)
    per_dialogue["n_turns"] = per_dialogue["n_judged_turns"]
    for short in ("explicit", "latent", "emotion"):
        per_dialogue[f"{short}_correct"] = 0
    per_dialogue["drift"] = per_dialogue["satisfaction"] = 0.0
    per_dialogue["completed"] = False
    scores = aggregate(per_dialogue)
    weighted_a = 0.1 * 5 + 0.1 * 1 + 0.8 * 2  # = 2.2
    weighted_b = 0.5 * 4 + 0.5 * 2  # = 3.0
    assert scores["empathy"] == pytest.approx((weighted_a + weighted_b) / 2 * 20)  # 52.0
    a = per_dialogue.set_index("seed_id").loc["a"]
    assert a["empathy_early"] == 3.0 and a["empathy_late"] == 2.0  # warm-up split: turns 1-2 vs 3+
    assert scores["empathy_unweighted"] == pytest.approx((5 + 1 + 2 + 4 + 2) / 5 * 20)  # 56.0
    assert scores["persona"] == 0.0


def test_half_points_sum_into_the_dimension():
    frame = _verdicts([("a", 1, 2.5)])
    assert metrics.dimension_sums(frame)["empathy"].iloc[0] == 2.5


def test_accuracy_and_macro_f1_hand_computed():
    gold = pd.Series(["joy", "joy", "anger", "fear"])
    pred = pd.Series(["joy", "anger", "anger", "joy"])
    # accuracy pools turns over dialogues: hits / turns (here one dialogue of 4 turns, 2 hits)
    per_dialogue = pd.DataFrame(
        {
            "n_turns": [4],
            "explicit_correct": [2],
            "latent_correct": [0],
            "emotion_correct": [int((gold == pred).sum())],
            "drift": [0.0],
            "completed": [True],
            "satisfaction": [50.0],
            "n_judged_turns": [0],
            **{c: [0.0] for d in ("empathy", "persona", "anthropomorphic") for c in (d, f"{d}_sum")},
        }
    )
    assert aggregate(per_dialogue)["emotion_acc"] == 0.5
    # per class F1: joy P=1/2 R=1/2 -> 0.5; anger P=1/2 R=1 -> 2/3; fear 0 -> macro (0.5 + 2/3 + 0) / 3
    assert metrics.macro_f1(gold, pred) == pytest.approx((0.5 + 2 / 3 + 0.0) / 3)


def test_drift_is_mean_of_one_minus_cosine():
    assert metrics.intent_drift(pd.Series([1.0, 0.5, 0.0])) == pytest.approx(0.5)


def test_drift_on_a_known_pair_with_the_real_encoder():
    from resources.text.embeddings import embed

    same = "I want to find a cheaper flight to Denver."
    vectors = embed([same, same, "Tell me a joke about penguins."])
    assert metrics.intent_drift(pd.Series([float(vectors[0] @ vectors[1])])) == pytest.approx(0.0, abs=1e-5)
    unrelated = metrics.intent_drift(pd.Series([float(vectors[0] @ vectors[2])]))
    assert 0.7 < unrelated <= 1.2


def test_satisfaction_maps_1_to_5_onto_0_to_100():
    assert list(metrics.satisfaction_to_100(pd.Series([1, 3, 5]))) == [0.0, 50.0, 100.0]


def test_majority_vote_with_a_tie_counts_as_not_completed():
    finals = pd.DataFrame(
        {
            "target": ["t"] * 5,
            "pool": ["p"] * 5,
            "seed_id": ["a", "a", "b", "b", "b"],
            "judge": ["j1", "j2", "j1", "j2", "j3"],
            "completed": [True, False, True, True, False],
            "satisfaction": [4, 2, 5, 4, 3],
        }
    )
    combined = metrics.combine_final_verdicts(finals).set_index("seed_id")
    assert not combined.loc["a", "completed"]  # 1 of 2: a tie
    assert combined.loc["b", "completed"]  # 2 of 3
    assert combined.loc["a", "satisfaction"] == 3.0
    assert metrics.combine_final_verdicts(finals, "median").set_index("seed_id").loc["b", "satisfaction"] == 4.0
