"""dialogue.rank_intervals: ranks by hand on a tiny pool, ties, drift ranked lowest-first, and intervals that are
narrow for a clear leader and wide for copies of one model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench.rank_intervals import rank_intervals

pytestmark = pytest.mark.unit

POOL = "nemotron_usa"


def frame(values: dict[str, list[float]], drift: dict[str, list[float]] | None = None) -> pd.DataFrame:
    rows = []
    for target, empathy in values.items():
        for i, v in enumerate(empathy):
            rows.append(
                {
                    "target": target,
                    "pool": POOL,
                    "seed_id": f"{POOL}:p{i:02d}",
                    "n_turns": 4,
                    "explicit_correct": 2,
                    "latent_correct": 2,
                    "emotion_correct": 2,
                    "drift": (drift or {}).get(target, [0.5] * len(empathy))[i],
                    "completed": True,
                    "satisfaction": 3.0,
                    "empathy": v,
                    "persona": 50.0,
                    "anthropomorphic": 50.0,
                }
            )
    return pd.DataFrame(rows)


def test_ranks_by_hand():
    scores = frame(
        {"a": [60, 62, 64, 66], "b": [40, 42, 44, 46], "c": [60, 62, 64, 66]},
        drift={"a": [0.9] * 4, "b": [0.1] * 4, "c": [0.5] * 4},
    )
    table = rank_intervals(scores, resamples=200, seed=1).set_index(["metric", "target"])
    # empathy: a and c tie at 63 (both rank 1, the best of the tie), b is third
    assert table.loc["empathy", "rank"].to_dict() == {"a": 1, "b": 3, "c": 1}
    assert table.loc[("empathy", "b"), ["rank_low", "rank_high"]].tolist() == [3.0, 3.0]
    # drift: lower is better
    assert table.loc["drift", "rank"].to_dict() == {"a": 3, "b": 1, "c": 2}
    # persona is 50 for everyone: one three-way tie
    assert set(table.loc["persona", "rank"]) == {1}
    assert (table["n_targets"] == 3).all() and (
        table.loc["empathy", "value"].round(6).to_dict() == {"a": 63, "b": 43, "c": 63}
    )


def test_a_clear_leader_has_a_narrow_interval_copies_a_wide_one():
    rng = np.random.default_rng(4)
    base = rng.uniform(30, 70, 50)
    values = {f"copy-{k}": list(base + rng.normal(0, 1.0, 50)) for k in range(8)}
    values["leader"] = list(base + 25)
    table = rank_intervals(frame(values), resamples=500, seed=2)
    empathy = table[table["metric"] == "empathy"].set_index("target")
    assert empathy.loc["leader", ["rank", "rank_low", "rank_high"]].tolist() == [1, 1.0, 1.0]
    copies = empathy.drop(index="leader")
    assert (copies["rank_high"] - copies["rank_low"]).mean() >= 3  # eight copies cannot be ordered


def test_only_seeds_every_target_played_count():
    scores = frame({"a": [60, 62, 64, 66], "b": [40, 42, 44, 46]})
    scores = scores[~((scores["target"] == "b") & (scores["seed_id"] == f"{POOL}:p03"))]
    table = rank_intervals(scores, resamples=100, seed=1)
    assert (table["n_dialogues"] == 3).all()
    assert table[(table["metric"] == "empathy") & (table["target"] == "a")]["value"].item() == 62


def test_ranks_equal_scipy_rankdata_min_with_ties_and_missing_means():
    from scipy.stats import rankdata

    from eyt_dagster.eyt_bench.rank_intervals import column_ranks

    # by hand, higher is better: 0.7 first; the two 0.5 tie for 2nd; 0.2 is 4th; the NaN mean ranks last (5th)
    column = np.array([[0.5], [0.7], [np.nan], [0.5], [0.2]])
    assert column_ranks(column, lower_is_better=False)[:, 0].tolist() == [2, 1, 5, 2, 4]
    assert column_ranks(column, lower_is_better=True)[:, 0].tolist() == [2, 4, 5, 2, 1]
    rng = np.random.default_rng(3)
    means = rng.integers(0, 6, size=(40, 300)).astype(float) / 4  # many ties per column
    means[rng.random(means.shape) < 0.05] = np.nan
    means[:, 0] = np.nan  # a column of NaN only: all tie last
    for lower in (False, True):
        keyed = means if lower else -means
        expected = rankdata(np.where(np.isnan(keyed), np.inf, keyed), method="min", axis=0)
        got = column_ranks(means, lower)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
