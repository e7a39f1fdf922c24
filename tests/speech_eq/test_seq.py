"""SEQ on hand-computed cohorts and the paper's Table 4 rank check."""

import pytest

from eyt_dagster.core.stats import spearman_rho
from eyt_dagster.speech_eq.seq import robust_z, seq_scores

pytestmark = pytest.mark.unit


def test_seq_on_a_hand_computed_cohort():
    cohort = {"a": 0.30, "b": 0.40, "c": 0.50, "d": 0.60, "e": 0.90}
    # median 0.5; |x - 0.5| = 0.2, 0.1, 0, 0.1, 0.4 -> MAD 0.1; scale 0.14826
    z = robust_z(cohort)
    assert z["c"] == 0 and z["d"] == pytest.approx(0.1 / 0.14826)
    seq = seq_scores(cohort)
    assert seq["c"] == 100 and seq["d"] == pytest.approx(100 + 15 * 0.1 / 0.14826)  # ~110.1
    assert seq["e"] == pytest.approx(100 + 15 * 0.4 / 0.14826)  # ~140.5, inside the clip
    assert seq["a"] == pytest.approx(100 - 15 * 0.2 / 0.14826)


def test_mad_zero_gives_every_model_100():
    assert seq_scores({"a": 0.5, "b": 0.5, "c": 0.5}) == {"a": 100.0, "b": 100.0, "c": 100.0}
    # a majority on the median also makes MAD 0, even with an outlier
    assert seq_scores({"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.9})["d"] == 100.0


def test_seq_is_clipped_at_four_sigma():
    cohort = {"a": 0.40, "b": 0.45, "c": 0.50, "d": 0.55, "e": 0.99, "f": 0.01}
    seq = seq_scores(cohort)  # MAD = 0.05 -> one unit of z per 0.074 in accuracy
    assert seq["e"] == 160.0 and seq["f"] == 40.0


def test_paper_table4_rank_correlation():
    human = [1, 3, 6, 2, 4, 5]
    seq_rank = [1, 2, 6, 3, 4, 5]
    assert spearman_rho(human, seq_rank) == pytest.approx(0.943, abs=5e-4)
