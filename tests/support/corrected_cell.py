"""A hand-made cell for dialogue.judge_corrected's tests (tests/eyt_bench/test_judge_correction.py, the explorer's
/corrected page): target A on one pool, five dialogues of three turns, one judge; annotators a1 and a2 label some of
them (annotations() says which)."""

from __future__ import annotations

import pandas as pd

from eyt_dagster.eyt_bench.judge_correction import METRICS

TARGET, POOL = "A", "nemotron_usa"
ALPHA = 0.2  # Eq. 4 at T = 3: turns 1 and 2 weigh 0.2, turn 3 weighs 1 - 2 x 0.2 = 0.6
SEEDS = ["s0", "s1", "s2", "s3", "s4"]
JUDGE_EMPATHY = [40.0, 50.0, 60.0, 70.0, 80.0]
JUDGE_COMPLETED = [True, False, True, True, False]
JUDGE_SATISFACTION = [75.0, 25.0, 50.0, 100.0, 0.0]


def scores() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "target": TARGET,
            "pool": POOL,
            "seed_id": SEEDS,
            "n_turns": 3,
            "completed": pd.array(JUDGE_COMPLETED, dtype="boolean"),
            "satisfaction": JUDGE_SATISFACTION,
            "empathy": JUDGE_EMPATHY,
            "persona": [50.0] * 5,
            "anthropomorphic": [50.0] * 5,
        }
    )


def verdicts(failed: tuple[tuple[str, int], ...] = ()) -> pd.DataFrame:
    rows = [
        {
            "target": TARGET,
            "pool": POOL,
            "seed_id": s,
            "turn": t,
            "judge": "j",
            "error": "timeout" if (s, t) in failed else None,
        }
        for s in SEEDS
        for t in (1, 2, 3)
    ]
    return pd.DataFrame(rows)


def intervals() -> pd.DataFrame:
    return pd.DataFrame(
        [{"target": TARGET, "pool": POOL, "metric": m, "value": 1.0, "ci_low": 0.5, "ci_high": 1.5} for m in METRICS]
    )


def ann(annotator: str, seed: str, turn: int, dimension: str, score: float) -> dict[str, object]:
    return {
        "annotator": annotator,
        "target": TARGET,
        "pool": POOL,
        "seed_id": seed,
        "turn": turn,
        "dimension": dimension,
        "score": score,
        "sheet": SHEET,
    }


SHEET = "s7-0123abcd"  # every label here came from a drawn sheet


def annotations() -> pd.DataFrame:
    """a1 labels s0-s2 fully; a2 labels s0 and s1 (averaged with a1 per turn); s3 has empathy on turns 1-2 only
    (partly labelled); a NaN score is not a score."""
    rows = []
    a1 = {"s0": [0.5, 2.0, 3.0], "s1": [2.0, 2.0, 2.0], "s2": [3.0, 4.0, 5.0]}
    a2 = {"s0": [1.5, 2.0, 3.0], "s1": [2.0, 2.0, 2.0]}
    for annotator, turns in (("a1", a1), ("a2", a2)):
        for seed, values in turns.items():
            for turn, value in enumerate(values, start=1):
                rows.append(ann(annotator, seed, turn, "empathy", value))
    for seed, completed, satisfaction in (("s0", 1.0, 5.0), ("s1", 0.0, 1.0), ("s2", 1.0, 3.0)):
        rows += [ann("a1", seed, 0, "completed", completed), ann("a1", seed, 0, "satisfaction", satisfaction)]
    rows += [ann("a2", "s0", 0, "completed", 0.0), ann("a2", "s0", 0, "satisfaction", 4.0)]
    rows += [ann("a1", "s3", 1, "empathy", 4.0), ann("a1", "s3", 2, "empathy", 4.0)]
    rows += [ann("a1", "s3", 3, "empathy", float("nan"))]
    return pd.DataFrame(rows)


def lengths() -> pd.Series:
    return scores().set_index(["target", "pool", "seed_id"])["n_turns"]
