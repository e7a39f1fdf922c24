"""dialogue.rank_intervals: ranks by hand on a tiny pool, ties, drift ranked lowest-first, and intervals that are
narrow for a clear leader and wide for copies of one model."""

from __future__ import annotations

import numpy as np
import pandas as pd

from eyt_dagster.eyt_bench.rank_intervals import rank_intervals

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
