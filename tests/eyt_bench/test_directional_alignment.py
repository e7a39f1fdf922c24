"""Directional alignment (Spearman of turn index against cos(predicted, final intent)) is scipy.stats.spearmanr's
float, to the bit, without scipy.stats: on random dialogues with ties, and NaN where spearmanr gives NaN."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from eyt_dagster.core.bounds import clipped
from eyt_dagster.eyt_bench.dialogue_scoring import directional_alignment

pytestmark = pytest.mark.unit


def _scipy(turns: pd.Series, cos: pd.Series) -> float:
    if len(turns) < 3 or cos.nunique() < 2:
        return float("nan")
    return clipped(float(spearmanr(turns, cos).statistic), -1.0, 1.0)


def test_the_same_float_as_spearmanr_on_random_dialogues() -> None:
    rng = np.random.default_rng(7)
    for _ in range(2000):
        n = int(rng.integers(1, 11))
        cos = rng.choice(np.round(rng.uniform(-1, 1, 4), 2), n) if rng.random() < 0.3 else rng.uniform(-1, 1, n)
        if rng.random() < 0.05:
            cos[int(rng.integers(0, n))] = np.nan
        turns, values = pd.Series(np.arange(1, n + 1)), pd.Series(cos)
        ours, theirs = directional_alignment(turns, values), _scipy(turns, values)
        assert (math.isnan(ours) and math.isnan(theirs)) or ours == theirs, (cos, ours, theirs)


def test_hand_cases() -> None:
    turns = pd.Series([1, 2, 3, 4])
    assert directional_alignment(turns, pd.Series([0.1, 0.2, 0.3, 0.4])) == 1.0
    assert directional_alignment(turns, pd.Series([0.4, 0.3, 0.2, 0.1])) == -1.0
    # ranks of the similarity 1, 2.5, 2.5, 4 against 1, 2, 3, 4: r = 4.5 / sqrt(5 x 4.5) = 0.9487
    assert directional_alignment(turns, pd.Series([0.1, 0.2, 0.2, 0.5])) == pytest.approx(4.5 / math.sqrt(22.5))
    assert math.isnan(directional_alignment(turns[:2], pd.Series([0.1, 0.2])))
