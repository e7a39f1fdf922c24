"""The report computations made fast for many targets give what the per-dialogue and per-cell loops they replaced
gave: each old implementation is kept here as the reference and compared on small synthetic data with the cases
that matter (dialogues of one, two and many turns, unjudged turns, error rows, cells with no answered turn)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core import stats
from eyt_dagster.core.baseline_flags import BASELINE_KIND, is_baseline
from eyt_dagster.core.errors import failures_line
from eyt_dagster.eyt_bench import analysis, metrics
from eyt_dagster.eyt_bench.calibration import _single_value
from eyt_dagster.eyt_bench.dialogue_scoring import (
    DIMENSIONS,
    EARLY_TURNS,
    KEYS,
    PER_DIALOGUE,
    answered_turns,
    weighted_by_dialogue,
)
from eyt_dagster.eyt_bench.leaderboard import _cells, _recorded, _role_costs, aggregate, build_leaderboard
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_TO_100, EMOTIONS
from eyt_dagster.eyt_bench.unfinished import error_rows
from eyt_dagster.slate import default_slate_path, load_slate

from support.warehouse_tables import warehouse_tables

pytestmark = pytest.mark.unit

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


def build_leaderboard_reference(slate, scores, turns, verdicts, finals) -> pd.DataFrame:
    answered = answered_turns(turns)
    errors = error_rows(turns)
    targets = {t.id: t for t in slate.targets}
    rows = []
    for target, pool in _cells(scores, turns):
        cell = scores[(scores["target"] == target) & (scores["pool"] == pool)]
        cell_errors = errors[(errors["target"] == target) & (errors["pool"] == pool)]
        ref = targets.get(target)
        cell_turns = answered[(answered["target"] == target) & (answered["pool"] == pool)]
        rows.append(
            {
                "target": target,
                "pool": pool,
                "family": ref.family if ref else None,
                "thinking": bool(ref.thinking) if ref else None,
                "is_baseline": is_baseline(slate, target),
                "target_kind": BASELINE_KIND if is_baseline(slate, target) else "model",
                "in_slate": ref is not None,
                "self_preference_risk": bool(ref and slate.self_preference_risk(target)),
                "judges": ", ".join(j.id for j in slate.judges),
                "judge_combine": _recorded(cell, "judge_combine", slate.judge_combine),
                "n_dialogues": len(cell),
                "n_errors": len(cell_errors),
                "failures": failures_line(cell_errors) or None,
                **aggregate(cell),
                "emotion_macro_f1": metrics.macro_f1(cell_turns["gold_emotion"], cell_turns["pred_emotion"]),
            }
        )
    board = pd.DataFrame(rows)
    board = board.merge(_role_costs(turns, verdicts, finals), on=["target", "pool"], how="left")
    board["alpha"] = slate.alpha
    board["slate"] = slate.name
    return board.sort_values(["pool", "target"]).reset_index(drop=True)


def leaderboard_intervals_reference(scores, turns, *, resamples: int, seed: int) -> pd.DataFrame:
    answered = answered_turns(turns)
    rows = []
    for (target, pool), cell in scores.groupby(["target", "pool"]):

        def add(metric, est, target=target, pool=pool, n=len(cell)):  # noqa: B008
            rows.append(
                {
                    "target": target,
                    "pool": pool,
                    "metric": metric,
                    "value": est[0],
                    "ci_low": est[1],
                    "ci_high": est[2],
                    "n_dialogues": n,
                    "resamples": resamples,
                }
            )

        for metric, (num, den, scale) in analysis.RATIO_METRICS.items():
            est = stats.bootstrap_ratio_ci(cell[num], cell[den], resamples=resamples, seed=seed)
            add(metric, tuple(v * scale for v in est))
        for metric, column in analysis.MEAN_METRICS.items():
            add(metric, stats.bootstrap_mean_ci(cell[column].astype(float), resamples=resamples, seed=seed))
        cell_turns = answered[(answered["target"] == target) & (answered["pool"] == pool)]
        counts = np.array(
            [
                stats.class_counts(g["gold_emotion"], g["pred_emotion"], EMOTIONS)
                for _, g in cell_turns.groupby("seed_id")
            ]
        ).reshape(-1, len(EMOTIONS), 3)
        add("emotion_macro_f1", stats.bootstrap_macro_f1_ci(counts, resamples=resamples, seed=seed))
    return pd.DataFrame(rows)


# --- synthetic inputs -----------------------------------------------------------------------------------------


def interval_cells_reference(intervals: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    rows = []
    for (target, pool), cell in intervals.groupby(["target", "pool"]):
        row = {"target": target, "pool": pool}
        by_metric = cell.set_index("metric")
        for metric in metrics:
            if metric in by_metric.index:
                v, lo, hi = by_metric.loc[metric, ["value", "ci_low", "ci_high"]]
                digits = 3 if abs(v) <= 1 else 1
                row[metric] = f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
        rows.append(row)
    return pd.DataFrame(rows)


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


def test_leaderboard_equals_the_per_cell_filters():
    scores, turns, verdicts, finals = warehouse_tables()
    slate = load_slate(default_slate_path())
    fast = build_leaderboard(slate, scores, turns, verdicts, finals)
    # columns the reference predates: no audit or language rows given, so the rates and shares are missing
    later = ["simulator_flag_rate", "reply_language_share", "user_language_share"]
    assert fast[later].isna().all().all() and set(fast["language"]) <= {"en"}
    fast = fast.drop(columns=[*later, "language"])
    # columns the reference predates too: how the replies came to be (these turns record no cut reply or adaptation)
    assert (fast["cut_replies"] == 0).all() and fast["adaptations"].isna().all() and not fast["sampling_adapted"].any()
    fast = fast.drop(columns=["cut_replies", "adaptations", "sampling_adapted"])
    slow = build_leaderboard_reference(slate, scores, turns, verdicts, finals)
    assert len(fast) == 8 and fast["emotion_macro_f1"].notna().sum() >= 7
    pd.testing.assert_frame_equal(fast, slow, check_exact=False, rtol=1e-12, atol=1e-12)
    exact = [c for c in fast.columns if c != "emotion_macro_f1"]
    pd.testing.assert_frame_equal(fast[exact], slow[exact], check_exact=True)


def test_macro_f1_by_group_is_macro_f1_of_each_group():
    gold = pd.Series(["a", "a", "b", "c", "b", None, "a"])
    pred = pd.Series(["a", "b", "b", "b", "c", "a", None])
    frame = pd.DataFrame({"g": gold, "p": pred, "cell": ["x", "x", "x", "x", "y", "y", "y"]})
    got = metrics.macro_f1_by(frame, ["cell"], "g", "p")
    for cell in ("x", "y"):
        rows = frame[frame["cell"] == cell]
        assert got[cell] == pytest.approx(metrics.macro_f1(rows["g"], rows["p"]), abs=1e-15)
    # x: a tp 1 fn 1 -> 2/3; b tp 1 fp 2 -> 2/4; c fn 1 -> 0
    assert got["x"] == pytest.approx((2 / 3 + 0.5 + 0.0) / 3)


def test_leaderboard_intervals_equal_the_per_cell_loop():
    scores, turns, _, _ = warehouse_tables()
    fast = analysis.leaderboard_intervals(scores, turns, resamples=200, seed=7)
    slow = leaderboard_intervals_reference(scores, turns, resamples=200, seed=7)
    assert len(fast) == len(slow) and fast["ci_low"].notna().any()
    assert (fast["seed"] == 7).all()  # every row records its seed, a column the reference predates
    pd.testing.assert_frame_equal(fast.drop(columns="seed"), slow, check_exact=True)


def test_class_counts_by_unit_equal_class_counts_per_unit():
    rng = np.random.default_rng(2)
    labels = ("a", "b", "c")
    gold = rng.choice(["a", "b", "c", "z"], 60).astype(object)
    pred = rng.choice(["a", "b", "c", "z"], 60).astype(object)
    gold[3], pred[5] = None, np.nan
    units = rng.integers(0, 7, 60)
    got = stats.class_counts_by_unit(units, 8, gold, pred, labels)  # unit 7 has no rows
    for u in range(8):
        np.testing.assert_array_equal(got[u], stats.class_counts(gold[units == u], pred[units == u], labels))


def test_a_seeded_index_matrix_is_shared_and_read_only():
    first, again = stats._indices(12, 50, 3), stats._indices(12, 50, 3)
    assert first is again and not first.flags.writeable
    np.testing.assert_array_equal(first, np.random.default_rng(3).integers(0, 12, size=(50, 12)))
    assert stats._indices(12, 50, None) is not stats._indices(12, 50, None)


def test_single_value_per_column_is_nunique_one():
    rng = np.random.default_rng(4)
    ratings = rng.integers(0, 2, size=(3, 400)).astype(float)
    ratings[rng.random(ratings.shape) < 0.3] = np.nan
    ratings[:, 0] = np.nan  # nobody rated it
    want = (pd.DataFrame(ratings).nunique(axis=0, dropna=True) == 1).to_numpy()
    np.testing.assert_array_equal(_single_value(ratings), want)
    assert want.any() and not want.all()


def test_interval_preview_equals_the_per_cell_lookup():
    from eyt_dagster.reporting.report_sections import interval_cells

    scores, turns, _, _ = warehouse_tables()
    intervals = analysis.leaderboard_intervals(scores, turns, resamples=50, seed=3)
    metrics = ("explicit_acc", "empathy", "drift", "satisfaction", "not_a_metric")
    # a metric missing from one cell, a NaN value, values above 1 and below -1, a cell of other metrics only
    first = intervals[["target", "pool"]].iloc[0]
    gap = (intervals["target"] == first["target"]) & (intervals["pool"] == first["pool"])
    edited = intervals[~(gap & (intervals["metric"] == "drift"))].copy()
    edited.loc[edited["metric"] == "empathy", "value"] *= -30
    edited.loc[edited.index[3], "value"] = np.nan
    lone = edited[edited["metric"] == "ficr"].head(1).assign(target="zz-only-ficr")
    edited = pd.concat([lone, edited], ignore_index=True)
    for frame in (intervals, edited, edited.iloc[::-1]):
        want = interval_cells_reference(frame, metrics)
        pd.testing.assert_frame_equal(interval_cells(frame, metrics), want, check_exact=True)
    last = interval_cells(edited, metrics).iloc[-1]  # the cell of other metrics only: a row without text
    assert last["target"] == "zz-only-ficr" and last[list(metrics[:4])].isna().all()
