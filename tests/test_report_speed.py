"""The report computations made fast for many targets give what the per-dialogue and per-cell loops they replaced
gave: each old implementation is kept here as the reference and compared on small synthetic data with the cases
that matter (dialogues of one, two and many turns, unjudged turns, error rows, cells with no answered turn)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core import stats
from eyt_dagster.eyt_bench import metrics
from eyt_dagster.eyt_bench.dialogue_scoring import DIMENSIONS, EARLY_TURNS, KEYS, PER_DIALOGUE, weighted_by_dialogue
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_TO_100

# --- references: the implementations as they were -------------------------------------------------------------


def _weighted_reference(group: pd.DataFrame, alpha: float) -> pd.Series:
    ordered = group.sort_values("turn")
    turns = ordered["turn"].to_numpy(dtype=int)
    n_turns = int(ordered["n_turns"].iloc[0])
    w = metrics.judged_turn_weights(turns, n_turns, alpha)
    out = {d: float(np.dot(w, ordered[d].to_numpy(dtype=float))) * DIMENSION_TO_100 for d in DIMENSIONS}
    early, late = ordered[ordered["turn"] <= EARLY_TURNS], ordered[ordered["turn"] > EARLY_TURNS]
    for d in DIMENSIONS:
        out[f"{d}_sum"] = float(ordered[d].sum())
        out[f"{d}_early"] = float(early[d].mean()) if len(early) else np.nan
        out[f"{d}_late"] = float(late[d].mean()) if len(late) else np.nan
    out["n_judged_turns"] = len(ordered)
    return pd.Series(out)


def weighted_by_dialogue_reference(dims: pd.DataFrame, lengths: pd.Series, alpha: float) -> pd.DataFrame:
    with_t = dims.merge(lengths.reset_index(), on=KEYS, how="inner")
    out = with_t.groupby(KEYS).apply(_weighted_reference, alpha=alpha, include_groups=False).reset_index()
    return out[[*KEYS, *PER_DIALOGUE]]


def rank_flips_reference(scores: pd.DataFrame) -> list[tuple[object, object, object, object]]:
    flips = []
    for sa, sb in combinations(scores.columns, 2):
        for ti, tj in combinations(scores.index, 2):
            da = np.sign(scores.at[ti, sa] - scores.at[tj, sa])
            db = np.sign(scores.at[ti, sb] - scores.at[tj, sb])
            if da * db < 0:
                flips.append((sa, sb, ti, tj))
    return flips


# --- synthetic inputs -----------------------------------------------------------------------------------------


def turn_dims(seed: int = 3) -> tuple[pd.DataFrame, pd.Series]:
    """Per judged turn dimension scores (0-5 in quarter points, as two judges' means make them) of dialogues of
    1 to 8 turns, some turns unjudged, and each dialogue's length."""
    rng = np.random.default_rng(seed)
    rows, lengths = [], {}
    for target in ("b-target", "a-target", "c-target"):
        for pool in ("nemotron_usa", "personamem_v2"):
            for i in range(7):
                n = int(rng.integers(1, 9))
                key = (target, pool, f"{pool}:s{i}")
                lengths[key] = n
                judged = [t for t in range(1, n + 1) if n < 3 or rng.random() > 0.2] or [1]
                for t in rng.permutation(judged):  # rows in no particular order
                    rows.append(
                        {**dict(zip(KEYS, key)), "turn": int(t), **{d: rng.integers(0, 21) / 4 for d in DIMENSIONS}}
                    )
    index = pd.MultiIndex.from_tuples(list(lengths), names=KEYS)
    return pd.DataFrame(rows), pd.Series(list(lengths.values()), index=index, name="n_turns", dtype="int64")


# --- tests ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.05, 0.10, 0.15, 0.3])
def test_weighted_by_dialogue_equals_the_per_dialogue_loop(alpha):
    dims, lengths = turn_dims()
    fast, slow = weighted_by_dialogue(dims, lengths, alpha), weighted_by_dialogue_reference(dims, lengths, alpha)
    assert list(fast.columns) == list(slow.columns)
    pd.testing.assert_frame_equal(fast[KEYS], slow[KEYS])
    pd.testing.assert_frame_equal(fast, slow, check_exact=False, rtol=1e-12, atol=1e-12)
    # the raw sums, early / late means and counts are exact; only the weighted scores can round differently
    exact = [c for c in PER_DIALOGUE if c not in DIMENSIONS]
    pd.testing.assert_frame_equal(fast[exact], slow[exact], check_exact=True)


def test_weighted_by_dialogue_by_hand():
    # T = 4, all judged, alpha 0.1: weights 0.1, 0.1, 0.4, 0.4; T = 2 with only turn 2 judged: weight 1
    dims = pd.DataFrame(
        [
            {"target": "t", "pool": "p", "seed_id": "s1", "turn": n, **dict.fromkeys(DIMENSIONS, float(n))}
            for n in (4, 2, 3, 1)
        ]
        + [{"target": "t", "pool": "p", "seed_id": "s2", "turn": 2, **dict.fromkeys(DIMENSIONS, 5.0)}]
    )
    index = pd.MultiIndex.from_tuples([("t", "p", "s1"), ("t", "p", "s2")], names=KEYS)
    lengths = pd.Series([4, 2], index=index, name="n_turns")
    out = weighted_by_dialogue(dims, lengths, 0.10).set_index("seed_id")
    assert out.loc["s1", "empathy"] == pytest.approx((0.1 * 1 + 0.1 * 2 + 0.4 * 3 + 0.4 * 4) * 20)
    assert out.loc["s1", "empathy_early"] == 1.5 and out.loc["s1", "empathy_late"] == 3.5
    assert out.loc["s1", "empathy_sum"] == 10.0 and out.loc["s1", "n_judged_turns"] == 4
    assert out.loc["s2", "empathy"] == pytest.approx(100.0) and np.isnan(out.loc["s2", "empathy_late"])


def test_eq4_weights_are_warmup_weights_row_by_row():
    turns, lengths = [], []
    for n in range(1, 12):
        turns += list(range(1, n + 1))
        lengths += [n] * n
    got = metrics.eq4_weights(np.array(turns), np.array(lengths), 0.12)
    want = np.concatenate([metrics.warmup_weights(n, 0.12) for n in range(1, 12)])
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="outside"):
        metrics.eq4_weights(np.array([3]), np.array([2]), 0.1)


def test_rank_flips_equal_the_pairwise_loop():
    rng = np.random.default_rng(5)
    for targets, settings in ((1, 3), (2, 2), (9, 3), (30, 4)):
        values = rng.integers(0, 6, size=(targets, settings)).astype(float)  # many ties
        values[rng.random(values.shape) < 0.1] = np.nan
        scores = pd.DataFrame(
            values, index=[f"t{k}" for k in range(targets)], columns=[0.05, 0.1, 0.15, 0.2][:settings]
        )
        assert stats.rank_flips(scores) == rank_flips_reference(scores)
    assert rank_flips_reference(scores)  # the data has flips to find
