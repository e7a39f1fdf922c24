"""core.prediction_powered: the PPI++ mean against hand computation (lambda fixed at 1 and tuned), against ppi_py's
stored values (tests/core/ppi_reference.json, written by bench/ppi_reference.py), its arithmetic as an `Explained`,
the edge cases (too few labels, no unlabelled item, a constant judge, constant labels, bad input), and a small run
of bench/judge_correction.py."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from eyt_dagster.core.explained import agrees
from eyt_dagster.core.prediction_powered import prediction_powered_mean

pytestmark = pytest.mark.unit

REFERENCE = Path(__file__).resolve().parent / "ppi_reference.json"
BENCH = Path(__file__).resolve().parents[2] / "bench" / "judge_correction.py"
Z95 = 1.959963984540054

# n = 4 labelled items, N = 6 without a label; the judge is lenient on the labelled items by 0.5 on average.
HUMAN = [3, 4, 2, 5]
JUDGED = [4, 4, 3, 5]
UNLABELLED = [5, 5, 4, 3, 5, 5]


def test_lambda_one_by_hand():
    found = prediction_powered_mean(HUMAN, JUDGED, UNLABELLED, lam=1.0)
    # mean(Yhat~) + mean(Y - Yhat) = 27 / 6 + (-1 + 0 - 1 + 0) / 4 = 4.5 - 0.5 = 4
    assert found.estimate == 4.0
    # var(Yhat~) = (4 x 0.25 + 0.25 + 2.25) / 6 = 7 / 12; var(Y - Yhat) = 4 x 0.25 / 4 = 1 / 4
    # se^2 = (7 / 12) / 6 + (1 / 4) / 4 = 14 / 144 + 9 / 144 = 23 / 144
    assert found.se == pytest.approx(math.sqrt(23) / 12, rel=1e-14)
    assert (found.low, found.high) == pytest.approx((4 - Z95 * math.sqrt(23) / 12, 4 + Z95 * math.sqrt(23) / 12))
    assert found.lam == 1.0 and not found.lam_tuned and math.isnan(found.lam_unclipped)
    assert (found.n_labelled, found.n_unlabelled) == (4, 6)
    # people only: mean 14 / 4 = 3.5, var (0.25 + 0.25 + 2.25 + 2.25) / 4 = 1.25, se sqrt(1.25 / 4)
    assert found.people_mean == 3.5 and found.people_se == pytest.approx(math.sqrt(1.25 / 4), rel=1e-14)
    assert found.people_low == pytest.approx(3.5 - Z95 * math.sqrt(1.25 / 4), rel=1e-14)
    # judge only: mean 4.5, se sqrt((7 / 12) / 6)
    assert found.judge_mean == 4.5 and found.judge_se == pytest.approx(math.sqrt(7 / 72), rel=1e-14)
    assert found.judge_high == pytest.approx(4.5 + Z95 * math.sqrt(7 / 72), rel=1e-14)
    # effective n: var(Y) / se^2 = 1.25 / (23 / 144) = 180 / 23
    assert found.effective_n == pytest.approx(180 / 23, rel=1e-13)


def test_tuned_lambda_by_hand():
    found = prediction_powered_mean(HUMAN, JUDGED, UNLABELLED)
    # cov(Y, Yhat) / n: (Y - 3.5) . (Yhat - 4) / 4 = (0 + 0 + 1.5 + 1.5) / 4 = 0.75
    assert found.covariance == 0.75
    # all ten judge values: mean 4.3, squared deviations 3 x 0.09 + 2 x 1.69 + 5 x 0.49 = 6.1, / 9
    assert found.judge_variance == pytest.approx(6.1 / 9, rel=1e-14)
    # lambda = 0.75 / ((1 + 4 / 6) x 6.1 / 9) = 20.25 / 30.5 = 81 / 122, inside [0, 1]
    lam = 81 / 122
    assert found.lam == pytest.approx(lam, rel=1e-14) and found.lam_unclipped == found.lam and found.lam_tuned
    # estimate = 3.5 + lambda x (4.5 - 4)
    assert found.estimate == pytest.approx(3.5 + lam / 2, rel=1e-14)
    # var(Y - lambda Yhat) = var(Y) - 2 lambda cov + lambda^2 var(Yhat) = 1.25 - 1.5 lambda + 0.5 lambda^2
    se2 = lam**2 * (7 / 12) / 6 + (1.25 - 1.5 * lam + 0.5 * lam**2) / 4
    assert found.se == pytest.approx(math.sqrt(se2), rel=1e-13)
    assert found.effective_n == pytest.approx(1.25 / se2, rel=1e-12)
    # both beat the people alone (effective n above 4). The tuned lambda need not beat lambda 1 on the reported se:
    # it minimises a variance with the judge's spread taken over all ten values (divided by 9), the se takes it
    # over the six unlabelled ones (divided by 6); here lambda 1 comes out 0.5% narrower
    fixed = prediction_powered_mean(HUMAN, JUDGED, UNLABELLED, lam=1.0)
    assert max(found.se, fixed.se) < found.people_se and found.effective_n > 4
    assert fixed.se == pytest.approx(found.se, rel=0.01) and fixed.se < found.se


def test_lambda_zero_is_the_people_only_interval():
    found = prediction_powered_mean(HUMAN, JUDGED, UNLABELLED, lam=0.0)
    assert found.estimate == found.people_mean == 3.5
    assert (found.low, found.high, found.se) == (found.people_low, found.people_high, found.people_se)
    assert found.effective_n == pytest.approx(4.0, rel=1e-14)


def test_the_level_sets_the_normal_quantile():
    found = prediction_powered_mean(HUMAN, JUDGED, UNLABELLED, lam=1.0, level=0.9)
    assert found.z == pytest.approx(1.6448536269514722, rel=1e-12) and found.level == 0.9
    assert found.high - found.estimate == pytest.approx(found.z * math.sqrt(23) / 12, rel=1e-13)


def test_matches_ppi_py_stored_values():
    stored = json.loads(REFERENCE.read_text())
    assert stored["ppi_python"] == "0.2.3" and stored["alpha"] == 0.05 and len(stored["cases"]) == 46
    lams = []
    for case in stored["cases"]:
        args = (case["human"], case["judged"], case["judged_unlabelled"])
        tuned, fixed = prediction_powered_mean(*args), prediction_powered_mean(*args, lam=1.0)
        mine = {
            "tuned": {"lam": tuned.lam, "estimate": tuned.estimate, "low": tuned.low, "high": tuned.high},
            "lam1": {"estimate": fixed.estimate, "low": fixed.low, "high": fixed.high},
            "people": {"low": tuned.people_low, "high": tuned.people_high},
            "judge": {"low": tuned.judge_low, "high": tuned.judge_high},
        }
        for part, figures in mine.items():
            for key, value in figures.items():
                assert value == pytest.approx(case[part][key], abs=1e-9), (case["name"], part, key)
        lams.append(tuned.lam)
    # the grid reaches both clips and the inside of [0, 1]
    assert min(lams) == 0.0 and max(lams) == 1.0 and sum(0.1 < x < 0.9 for x in lams) > 20


def test_explained_writes_the_arithmetic_with_the_values():
    found = prediction_powered_mean(HUMAN, JUDGED, UNLABELLED, lam=1.0)
    explained = found.explained("Empathy, people's scale")
    assert explained.value == found.estimate and agrees(found.estimate, explained.value)
    by_label = {step.label: step for step in explained.steps}
    estimate = by_label["estimate = people's mean + lambda x (judge without labels - judge on the labelled items)"]
    assert (estimate.arithmetic, estimate.result) == ("3.5 + 1 x (4.5 - 4)", 4.0)
    se = by_label["standard error = sqrt((lambda x judge's sd)^2 / N + (sd of label - lambda x judge)^2 / n)"]
    assert se.arithmetic == "sqrt((1 x 0.763763)^2 / 6 + 0.5^2 / 4)" and se.result == found.se
    assert by_label["weight of the judge, lambda, given"].result == 1.0
    interval = next(step for step in explained.steps if step.label.startswith("95% interval"))
    assert interval.result == f"{found.low:.6g} to {found.high:.6g}"
    assert explained.notes[0].startswith("assumed: the items with a human label are a uniform random sample")


def test_explained_shows_the_tuning_and_the_clip():
    tuned = prediction_powered_mean(HUMAN, JUDGED, UNLABELLED).explained("x")
    lam = next(step for step in tuned.steps if step.label.startswith("weight of the judge, lambda ="))
    assert lam.arithmetic == "0.75 / ((1 + 4 / 6) x 0.677778)" and lam.result == pytest.approx(81 / 122)
    assert not any(step.label == "lambda clipped to [0, 1]" for step in tuned.steps)
    # a judge that scores backwards: the formula's lambda is negative, clipped to 0
    backwards = prediction_powered_mean(HUMAN, [6 - y for y in HUMAN], [1, 2, 3])
    assert backwards.lam_unclipped < 0 and backwards.lam == 0.0 and backwards.estimate == 3.5
    steps = backwards.explained("x").steps
    assert [s.result for s in steps if s.label == "lambda clipped to [0, 1]"] == [0.0]


def test_no_unlabelled_item_gives_the_people_mean():
    found = prediction_powered_mean(HUMAN, JUDGED, [])
    assert found.lam == 0.0 and found.estimate == 3.5 and found.se == found.people_se
    assert found.effective_n == pytest.approx(4.0) and found.n_unlabelled == 0
    assert math.isnan(found.judge_mean) and math.isnan(found.judge_low)
    assert any("every item has a human label" in note for note in found.notes)
    assert found.explained("x").value == 3.5
    with pytest.raises(ValueError, match="no item without a human label"):
        prediction_powered_mean(HUMAN, JUDGED, [], lam=1.0)


def test_a_constant_judge_carries_no_information():
    found = prediction_powered_mean(HUMAN, [4, 4, 4, 4], [4, 4, 4])
    assert found.lam == 0.0 and math.isnan(found.lam_unclipped) and found.estimate == 3.5
    assert found.se == found.people_se and any("same value" in note for note in found.notes)
    assert any("no value from the formula" in step.label for step in found.explained("x").steps)


def test_constant_labels_give_a_zero_width_interval_with_a_note():
    found = prediction_powered_mean([3, 3, 3], [2, 4, 3], [5, 1])
    assert found.lam == 0.0 and found.estimate == 3.0 and found.se == 0.0 and found.low == found.high == 3.0
    assert found.effective_n == 3.0 and any("zero width" in note for note in found.notes)
    # with lambda fixed at 1 the judge's spread is in the interval: no longer zero
    assert prediction_powered_mean([3, 3, 3], [2, 4, 3], [5, 1], lam=1.0).se > 0


def test_a_zero_standard_error_with_varying_labels_is_an_infinite_effective_n():
    found = prediction_powered_mean([1, 2], [1, 2], [3, 3, 3], lam=1.0)
    assert found.se == 0.0 and found.estimate == 3.0 and math.isinf(found.effective_n)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([3], [4], [5, 5]), {}, "at least 2 items with a human label"),
        (([], [], [5, 5]), {}, "at least 2 items with a human label"),
        (([3, 4], [4], [5]), {}, "differ in length"),
        (([3, float("nan")], [4, 4], [5]), {}, "human has 1 value"),
        (([3, 4], [4, 4], [5, float("inf")]), {}, "judged_unlabelled has 1 value"),
        (([[3, 4]], [[4, 4]], [5]), {}, "one value per item"),
        ((HUMAN, JUDGED, UNLABELLED), {"level": 1.0}, "level must be in"),
        ((HUMAN, JUDGED, UNLABELLED), {"lam": float("nan")}, "lam must be a finite number"),
    ],
)
def test_bad_input_is_refused(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        prediction_powered_mean(*args, **kwargs)


def test_the_estimate_centres_on_the_people_not_the_lenient_judge():
    # a judge 0.5 too lenient with noise: over many cells the mean estimate sits on the people's mean, the judge's
    # alone 0.5 above it (Monte Carlo error of the mean of 400 estimates: about 0.005)
    rng = np.random.default_rng(7)
    estimates, judge = [], []
    for _ in range(400):
        quality = rng.normal(3.0, 0.8, 300)
        y, yhat = quality + rng.normal(0, 0.4, 300), quality + 0.5 + rng.normal(0, 0.4, 300)
        found = prediction_powered_mean(y[:50], yhat[:50], yhat[50:])
        estimates.append(found.estimate)
        judge.append(found.judge_mean)
    assert np.mean(estimates) == pytest.approx(3.0, abs=0.02)
    assert np.mean(judge) == pytest.approx(3.5, abs=0.02)


def _bench():
    spec = importlib.util.spec_from_file_location("judge_correction_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_bench_truth_and_a_small_run():
    bench = _bench()
    # the exact expected label against a large draw of the same rounding and clipping
    rng = np.random.default_rng(11)
    drawn = np.clip(np.round(3.5 + rng.normal(0, np.hypot(0.8, 0.5), 400_000)), 1, 5).mean()
    assert bench.expected_label(3.5) == pytest.approx(drawn, abs=0.005)
    assert bench.expected_label(3.0) == pytest.approx(3.0, abs=1e-12)  # symmetric around the middle of 1-5
    truth = np.array([bench.expected_label(level) for level in bench.LEVELS])
    found = {s.name: bench.run_scenario(np.random.default_rng(0), s, 20, truth) for s in bench.SCENARIOS}
    lenient, family = found["uniform_leniency"], found["family_leniency"]
    # 120 cells: the 0.5 lenient judge's own interval never holds the truth, the corrected one nearly always does
    assert lenient["cells"] == 120 and lenient["coverage_judge_only"] == 0.0
    assert lenient["coverage_corrected"] > 0.85 and 0.6 < lenient["width_ratio"] < 1.0
    # the family the judge favours jumps the other family's targets: many pairs wrong, most of them put right
    assert family["judge_wrong_share"] > 0.2 and family["judge_wrong_corrected_right"] > 0.8
