"""core.explained_means: a mean, a share and a mean paired difference with their arithmetic, each the number the
tables store (numpy's mean of the kept values, `core.stats`' bootstrap estimate) to the bit, on hand-computed
values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eyt_dagster.core import stats
from eyt_dagster.core.explained_means import (
    explained_mean,
    explained_paired_difference,
    explained_share,
    interval_steps,
)

pytestmark = pytest.mark.unit


def test_a_mean_leaves_out_the_missing_values_and_says_so():
    values = [0.5, float("nan"), 1.25, 2.0]  # (0.5 + 1.25 + 2) / 3 = 1.25
    explained = explained_mean("m", values, "empathy", "dialogue")
    assert explained.value == 1.25 == stats.bootstrap_mean_ci(values, resamples=5, seed=1)[0]
    assert [(s.label, s.arithmetic, s.result) for s in explained.steps] == [
        ("empathy of the 3 dialogue(s) with a value, summed", "0.5 + 1.25 + 2", 3.75),
        ("mean over those dialogues", "3.75 / 3", 1.25),
    ]
    assert explained.notes == ("1 dialogue(s) without a value left out",)
    assert math.isnan(explained_mean("m", [float("nan")], "x").value)


def test_a_share_is_hits_over_units_and_the_same_number_as_their_mean():
    hits = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0])  # 4 / 7
    explained = explained_share("s", hits, "right", "turn")
    assert explained.value == 4 / 7 == explained_mean("m", hits, "x").value
    assert [(s.arithmetic, s.result) for s in explained.steps] == [("4 / 7", 4 / 7)]


def test_a_long_paired_list_shows_its_ends_and_sums_them_all():
    a, b = np.arange(20.0), np.zeros(20)  # differences 0..19: sum 190, mean 9.5
    explained = explained_paired_difference("d", a, b, [f"s{i}" for i in range(20)])
    assert explained.value == 9.5 == stats.paired_bootstrap_diff(a, b, resamples=5, seed=1)["diff"]
    labels = [s.label for s in explained.steps]
    assert labels[:6] == [f"unit s{i}: A - B" for i in range(6)] and labels[6] == "... 8 more unit(s) ..."
    assert labels[7:13] == [f"unit s{i}: A - B" for i in range(14, 20)]
    assert explained.steps[-2].result == 190.0 and explained.steps[-1].arithmetic == "190 / 20"
    with pytest.raises(ValueError, match="differ in length"):
        explained_paired_difference("d", a, b[:3], ["s"])


def test_an_interval_is_described_with_its_bounds_or_said_to_be_missing():
    drawn, bounds = interval_steps(12, "pair", -2.5, 0.75, "seeded")
    assert "the 12 pair(s) resampled with replacement (seeded)" in drawn.label
    assert bounds.result == "-2.5 to 0.75" and "2.5th and 97.5th percentiles" in bounds.label
    assert (
        interval_steps(1, "pair", float("nan"), float("nan"), "seeded")[1].label == "fewer than two pairs: no interval"
    )
