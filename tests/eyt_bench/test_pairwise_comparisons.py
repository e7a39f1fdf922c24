"""dialogue.pairwise_comparisons at many targets: one shared resample matrix gives each pair the bootstrap it had
on its own, the Holm adjustment over a pool and metric keeps copies of one model apart from a real difference,
and a target missing ChatSEEDs is compared on the ones both played."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core import stats
from eyt_dagster.eyt_bench import analysis

pytestmark = pytest.mark.unit

POOL, SEEDS = "nemotron_usa", 40


def base_scores(rng: np.random.Generator) -> pd.DataFrame:
    n_turns = rng.integers(3, 11, size=SEEDS)
    return pd.DataFrame(
        {
            "pool": POOL,
            "seed_id": [f"{POOL}:p{i:02d}" for i in range(SEEDS)],
            "n_turns": n_turns,
            "explicit_correct": rng.binomial(n_turns, 0.7),
            "latent_correct": rng.binomial(n_turns, 0.5),
            "emotion_correct": rng.binomial(n_turns, 0.6),
            "drift": rng.uniform(0, 1, SEEDS),
            "completed": rng.random(SEEDS) < 0.6,
            "satisfaction": rng.integers(1, 6, SEEDS).astype(float),
            "empathy": rng.uniform(20, 80, SEEDS),
            "persona": rng.uniform(20, 80, SEEDS),
            "anthropomorphic": rng.uniform(20, 80, SEEDS),
        }
    )


def copies(n: int, rng: np.random.Generator, noise: float = 0.01) -> pd.DataFrame:
    """n targets that are one model with a tiny jitter on every continuous score."""
    base = base_scores(rng)
    frames = []
    for t in range(n):
        frame = base.assign(target=f"copy-{t:02d}")
        for column in ("drift", "satisfaction", "empathy", "persona", "anthropomorphic"):
            frame[column] = frame[column] + rng.normal(0, noise, SEEDS)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_thirty_copies_of_one_model_are_never_separated_after_adjustment_and_a_real_difference_is():
    rng = np.random.default_rng(2026)
    scores = copies(30, rng)
    better = scores[scores["target"] == "copy-00"].assign(target="better")
    better["empathy"] = better["empathy"] + 15 + rng.normal(0, 2, SEEDS)
    table = analysis.pairwise_comparisons(pd.concat([scores, better]), resamples=1000, seed=7)
    among_copies = table[~table["target_a"].eq("better") & ~table["target_b"].eq("better")]
    assert len(among_copies) == 435 * len(analysis.PAIRED_METRICS)
    # unadjusted, about 5% of the intervals between copies exclude zero by chance; adjusted, none is significant
    chance = among_copies["excludes_zero"].mean()
    assert 0.01 < chance < 0.12, chance
    assert not among_copies["significant_adjusted"].any()
    empathy = table[(table["metric"] == "empathy") & (table["target_a"].eq("better") | table["target_b"].eq("better"))]
    assert len(empathy) == 30 and empathy["significant_adjusted"].all()
    assert (empathy["p_adjusted"] >= empathy["p_value"]).all()
    # the minimum detectable difference is about 2.8 standard errors, far below the 15 points added
    assert empathy["mde_80"].to_numpy() == pytest.approx(2.8016 * empathy["se"].to_numpy(), rel=1e-4)
    assert empathy["mde_80"].max() < 5


def test_a_target_missing_chatseeds_is_compared_on_the_ones_both_played():
    rng = np.random.default_rng(5)
    scores = copies(3, rng, noise=5.0)
    short = scores[(scores["target"] == "copy-02") & (scores["seed_id"] < f"{POOL}:p30")]
    scores = pd.concat([scores[scores["target"] != "copy-02"], short])
    table = analysis.pairwise_comparisons(scores, resamples=500, seed=9)
    row = table[(table["metric"] == "empathy") & (table["target_a"] == "copy-00") & (table["target_b"] == "copy-02")]
    left = scores[scores["target"] == "copy-00"].set_index("seed_id")
    right = scores[scores["target"] == "copy-02"].set_index("seed_id")
    shared = left.index.intersection(right.index)
    alone = stats.paired_bootstrap_diff(
        left.loc[shared, "empathy"].to_numpy(), right.loc[shared, "empathy"].to_numpy(), resamples=500, seed=9
    )
    assert int(row["n_paired"].iloc[0]) == 30 == alone["n"]
    assert row["ci_low"].iloc[0] == pytest.approx(alone["low"]) and row["diff"].iloc[0] == pytest.approx(alone["diff"])
    assert row["mean_a"].iloc[0] == pytest.approx(left.loc[shared, "empathy"].mean())


def test_no_pair_no_rows():
    rng = np.random.default_rng(1)
    table = analysis.pairwise_comparisons(copies(1, rng), resamples=100, seed=1)
    assert table.empty and list(table.columns) == list(analysis.PAIRWISE_COLUMNS)
