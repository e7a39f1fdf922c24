"""eyt_dagster.core.stats against hand-computed and textbook values."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, f1_score

from eyt_dagster.core import stats

pytestmark = pytest.mark.unit

NAN = np.nan

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 coders x 12 units with missing data.
KRIPP = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
# By hand: unit 12 has one value (not pairable), so n = 40 pairable values with counts
# n_1..n_5 = 9, 13, 10, 5, 3. Only units 2 (2,2,3,2), 6 (1,2,3,4) and 8 (1,1,2,1) disagree.
# Nominal: off-diagonal coincidences 6/3 + 12/3 + 6/3 = 8, D_o = 8/40;
#   D_e = (40^2 - sum n_v^2) / (40 * 39) = 1216/1560; alpha = 1 - 0.2 * 1560/1216 = 0.7434.
# Interval: unit sums of squared ordered-pair differences / (m - 1): 6/3 + 40/3 + 6/3 = 52/3, D_o = 52/120;
#   D_e = 2 * sum_{c<k} n_c n_k (c - k)^2 / (40 * 39) = 4480/1560; alpha = 0.8491.
# Ordinal: d(c, k) = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2, e.g. d(1,2) = 11^2; observed sum o*d = 1891,
#   expected 2 * 199740 / 39; alpha = 1 - 1891 * 39 / 399480 = 0.8154.
KRIPP_NOMINAL = 1 - 312 / 1216
KRIPP_INTERVAL = 1 - (52 / 120) / (4480 / 1560)
KRIPP_ORDINAL = 1 - 73749 / 399480


def test_krippendorff_textbook_example():
    assert round(KRIPP_NOMINAL, 3) == 0.743 and round(KRIPP_INTERVAL, 3) == 0.849
    assert stats.krippendorff_alpha(KRIPP, "nominal") == pytest.approx(KRIPP_NOMINAL, abs=1e-12)
    assert stats.krippendorff_alpha(KRIPP, "interval") == pytest.approx(KRIPP_INTERVAL, abs=1e-12)
    assert stats.krippendorff_alpha(KRIPP, "ordinal") == pytest.approx(KRIPP_ORDINAL, abs=1e-12)


def test_krippendorff_ordinal_domain_and_level():
    # An unused value on the declared scale weighs nothing in the ordinal distance.
    assert stats.krippendorff_alpha(KRIPP, "ordinal", value_domain=range(0, 8)) == pytest.approx(KRIPP_ORDINAL)
    with pytest.raises(ValueError):
        stats.krippendorff_alpha(KRIPP, "ordinal", value_domain=[1, 2, 3])
    # 2 raters, units (1,1), (2,2), (3,2): counts n_1..n_3 = 2, 3, 1 over n = 6 values.
    # Ordinal: d(2,3) = (4 - 2)^2 = 4, d(1,2) = 2.5^2, d(1,3) = 4.5^2; observed 2*4 = 8,
    # expected 2 * (6 * 6.25 + 2 * 20.25 + 3 * 4) / 5 = 36, alpha = 7/9.
    small = np.array([[1, 2, 3], [1, 2, 2]], dtype=float)
    assert stats.krippendorff_alpha(small, "ordinal") == pytest.approx(7 / 9)
    # Interval: observed 2 * 1 = 2, expected 2 * (6 * 1 + 2 * 4 + 3 * 1) / 5 = 6.8.
    assert stats.krippendorff_alpha(small, "interval") == pytest.approx(1 - 2 / 6.8)


@pytest.mark.filterwarnings("error")
def test_krippendorff_edge_cases():
    perfect = np.array([[1, 2, 3, 4], [1, 2, 3, 4], [1, NAN, 3, 4]])
    for level in ("nominal", "ordinal", "interval"):
        assert stats.krippendorff_alpha(perfect, level) == pytest.approx(1.0)
    assert np.isnan(stats.krippendorff_alpha(np.array([[1.0, 2.0, 3.0]]), "ordinal"))  # one rater
    assert np.isnan(stats.krippendorff_alpha(np.array([[1, NAN], [NAN, 2]]), "ordinal"))  # no pair
    assert np.isnan(stats.krippendorff_alpha(np.array([[2.0, 2.0], [2.0, 2.0]]), "ordinal", range(5)))


def test_quadratic_kappa_hand_3x3():
    # a = (0,0,1,1,2,2), b = (0,1,1,2,2,2): disagreements (0,1), (1,2) weigh 1 each -> 2.
    # Expected counts r_i c_j / 6 with r = (2,2,2), c = (1,2,3): sum (i-j)^2 c_j / 3 = 5/3 + 4/3 + 5 = 8.
    a, b = [0, 0, 1, 1, 2, 2], [0, 1, 1, 2, 2, 2]
    assert stats.quadratic_weighted_kappa(a, b, labels=[0, 1, 2]) == pytest.approx(1 - 2 / 8)
    half = [0, 0.5, 1]
    assert stats.quadratic_weighted_kappa(np.divide(a, 2), np.divide(b, 2), half) == pytest.approx(0.75)


@pytest.mark.filterwarnings("error")
def test_quadratic_kappa_uses_the_whole_grid():
    grid = [i / 2 for i in range(11)]
    a, b = [0, 0.5, 5, 5], [0.5, 0, 5, 5]
    # Grid positions (0,1,10,10) vs (1,0,10,10): observed weight 2; expected
    # (1 + 1 + 2*100 + 2*81 + 2*100 + 2*81) / 4 = 181.5.
    assert stats.quadratic_weighted_kappa(a, b, grid) == pytest.approx(1 - 2 / 181.5)
    # The observed values alone would put 0.5 one step from 5: a different (wrong) answer.
    squeezed = cohen_kappa_score([0, 1, 2, 2], [1, 0, 2, 2], weights="quadratic")
    assert squeezed == pytest.approx(1 - 2 / 5.5)
    assert stats.quadratic_weighted_kappa([1, 2, NAN, 3], [1, 2, 4, 3], grid) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="0.3"):
        stats.quadratic_weighted_kappa([0.3, 1], [1, 1], grid)
    assert np.isnan(stats.quadratic_weighted_kappa([2, 2], [2, 2], grid))


def test_rank_correlations_with_ties():
    # Pairs of (1,2,2,3) vs (2,1,3,3): 3 concordant, 1 discordant, one tie in x, one in y.
    # tau-b = (3 - 1) / sqrt((6 - 1)(6 - 1)) = 0.4 (tau-a would be 2/6).
    assert stats.kendall_tau([1, 2, 2, 3], [2, 1, 3, 3]) == pytest.approx(0.4)
    # Spearman without ties: sum d^2 = 2, rho = 1 - 6*2 / (6 * 35).
    assert stats.spearman_rho([1, 3, 6, 2, 4, 5], [1, 2, 6, 3, 4, 5]) == pytest.approx(1 - 12 / 210)
    assert round(stats.spearman_rho([1, 3, 6, 2, 4, 5], [1, 2, 6, 3, 4, 5]), 3) == 0.943
    # Ties share the average rank: (1, 2.5, 2.5, 4) vs (1, 3, 2, 4) -> 4.5 / sqrt(4.5 * 5).
    assert stats.spearman_rho([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(3 / np.sqrt(10))
    assert stats.pearson_r([1, 2, 3, NAN], [1, 3, 2, 7]) == pytest.approx(0.5)


@pytest.mark.filterwarnings("error")
def test_correlations_nan_for_constant_input_without_warnings():
    for fn in (stats.kendall_tau, stats.spearman_rho, stats.pearson_r):
        assert np.isnan(fn([1, 1, 1], [1, 2, 3]))
        assert np.isnan(fn([1], [2]))
        assert isinstance(fn([1, 2, 3], [1, 2, 4]), float)


def test_bootstrap_mean_contains_truth_and_narrows():
    x = np.random.default_rng(0).normal(10.0, 2.0, size=200)
    est, low, high = stats.bootstrap_mean_ci(x, seed=1)
    assert est == pytest.approx(x.mean()) and low < 10.0 < high and low < est < high
    assert stats.bootstrap_mean_ci(x, seed=1) == (est, low, high)  # deterministic under the seed
    small = stats.bootstrap_mean_ci(x[:50], seed=1)
    big = stats.bootstrap_mean_ci(np.random.default_rng(8).normal(10.0, 2.0, size=2000), seed=1)
    assert big[2] - big[1] < high - low < small[2] - small[1]
    # Over 100 samples a 95% interval covers the true mean about 95 times (here 94).
    covered = [
        stats.bootstrap_mean_ci(np.random.default_rng(100 + i).normal(10.0, 2.0, 200), seed=i) for i in range(100)
    ]
    assert 88 <= sum(lo < 10.0 < hi for _, lo, hi in covered) <= 99
    # Same index matrix and percentile rule as scipy.stats.bootstrap.
    ref = sps.bootstrap((x,), np.mean, method="percentile", n_resamples=1000, rng=np.random.default_rng(1))
    assert (low, high) == pytest.approx(tuple(ref.confidence_interval))


def test_bootstrap_mean_nan_and_small():
    x = np.array([1.0, NAN, 2.0, 4.0, NAN])
    assert stats.bootstrap_mean_ci(x, seed=0) == stats.bootstrap_mean_ci([1.0, 2.0, 4.0], seed=0)
    est, low, high = stats.bootstrap_mean_ci([3.0, NAN], seed=0)
    assert est == 3.0 and np.isnan(low) and np.isnan(high)
    assert all(np.isnan(stats.bootstrap_mean_ci([], seed=0)))


def test_bootstrap_ratio_is_pooled_mean():
    rng = np.random.default_rng(3)
    turns = rng.integers(2, 11, size=40).astype(float)  # turns per dialogue
    sums = turns * rng.uniform(2, 5, size=40)  # per-dialogue sums of turn scores
    est, low, high = stats.bootstrap_ratio_ci(sums, turns, seed=5)
    assert est == pytest.approx(sums.sum() / turns.sum()) and low < est < high
    assert est != pytest.approx(np.mean(sums / turns))  # pooled, not the mean of dialogue means
    # With equal denominators the ratio bootstrap is the mean bootstrap of num/den.
    equal = stats.bootstrap_ratio_ci(sums, np.full(40, 4.0), seed=5)
    assert equal == pytest.approx(stats.bootstrap_mean_ci(sums / 4.0, seed=5))


def test_bootstrap_macro_f1_matches_sklearn():
    rng = np.random.default_rng(11)
    labels = ["a", "b", "c", "never"]
    units = [(rng.choice(labels[:3], 5, p=[0.6, 0.3, 0.1]), rng.choice(labels[:3], 5)) for _ in range(12)]
    counts = np.stack([stats.class_counts(g, p, labels) for g, p in units])
    gold = np.concatenate([g for g, _ in units])
    pred = np.concatenate([p for _, p in units])
    est, low, high = stats.bootstrap_macro_f1_ci(counts, resamples=60, seed=2)
    assert est == pytest.approx(f1_score(gold, pred, average="macro", zero_division=0))
    idx = np.random.default_rng(2).integers(0, 12, size=(60, 12))
    draws = [
        f1_score(
            np.concatenate([units[i][0] for i in row]),
            np.concatenate([units[i][1] for i in row]),
            average="macro",
            zero_division=0,
        )
        for row in idx
    ]
    assert (low, high) == pytest.approx(tuple(np.quantile(draws, [0.025, 0.975])))


def test_paired_bootstrap_diff():
    rng = np.random.default_rng(4)
    b = rng.normal(70, 5, size=60)
    shifted = stats.paired_bootstrap_diff(b + 3 + rng.normal(0, 1, 60), b, seed=0)
    assert shifted["excludes_zero"] and shifted["low"] > 0 and shifted["n"] == 60
    assert shifted["diff"] == pytest.approx(3, abs=0.5)
    noise = stats.paired_bootstrap_diff(b + rng.normal(0, 1, 60), b, seed=0)
    assert not noise["excludes_zero"] and noise["low"] < 0 < noise["high"]
    a = b.copy()
    a[:5] = NAN
    assert stats.paired_bootstrap_diff(a, b, seed=0)["n"] == 55
    with pytest.raises(ValueError):
        stats.paired_bootstrap_diff([1.0, 2.0], [1.0], seed=0)


def test_rank_flips():
    scores = pd.DataFrame(
        {0.05: [75.0, 74.0, 70.0], 0.10: [74.0, 74.5, 74.0], 0.15: [73.0, 74.2, 72.0]},
        index=["claude", "qwen", "gemma"],
    )
    # claude > qwen at 0.05 but < at 0.10 and 0.15; claude vs gemma ties at 0.10 (not a flip);
    # qwen > gemma everywhere.
    assert stats.rank_flips(scores) == [(0.05, 0.10, "claude", "qwen"), (0.05, 0.15, "claude", "qwen")]
    assert stats.rank_flips(scores[[0.10, 0.15]]) == []


# -- many pairs at once, p-values, Holm, minimum detectable difference --------------------------------------------


def test_the_shared_resample_matrix_gives_each_pairs_own_bootstrap():
    rng = np.random.default_rng(3)
    values = rng.normal(size=(5, 40))
    values[3, 7] = np.nan  # row 3 takes the per-pair path: its complete columns only
    pairs = list(itertools.combinations(range(5), 2))
    table = stats.paired_bootstrap_table(values, pairs, resamples=500, seed=11)
    for k, (i, j) in enumerate(pairs):
        one = stats.paired_bootstrap_diff(values[i], values[j], resamples=500, seed=11)
        assert table["n"][k] == one["n"] == (39 if 3 in (i, j) else 40)
        for ours, theirs in (("diff", "diff"), ("low", "low"), ("high", "high")):
            assert table[ours][k] == pytest.approx(one[theirs], abs=1e-12)
        assert bool(table["excludes_zero"][k]) == one["excludes_zero"]
        assert table["se"][k] > 0


def test_holm_adjustment_by_hand():
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> running max 0.02 0.03 0.06 0.06
    adjusted = stats.holm_adjusted([0.01, 0.04, 0.03, 0.005, np.nan])
    assert adjusted[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and np.isnan(adjusted[4])
    assert stats.holm_adjusted([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert stats.holm_adjusted([]).size == 0


def test_normal_p_value_and_minimum_detectable_difference():
    p = stats.normal_p_value([1.959964, 0.0, 0.3, np.nan], [1.0, 0.0, 0.0, 1.0])
    assert p[0] == pytest.approx(0.05, abs=1e-6) and p[1] == 1.0 and p[2] == 0.0 and np.isnan(p[3])
    # (z_0.975 + z_0.8) x se = (1.95996 + 0.84162) x 0.5
    assert stats.min_detectable_difference([0.5])[0] == pytest.approx(1.400790, abs=1e-5)


def test_normal_figures_equal_scipy_stats_bit_for_bit():
    # scipy.special.ndtr / ndtri stand in for scipy.stats.norm (sf, ppf); the figures must be the very same floats
    rng = np.random.default_rng(7)
    diff = np.concatenate([rng.normal(0, 3, 20_000), [0.0, -0.0, 1e-300, 40.0, -40.0, np.inf, np.nan, 2.5]])
    se = np.concatenate([rng.gamma(1.0, 1.0, 20_000), [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, np.nan]])
    se[:50] = 0.0  # zero standard errors with non-zero differences
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se == 0, np.where(diff == 0, 0.0, np.inf), np.abs(diff) / se)
    expected = np.where(np.isnan(diff) | np.isnan(se), np.nan, 2.0 * sps.norm.sf(z))
    got = stats.normal_p_value(diff, se)
    assert np.array_equal(got, expected, equal_nan=True)
    assert got[-8:-2].tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0] and got[0:50].max() == 0.0
    for alpha, power in [(0.05, 0.8), (0.01, 0.9), (0.1, 0.5)]:
        by_scipy = (sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)) * se
        mde = stats.min_detectable_difference(se, alpha=alpha, power=power)
        assert np.array_equal(mde, by_scipy, equal_nan=True)


def test_rank_correlations_equal_scipy_bit_for_bit():
    # spearman_rho and kendall_tau compute in numpy what scipy.stats computes: the very same floats, ties included
    rng = np.random.default_rng(11)
    for k in range(300):
        n = int(rng.integers(2, 120))
        if k % 3 == 0:  # many ties: half points on a short scale
            x, y = rng.integers(0, 8, n) / 2, rng.integers(0, 8, n) / 2
        else:
            x = rng.normal(50, 20, n)
            y = x * rng.uniform(-1, 1) + rng.normal(0, 10, n)
        if k % 5 == 0:
            x[rng.random(n) < 0.1] = NAN
        keep = ~(np.isnan(x) | np.isnan(y))
        u, v = x[keep], y[keep]
        if u.size < 2 or np.all(u == u[0]) or np.all(v == v[0]):
            assert np.isnan(stats.spearman_rho(x, y)) and np.isnan(stats.kendall_tau(x, y))
            continue
        assert stats.spearman_rho(x, y) == float(sps.spearmanr(u, v).statistic)
        assert stats.kendall_tau(x, y) == float(sps.kendalltau(u, v, variant="b").statistic)
    ranks = stats.average_ranks(np.array([3.0, 1.0, 2.0, 2.0, 3.0, 3.0]))
    assert ranks.tolist() == [5.0, 1.0, 2.5, 2.5, 5.0, 5.0]  # by hand: 1; 2.5 for positions 2-3; 5 for 4-6
    assert np.array_equal(ranks, sps.rankdata([3.0, 1.0, 2.0, 2.0, 3.0, 3.0]))
