"""Rankings under correction (dialogue.corrected_pairwise, dialogue.corrected_rank_intervals): hand-computed pairs,
ranks and sentences from hand-made judge_corrected rows, groups that are left out, ties, a lower-is-better metric
and the seeded rank bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench.corrected_rankings import (
    A_BETTER,
    B_BETTER,
    NO_CLEAR_DIFFERENCE,
    corrected_pairwise,
    corrected_rank_intervals,
    ordinal,
    ranking_changes,
)

pytestmark = pytest.mark.unit

POOL = "nemotron_usa"
Z = 1.959963984540054


def cells(
    means: dict[str, tuple[float, float]], metric: str = "empathy", pool: str = POOL, **shown: str
) -> pd.DataFrame:
    """judge_corrected rows (the columns these tables read, as its contract types them): target -> (corrected_mean,
    corrected_se); `shown` overrides a target's shown ("corrected" by default)."""
    rows = []
    for target, (mean, se) in means.items():
        state = shown.get(target.replace("-", "_"), "corrected")
        rows.append(
            {
                "target": target,
                "pool": pool,
                "metric": metric,
                "n_dialogues": 60,
                "n_labelled": 12 if state == "corrected" else 4,
                "judge_mean": mean + 5.0,
                "corrected_mean": mean,
                "corrected_se": se,
                "shown": state,
                "why": "" if state == "corrected" else "4 labelled dialogues, fewer than min_human_labels (10)",
            }
        )
    out = pd.DataFrame(rows)
    for column in ("target", "pool", "metric", "shown", "why"):
        out[column] = out[column].astype("string")
    out["n_dialogues"] = out["n_dialogues"].astype("Int64")
    out["n_labelled"] = out["n_labelled"].astype("Int64")
    return out


def judge_pairs(rows: list[tuple[str, str, float, bool]], metric: str = "empathy") -> pd.DataFrame:
    """pairwise_comparisons rows: (target_a, target_b, diff, significant_adjusted); the interval diff +- 1."""
    return pd.DataFrame(
        {
            "pool": POOL,
            "metric": metric,
            "target_a": [r[0] for r in rows],
            "target_b": [r[1] for r in rows],
            "diff": [r[2] for r in rows],
            "ci_low": [r[2] - 1.0 for r in rows],
            "ci_high": [r[2] + 1.0 for r in rows],
            "significant_adjusted": pd.array([r[3] for r in rows], dtype="boolean"),
        }
    )


def judge_ranks(ranks: dict[str, tuple[int, float, float]], metric: str = "empathy") -> pd.DataFrame:
    """rank_intervals rows: target -> (rank, rank_low, rank_high)."""
    return pd.DataFrame(
        {
            "pool": POOL,
            "metric": metric,
            "target": list(ranks),
            "rank": pd.array([r[0] for r in ranks.values()], dtype="Int64"),
            "rank_low": [r[1] for r in ranks.values()],
            "rank_high": [r[2] for r in ranks.values()],
        }
    )


# alpha leads once corrected; the judge put beta first (significantly) and saw no difference between alpha and gamma
THREE = cells({"alpha": (60.0, 3.0), "beta": (50.0, 4.0), "gamma": (45.0, 4.0)})
JUDGE_PAIRS = judge_pairs(
    [("alpha", "beta", -8.0, True), ("alpha", "gamma", 3.0, False), ("beta", "gamma", 11.0, False)]
)
JUDGE_RANKS = judge_ranks({"alpha": (2, 1.0, 2.0), "beta": (1, 1.0, 2.0), "gamma": (3, 3.0, 3.0)})


def test_pairs_by_hand_with_holm_and_the_verdicts_that_change():
    got = corrected_pairwise(THREE, JUDGE_PAIRS).set_index(["target_a", "target_b"])
    assert list(got.index) == [("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")]
    # diffs 10, 15, 5; ses sqrt(9 + 16) = 5, 5 and sqrt(16 + 16) = 5.656854...
    assert got["corrected_diff"].tolist() == [10.0, 15.0, 5.0]
    assert got["corrected_se"].tolist() == pytest.approx([5.0, 5.0, 5.656854249492381], abs=1e-12)
    assert got.loc[("alpha", "beta"), "corrected_low"] == pytest.approx(10.0 - Z * 5.0, abs=1e-9)
    assert got.loc[("alpha", "beta"), "corrected_high"] == pytest.approx(10.0 + Z * 5.0, abs=1e-9)
    assert got.loc[("beta", "gamma"), "corrected_low"] == pytest.approx(5.0 - Z * 5.656854249492381, abs=1e-9)
    # two-sided normal p at z = 2, 3 and 0.883883...
    assert got["corrected_p"].tolist() == pytest.approx([0.0455002638963584, 0.0026997960632602, 0.376759117811582])
    # Holm over the three pairs: 0.0027 x 3, then max(that, 0.0455 x 2), then max(that, 0.3768 x 1)
    assert got["corrected_p_adjusted"].tolist() == pytest.approx(
        [0.0455002638963584 * 2, 0.0026997960632602 * 3, 0.376759117811582]
    )
    # alpha-beta: 0.091 > 0.05, not significant after adjustment although its unadjusted interval excludes zero
    assert got["corrected_significant"].tolist() == [False, True, False]
    assert got["corrected_verdict"].tolist() == [NO_CLEAR_DIFFERENCE, A_BETTER, NO_CLEAR_DIFFERENCE]
    assert got["judge_verdict"].tolist() == [B_BETTER, NO_CLEAR_DIFFERENCE, NO_CLEAR_DIFFERENCE]
    assert got["changed"].tolist() == [True, True, False]
    # the judge-only columns are the pairwise table's, in its A/B order and sign
    assert got["judge_diff"].tolist() == [-8.0, 3.0, 11.0]
    assert got["judge_low"].tolist() == [-9.0, 2.0, 10.0]
    assert got["judge_significant"].tolist() == [True, False, False]
    # a pair the judge-only table lacks has no judge verdict to change from
    unknown = corrected_pairwise(THREE, JUDGE_PAIRS.iloc[1:]).set_index(["target_a", "target_b"])
    assert np.isnan(unknown.loc[("alpha", "beta"), "judge_diff"])
    assert not unknown.loc[("alpha", "beta"), "judge_significant"]
    assert unknown["changed"].tolist() == [False, True, False]


def test_ranks_by_hand_and_which_change():
    got = corrected_rank_intervals(THREE, JUDGE_RANKS, resamples=1000, seed=7).set_index("target")
    assert got["corrected_rank"].tolist() == [1, 2, 3]
    assert got["judge_rank"].tolist() == [2, 1, 3]
    assert got["rank_changed"].tolist() == [True, True, False]
    assert got["judge_rank_low"].tolist() == [1.0, 1.0, 3.0]
    assert got["n_labelled"].tolist() == [12, 12, 12]
    assert got["corrected_mean"].tolist() == [60.0, 50.0, 45.0]
    assert (got["resamples"] == 1000).all()


def test_a_group_with_one_judge_only_cell_has_no_rows():
    mixed = cells({"alpha": (60.0, 3.0), "beta": (50.0, 4.0), "gamma": (45.0, 4.0)}, gamma="judge only")
    assert corrected_pairwise(mixed, JUDGE_PAIRS).empty
    assert corrected_rank_intervals(mixed, JUDGE_RANKS, resamples=200, seed=7).empty
    # the other metric of the same pool, all corrected, keeps its rows
    both = pd.concat([mixed, cells({"alpha": (1.0, 0.1), "beta": (2.0, 0.1), "gamma": (3.0, 0.1)}, metric="ficr")])
    assert set(corrected_pairwise(both, JUDGE_PAIRS)["metric"]) == {"ficr"}
    assert set(corrected_rank_intervals(both, JUDGE_RANKS, resamples=200, seed=7)["metric"]) == {"ficr"}


def test_a_target_the_judge_tables_name_but_judge_corrected_lacks_leaves_its_group_out():
    two = cells({"alpha": (60.0, 3.0), "beta": (50.0, 4.0)})  # gamma played, but has no judge_corrected row
    assert corrected_pairwise(two, JUDGE_PAIRS).empty
    assert corrected_rank_intervals(two, JUDGE_RANKS, resamples=200, seed=7).empty


def test_tied_means_share_the_best_rank():
    tied = cells({"alpha": (50.0, 2.0), "beta": (50.0, 2.0), "gamma": (40.0, 2.0)})
    got = corrected_rank_intervals(tied, JUDGE_RANKS, resamples=500, seed=1).set_index("target")
    assert got["corrected_rank"].tolist() == [1, 1, 3]
    pairs = corrected_pairwise(tied, JUDGE_PAIRS).set_index(["target_a", "target_b"])
    assert pairs.loc[("alpha", "beta"), "corrected_diff"] == 0.0
    assert pairs.loc[("alpha", "beta"), "corrected_p"] == 1.0
    assert pairs.loc[("alpha", "beta"), "corrected_verdict"] == NO_CLEAR_DIFFERENCE


def test_a_lower_is_better_metric_ranks_the_lowest_first_and_favours_a_negative_difference():
    drift = cells({"alpha": (0.2, 0.01), "beta": (0.5, 0.01)}, metric="drift")
    ranks = corrected_rank_intervals(drift, judge_ranks({}, "drift"), resamples=200, seed=3).set_index("target")
    assert ranks["corrected_rank"].tolist() == [1, 2]
    assert ranks["corrected_rank_low"].tolist() == [1.0, 2.0] and ranks["corrected_rank_high"].tolist() == [1.0, 2.0]
    assert ranks["judge_rank"].isna().all() and not ranks["rank_changed"].any()  # no judge-only row: unknown
    pair = corrected_pairwise(drift, judge_pairs([("alpha", "beta", 0.3, True)], "drift")).iloc[0]
    assert pair["corrected_diff"] == pytest.approx(-0.3)
    assert pair["corrected_verdict"] == A_BETTER  # alpha drifts less
    assert pair["judge_verdict"] == B_BETTER  # the judge-only difference +0.3 favours beta
    assert pair["changed"]


def test_the_rank_bootstrap_is_seeded_and_contains_the_point_rank():
    close = cells({"alpha": (51.0, 3.0), "beta": (50.0, 3.0), "gamma": (30.0, 1.0)})
    first = corrected_rank_intervals(close, JUDGE_RANKS, resamples=1000, seed=11)
    again = corrected_rank_intervals(close, JUDGE_RANKS, resamples=1000, seed=11)
    pd.testing.assert_frame_equal(first, again)
    assert (first["corrected_rank_low"] <= first["corrected_rank"].astype(float)).all()
    assert (first["corrected_rank"].astype(float) <= first["corrected_rank_high"]).all()
    got = first.set_index("target")
    # alpha and beta a point apart with ses of 3 swap places often: both 1-2; gamma is last on every draw
    assert (got.loc["alpha", "corrected_rank_low"], got.loc["alpha", "corrected_rank_high"]) == (1.0, 2.0)
    assert (got.loc["beta", "corrected_rank_low"], got.loc["beta", "corrected_rank_high"]) == (1.0, 2.0)
    assert (got.loc["gamma", "corrected_rank_low"], got.loc["gamma", "corrected_rank_high"]) == (3.0, 3.0)
    # the draws are default_rng(seed).standard_normal((resamples, targets)), targets in id order: the share of
    # draws in which beta beats alpha, counted from those draws by hand, is the share in which alpha ranks 2nd
    noise = np.random.default_rng(11).standard_normal((1000, 3))
    beta_ahead = np.mean(50.0 + 3.0 * noise[:, 1] > 51.0 + 3.0 * noise[:, 0])
    assert 0.025 < beta_ahead < 0.975  # hence alpha's interval reaches 2
    other_seed = corrected_rank_intervals(close, JUDGE_RANKS, resamples=1000, seed=12)
    assert other_seed["corrected_rank"].tolist() == first["corrected_rank"].tolist()


def test_the_sentences_name_pool_metric_target_both_ranks_and_the_labels():
    ranks = corrected_rank_intervals(THREE, JUDGE_RANKS, resamples=200, seed=7)
    assert ranking_changes(ranks) == [
        "nemotron_usa, Empathy: beta ranks 1st judged alone, 2nd corrected (human labels on 12 dialogues per cell)",
        "nemotron_usa, Empathy: alpha ranks 2nd judged alone, 1st corrected (human labels on 12 dialogues per cell)",
    ]
    uneven = ranks.copy()
    uneven["n_labelled"] = pd.array([12, 15, 10], dtype="Int64")
    assert ranking_changes(uneven)[0].endswith("(human labels on 10-15 dialogues per cell)")
    assert ranking_changes(ranks[~ranks["rank_changed"]]) == []
    assert ranking_changes(ranks.iloc[0:0]) == []
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "101st",
        "111th",
    ]


def test_no_judge_corrected_rows_give_empty_tables_with_the_contract_columns():
    from eyt_dagster.eyt_bench.corrected_rankings import PAIR_COLUMNS, RANK_COLUMNS

    empty = THREE.iloc[0:0]
    assert list(corrected_pairwise(empty, JUDGE_PAIRS).columns) == list(PAIR_COLUMNS)
    assert list(corrected_rank_intervals(empty, JUDGE_RANKS, resamples=200, seed=7).columns) == list(RANK_COLUMNS)


def test_the_sql_twin_equals_the_python_pairs():
    """sql/corrected_pairwise.sql on hand-made dialogue.judge_corrected and dialogue.pairwise_comparisons tables gives
    the Python table: two complete empathy groups (one with a tie and a zero standard error), a drift group, and a
    persona group left out for its judge-only cell."""
    from pathlib import Path

    import duckdb

    other = "personamem_v2"
    corrected = pd.concat(
        [
            THREE,
            cells({"alpha": (50.0, 2.0), "beta": (50.0, 0.0), "gamma": (41.0, 0.0), "delta": (58.0, 1.5)}, pool=other),
            cells({"alpha": (0.2, 0.01), "beta": (0.5, 0.02), "gamma": (0.21, 0.03)}, metric="drift"),
            cells(
                {"alpha": (70.0, 3.0), "beta": (50.0, 4.0), "gamma": (45.0, 4.0)}, metric="persona", beta="judge only"
            ),
        ],
        ignore_index=True,
    )
    judged = pd.concat(
        [
            JUDGE_PAIRS,
            # alpha-gamma missing: no judge-only verdict
            judge_pairs([("alpha", "beta", 0.3, True), ("beta", "gamma", 0.3, True)], "drift"),
            judge_pairs([("alpha", "beta", 20.0, True)], "persona"),
        ],
        ignore_index=True,
    )
    expected = corrected_pairwise(corrected, judged)
    assert set(zip(expected["pool"], expected["metric"])) == {(POOL, "empathy"), (other, "empathy"), (POOL, "drift")}
    con = duckdb.connect()
    con.execute("CREATE SCHEMA dialogue")
    con.register("corrected_frame", corrected)
    con.register("judged_frame", judged)
    con.execute("CREATE TABLE dialogue.judge_corrected AS FROM corrected_frame")
    con.execute("CREATE TABLE dialogue.pairwise_comparisons AS FROM judged_frame")
    con.execute((Path(__file__).resolve().parents[2] / "sql" / "corrected_pairwise.sql").read_text())
    twin = con.execute("FROM corrected_pairwise_sql").df()
    keys = ["pool", "metric", "target_a", "target_b"]
    assert list(twin.columns) == list(expected.columns)
    assert len(twin) == len(expected) == 3 + 6 + 3
    merged = expected.astype({k: str for k in keys}).merge(twin, on=keys, suffixes=("", "_sql"))
    assert len(merged) == len(expected)
    for column in expected.columns.drop(keys):
        if expected[column].dtype == object or column.endswith("verdict"):
            assert merged[column].tolist() == merged[f"{column}_sql"].tolist(), column
        else:
            left, right = merged[column].astype(float), merged[f"{column}_sql"].astype(float)
            np.testing.assert_allclose(left, right, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=column)
    # beta and gamma, both with a standard error of 0, 9 apart: p 0; alpha and beta tied: p 1
    in_other = merged[merged["pool"] == other].set_index(["target_a", "target_b"])
    assert in_other.loc[("beta", "gamma"), "corrected_p_sql"] == 0.0
    assert in_other.loc[("alpha", "beta"), "corrected_p_sql"] == 1.0
