"""The sequential design's statistics (eyt_dagster/core/sequential.py): the normal-mixture boundary against hand
computation and confseq's stored values, the confidence sequence at every prefix, the three-way verdicts, the
settings' validation, the seeded prefix order, the stop rule, the family-wise error on simulated ties, and the
benchmark's replay of a long table."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core import sequential as sq

pytestmark = pytest.mark.unit

REFERENCE = Path(__file__).resolve().parent / "confseq_reference.json"
BENCH = Path(__file__).resolve().parents[2] / "bench" / "sequential_design.py"


def test_boundary_by_hand():
    # alpha = alpha_opt = e^-1: log(1/alpha) = 1, rho = v_opt / (2 + log 3) = 2 / 3.0986123 = 0.6454567 for v_opt = 2
    # u(2) = sqrt((2 + 0.6454567) * (log(1 + 2 / 0.6454567) + 2)) = sqrt(2.6454567 * (1.4106411 + 2)) = 3.0038
    rho = 2 / (2 + math.log(3))
    expected = math.sqrt((2 + rho) * (math.log(1 + 2 / rho) + 2))
    assert sq.normal_mixture_bound(2.0, math.exp(-1), 2.0) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(3.0038, abs=1e-4)
    # at v = 0 the boundary is sqrt(rho * 2 log(1/alpha)) (no information yet, still finite)
    assert sq.normal_mixture_bound(0.0, math.exp(-1), 2.0) == pytest.approx(math.sqrt(2 * rho), rel=1e-12)


def test_boundary_is_vectorised_increasing_and_wider_at_smaller_alpha():
    v = np.array([1.0, 10.0, 100.0, 1000.0])
    u = sq.normal_mixture_bound(v, 0.05, 20.0)
    assert u.shape == v.shape and np.all(np.diff(u) > 0)
    assert np.all(sq.normal_mixture_bound(v, 0.001, 20.0, alpha_opt=0.05) > u)
    # u(v) / v falls towards 0: the interval for a mean shrinks
    assert np.all(np.diff(u / v) < 0)


@pytest.mark.parametrize("bad", [{"alpha": 0.0}, {"alpha": 1.0}, {"v_opt": 0.0}, {"alpha_opt": 1.5}])
def test_boundary_rejects_bad_parameters(bad):
    args = {"alpha": 0.05, "v_opt": 10.0, "alpha_opt": None} | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        sq.normal_mixture_bound(1.0, **args)


def test_boundary_matches_confseq_stored_values():
    stored = json.loads(REFERENCE.read_text())
    assert stored["confseq"] == "0.0.11" and len(stored["rows"]) == 32
    for row in stored["rows"]:
        mine = sq.normal_mixture_bound(row["v"], row["alpha"], row["v_opt"], row["alpha_opt"])
        np.testing.assert_allclose(mine, row["bound"], rtol=1e-9, atol=0)


def test_boundary_matches_confseq_live():
    boundaries = pytest.importorskip("confseq.boundaries")  # not a dependency: needs Boost headers to build
    v = np.geomspace(0.01, 1e4, 50)
    for alpha, v_opt, alpha_opt in [(0.05, 10.0, 0.05), (0.001, 44.7, 0.001), (0.2, 3.0, 0.05)]:
        theirs = boundaries.normal_mixture_bound(v, alpha, v_opt, alpha_opt=alpha_opt, is_one_sided=False)
        np.testing.assert_allclose(sq.normal_mixture_bound(v, alpha, v_opt, alpha_opt), theirs, rtol=1e-9)


def test_running_intervals_match_a_direct_computation_at_every_prefix():
    rng = np.random.default_rng(3)
    d = rng.normal(0.3, 1.0, size=(2, 40)) + 1000.0  # far from 0: the running sums must not cancel
    ci = sq.running_intervals(d, 0.05, 20.0)
    for row in range(2):
        for t in (1, 2, 7, 40):
            x = d[row, :t]
            assert ci.n[row, t - 1] == t
            assert ci.mean[row, t - 1] == pytest.approx(x.mean(), rel=1e-12)
            if t < 2:
                assert ci.lo[row, t - 1] == -np.inf and ci.hi[row, t - 1] == np.inf
                continue
            s = x.std(ddof=1)
            half = sq.normal_mixture_bound(t * s * s, 0.05, 20.0 * s * s) / t  # v_opt = t_opt x s^2
            assert ci.hi[row, t - 1] - x.mean() == pytest.approx(half, rel=1e-9)
            assert x.mean() - ci.lo[row, t - 1] == pytest.approx(half, rel=1e-9)


def test_running_intervals_floor_skip_nan_and_scale():
    # identical differences: the floor keeps the width positive: sd = 0.1, t = 10
    ci = sq.running_intervals(np.full(10, 0.5), 0.05, 10.0, sd_floor=0.1)
    assert ci.hi[-1] - ci.lo[-1] == pytest.approx(2 * 0.1 * float(sq.normal_mixture_bound(10.0, 0.05, 10.0)) / 10)
    # NaN items are skipped: the prefix counts the values it has
    with_gaps = sq.running_intervals(np.array([1.0, np.nan, 3.0, np.nan, 2.0]), 0.05, 10.0)
    plain = sq.running_intervals(np.array([1.0, 3.0, 2.0]), 0.05, 10.0)
    assert with_gaps.n.tolist() == [1, 1, 2, 2, 3]
    assert with_gaps.lo[-1] == pytest.approx(plain.lo[-1]) and with_gaps.hi[-1] == pytest.approx(plain.hi[-1])
    # the width is in the data's units: values x 100 give an interval x 100
    x = np.random.default_rng(0).normal(size=30)
    a, b = sq.running_intervals(x, 0.05, 10.0), sq.running_intervals(100 * x, 0.05, 10.0)
    np.testing.assert_allclose(100 * (a.hi - a.lo)[1:], (b.hi - b.lo)[1:], rtol=1e-9)


def test_verdicts_by_hand():
    m = 0.1
    lo = np.array([0.01, -0.3, -0.05, -0.2, 0.02, -np.inf, np.nan, -0.1])
    hi = np.array([0.30, -0.01, 0.08, 0.05, 0.05, np.inf, 0.0, 0.05])
    # (0.01, 0.30): above 0 -> a ahead; (-0.3, -0.01): below 0 -> b ahead; (-0.05, 0.08) inside (-0.1, 0.1) -> within;
    # (-0.2, 0.05): crosses 0 and -m -> undecided; (0.02, 0.05): above 0 and inside the margin -> a ahead (separation
    # first); infinite -> undecided; NaN -> undecided; (-0.1, 0.05): lo == -m is not inside the open margin -> undecided
    got = [sq.VERDICTS[c] for c in sq.verdicts(lo, hi, m)]
    assert got == [
        sq.A_AHEAD,
        sq.B_AHEAD,
        sq.WITHIN_MARGIN,
        sq.UNDECIDED,
        sq.A_AHEAD,
        sq.UNDECIDED,
        sq.UNDECIDED,
        sq.UNDECIDED,
    ]


def test_look_points():
    assert sq.look_points(20, 10, 100).tolist() == [20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert sq.look_points(20, 15, 100).tolist() == [20, 35, 50, 65, 80, 95, 100]  # N is always a look
    assert sq.look_points(20, 10, 12).tolist() == [12]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"min_dialogues": 1}, "min_dialogues"),
        ({"min_dialogues": 2.5}, "min_dialogues"),
        ({"batch": 0}, "batch"),
        ({"batch": True}, "batch"),
        ({"margin": {"empathy": 0.0}}, "margin"),
        ({"margin": {"empathy": -1.0}}, "margin"),
        ({"margin": {}}, "margin"),
    ],
)
def test_design_validation_names_the_field(changes, field):
    settings = {"enabled": True, "alpha": 0.05, "min_dialogues": 20, "batch": 10, "margin": {"empathy": 5.0}}
    with pytest.raises(ValueError, match=field):
        sq.SequentialDesign(**(settings | changes))


def test_margin_is_required_only_when_enabled():
    with pytest.raises(ValueError, match="margin is required"):
        sq.SequentialDesign(enabled=True)
    off = sq.SequentialDesign(enabled=False)
    assert off.margin == {} and off.min_dialogues == 20
    assert sq.SequentialDesign(enabled=True, margin={"a": 1}).t_opt(100) == pytest.approx(math.sqrt(2000))


def test_prefix_order_is_stable():
    ids = [f"pool:p{i:03d}" for i in range(50)]
    order = sq.prefix_order(ids, seed=7)
    assert sorted(order) == sorted(ids) and order != ids
    assert sq.prefix_order(list(reversed(ids)), seed=7) == order  # input order does not matter
    assert sq.prefix_order(ids + ids[:5], seed=7) == order  # duplicates collapse
    assert sq.prefix_order(ids, seed=8) != order  # the seed does
    grown = sq.prefix_order(ids + [f"pool:p{i:03d}" for i in range(50, 60)], seed=7)
    assert [i for i in grown if i in set(ids)] == order  # adding items keeps the others' relative order


def test_stop_rule():
    pairs = [(0, 1), (0, 2), (1, 2)]
    # (0, 1) decided on both metrics; (0, 2) on one; (1, 2) on both: 1 stops, 0 and 2 play on
    decided = np.array([[True, True], [True, False], [True, True]])
    state = sq.stop_state(pairs, decided, 3, played=[40, 40, 40], n_total=100)
    assert state == sq.StopState(to_play=(0, 2), finished=False)
    # at N nobody plays on, and the design is finished even with a pair undecided
    assert sq.stop_state(pairs, decided, 3, played=[100, 40, 100], n_total=100) == sq.StopState((), True)
    assert sq.stop_state(pairs, np.ones((3, 2), bool), 3, [30, 30, 30], 100).finished
    assert sq.common_prefix([40, 70, 70], 0, 1) == 40


def _slate(means, n=100, sd=0.2, seed=0):
    rng = np.random.default_rng(seed)
    m = np.asarray(means, dtype=float)
    return (m[:, None] + rng.normal(0, sd, (m.size, n)))[:, :, None]  # targets x items x 1 metric


def test_run_sequential_stops_far_apart_targets_early_and_plays_a_prefix():
    design = sq.SequentialDesign(enabled=True, alpha=0.05, min_dialogues=20, batch=10, margin={"m": 0.05})
    scores = _slate([0.0, 1.0, 1.02])  # 0 is far from both; 1 and 2 are within the margin of each other
    result = sq.run_sequential(scores, design, metrics=["m"], targets=["x", "y", "z"])
    d = result.decisions.set_index(["target_a", "target_b"])
    assert d.loc[("x", "y"), "verdict"] == sq.B_AHEAD and d.loc[("x", "y"), "decided_items"] == 20
    assert d.loc[("x", "z"), "verdict"] == sq.B_AHEAD
    assert d.loc[("y", "z"), "verdict"] in (sq.WITHIN_MARGIN, sq.UNDECIDED)
    assert result.items_played[0] == 20  # x's pairs were settled at the first look
    assert result.items_played[1] == result.items_played[2] > 20
    assert result.call_fraction == pytest.approx(result.items_played.sum() / 300)
    # the prefix property: replaying on only the items played so far gives the same decisions up to that look
    played = int(result.items_played.max())
    cut = np.where(np.arange(100)[None, :, None] < result.items_played[:, None, None], scores, np.nan)
    replay = sq.run_sequential(cut[:, :played], design, 100, metrics=["m"], targets=["x", "y", "z"])
    pd.testing.assert_frame_equal(
        replay.decisions.drop(columns="undecided_at_n"), result.decisions.drop(columns="undecided_at_n")
    )
    assert replay.items_played.tolist() == result.items_played.tolist()


def test_run_sequential_mid_run_and_undecided_at_n():
    design = sq.SequentialDesign(enabled=True, min_dialogues=20, batch=10, margin={"m": 0.01})
    scores = _slate([0.0, 0.05], sd=1.0)  # a small difference in large noise: never settled in 100 items
    early = sq.run_sequential(scores[:, :30], design, 100, metrics=["m"])
    assert not early.finished and early.items_played.tolist() == [30, 30]
    assert early.decisions["verdict"].tolist() == [sq.UNDECIDED]
    assert not early.decisions["undecided_at_n"].any()
    final = sq.run_sequential(scores, design, 100, metrics=["m"])
    assert final.finished and final.call_fraction == 1.0
    assert final.decisions["undecided_at_n"].tolist() == [True]
    assert np.isnan(final.decisions["decided_items"].iloc[0]) and final.decisions["n"].iloc[0] == 100


def test_run_sequential_ignores_metrics_without_margin_and_checks_shape():
    design = sq.SequentialDesign(enabled=True, margin={"a": 0.1})
    scores = np.zeros((3, 40, 2))
    result = sq.run_sequential(scores, design, metrics=["a", "b"])
    assert set(result.decisions["metric"]) == {"a"} and len(result.decisions) == 3
    with pytest.raises(ValueError, match="metrics"):
        sq.run_sequential(scores, design, metrics=["a"])


def test_family_wise_false_decisions_on_equal_targets_stay_below_alpha():
    # 300 families of 6 equal targets (15 pairs) on one metric, bounded values in [0, 1]: a family errs when any
    # pair is declared ahead (the true difference is 0, so 'within margin' is right)
    design = sq.SequentialDesign(enabled=True, alpha=0.05, min_dialogues=20, batch=10, margin={"m": 0.05})
    rng = np.random.default_rng(11)
    errs = 0
    for _ in range(300):
        scores = rng.binomial(20, 0.6, size=(6, 100, 1)) / 20
        verdict = sq.run_sequential(scores, design, metrics=["m"]).decisions["verdict"]
        errs += bool(verdict.isin([sq.A_AHEAD, sq.B_AHEAD]).any())
    # the expected count is at most 15; allow the binomial sd (about 3.8) twice over
    assert errs / 300 <= 0.05 + 0.025


def _bench():
    spec = importlib.util.spec_from_file_location("sequential_design_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_bench_replays_a_long_table():
    bench = _bench()
    rng = np.random.default_rng(2)
    rows = [
        {"target": t, "item": f"s{i:02d}", "metric": metric, "value": mu + rng.normal(0, 0.1)}
        for t, mu in (("low", 0.2), ("mid", 0.5), ("high", 0.8))
        for i in range(60)
        for metric in ("acc", "unused")
    ]
    design = sq.SequentialDesign(enabled=True, min_dialogues=20, batch=10, margin={"acc": 0.05})
    out = bench.replay(pd.DataFrame(rows), design, seed=0)
    assert out["items_played"] == {"high": 20, "low": 20, "mid": 20}  # 0.3 apart in 0.1 noise: settled at once
    assert out["call_fraction"] == pytest.approx(20 / 60)
    assert out["agreement"] == 1.0
    assert set(out["decisions"]["metric"]) == {"acc"}
    assert (out["decisions"]["verdict"] == sq.A_AHEAD).sum() + (out["decisions"]["verdict"] == sq.B_AHEAD).sum() == 3


def test_anytime_p_value_by_hand_and_at_the_boundary() -> None:
    # alpha = alpha_opt = e^-1, t_opt = 2: rho = 2 / (2 + log 3) = 0.6454567, u(2) = 3.0038 (test_boundary_by_hand).
    # An interval at n = 2 around 0.5 with half-width u(2) / 8 puts 0 at z = u(2) * 0.5 / half = 4 boundary units:
    # p = sqrt(1 + 2 / rho) * exp(-16 / (2 (2 + rho))) = 2.0245030 * exp(-3.0240599) = 0.0983979
    a, t = math.exp(-1), 2.0
    rho = 2 / (2 + math.log(3))
    half = float(sq.normal_mixture_bound(2.0, a, t)) / 8
    ci = sq.Intervals(n=np.array([2.0]), mean=np.array([0.5]), lo=np.array([0.5 - half]), hi=np.array([0.5 + half]))
    expected = math.sqrt(1 + 2 / rho) * math.exp(-16 / (2 * (2 + rho)))
    p = float(sq.anytime_p_value(ci, a, t, 0.0)[0])
    assert p == pytest.approx(expected, rel=1e-12) and p == pytest.approx(0.0983979, abs=1e-7)
    # at level p (the same mixture, only the level changed) the interval's edge is exactly at d0 = 0
    assert half * float(sq.normal_mixture_bound(2.0, p, t, alpha_opt=a) / sq.normal_mixture_bound(2.0, a, t)) == (
        pytest.approx(0.5, rel=1e-12)
    )
    # d0 inside the interval at alpha: p >= alpha; at the mean, p = 1; an infinite interval: 1
    assert float(sq.anytime_p_value(ci, a, t, 0.5 - half / 2)[0]) > a
    assert float(sq.anytime_p_value(ci, a, t, 0.5)[0]) == 1.0
    wide = sq.Intervals(n=np.array([1.0]), mean=np.array([0.5]), lo=np.array([-np.inf]), hi=np.array([np.inf]))
    assert float(sq.anytime_p_value(wide, a, t)[0]) == 1.0


def test_verdict_p_values_agree_with_the_verdicts_and_run_sequential():
    rng = np.random.default_rng(5)
    alpha, t, m = 0.05 / 45, 44.7, 0.05
    diffs = rng.uniform(-0.15, 0.15, (300, 1)) + rng.normal(0.0, 0.1, (300, 100))
    ci = sq.running_intervals(diffs, alpha, t, sq.SD_FLOOR_OF_MARGIN * m)
    pv = sq.verdict_p_values(ci, alpha, t, m)
    codes = sq.verdicts(ci.lo, ci.hi, m)
    # a verdict at alpha exactly where its p-value is below alpha, a separation first
    below = pv < alpha
    expected = np.where(below[..., 0], 1, np.where(below[..., 1], 2, np.where(below[..., 2], 3, 0)))
    np.testing.assert_array_equal(codes, expected)
    assert 0 < (codes > 0).mean() < 1 and (codes == 3).any() and (codes == 1).any()
    # run_sequential's decided look is the first look where the pair's running-minimum decision p-value < alpha / K
    design = sq.SequentialDesign(enabled=True, alpha=0.05, min_dialogues=20, batch=10, margin={"m": 0.1})
    scores = _slate([0.0, 0.1, 0.25, 0.3], sd=0.3, seed=3)
    result = sq.run_sequential(scores, design, metrics=["m"])
    a, b = np.array([0, 0, 0, 1, 1, 2]), np.array([1, 2, 3, 2, 3, 3])
    k_alpha = 0.05 / 6
    ci = sq.running_intervals(scores[a, :, 0] - scores[b, :, 0], k_alpha, design.t_opt(100), 0.025)
    looks = sq.look_points(20, 10, 100)
    pi = np.minimum.accumulate(sq.verdict_p_values(ci, k_alpha, design.t_opt(100), 0.1).min(-1)[:, looks - 1], -1)
    hit = pi < k_alpha
    expected_items = np.where(hit.any(-1), looks[np.argmax(hit, -1)], np.nan)
    np.testing.assert_array_equal(result.decisions["decided_items"].to_numpy(), expected_items)


def test_running_minimum_p_value_is_valid_on_ties() -> None:
    # 2,000 series with a true mean difference of 0: the running minimum over the looks of p(0) is at most a in no
    # more than a share a of them (the confidence sequence is conservative at ten looks, so well below)
    rng = np.random.default_rng(9)
    ci = sq.running_intervals(rng.normal(0.0, 1.0, (2000, 100)), 0.05, 44.7)
    looks = sq.look_points(20, 10, 100)
    p_min = sq.anytime_p_value(ci, 0.05, 44.7, 0.0)[:, looks - 1].min(axis=-1)
    for a in (0.05, 0.1, 0.2):
        assert (p_min <= a).mean() <= a


def test_bench_oracle_fraction_is_the_first_n_that_separates_every_neighbour():
    bench = _bench()
    rng = np.random.default_rng(4)
    means = np.arange(bench.TARGETS, dtype=float)[:, None, None]  # neighbours 1 apart
    clear = [means + rng.normal(0, 0.01, (bench.TARGETS, bench.N_ITEMS, 2)) for _ in range(3)]
    assert bench.oracle_fraction(clear) == pytest.approx(4 / bench.N_ITEMS)  # the smallest N tried
    tied = [np.zeros((bench.TARGETS, bench.N_ITEMS, 2)) + rng.normal(0, 1, (bench.TARGETS, bench.N_ITEMS, 2))]
    assert bench.oracle_fraction(tied) == 1.0  # equal means: never every neighbour separated
    assert bench.neighbour_noise(clear[0], np.array([0.01, 0.01])) == pytest.approx(np.sqrt(2), rel=0.1)
