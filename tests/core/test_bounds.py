"""Bounded values stay inside their bounds after floating-point rounding: cosines in [-1, 1], intent drift in
[0, 2 x drift scale], directional alignment in [-1, 1], for random vectors, identical ones and near-identical ones
(the rounding edge: two identical texts whose unit vectors dot to 1.0000005)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from eyt_dagster.core.bounds import clipped, cosine, cosine_of
from eyt_dagster.eyt_bench import metrics
from eyt_dagster.eyt_bench.dialogue_scoring import directional_alignment
from eyt_dagster.eyt_bench.encoder_calibration import CALIBRATIONS, DRIFT_MAX
from eyt_dagster.eyt_bench.intent_similarity import intent_similarities

pytestmark = pytest.mark.unit

FINITE = st.floats(-1e3, 1e3, allow_nan=False, width=32)
VECTORS = arrays(np.float32, st.integers(2, 384), elements=FINITE)


def unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else v


@settings(max_examples=300, deadline=None)
@given(VECTORS, st.data())
def test_cosines_of_random_and_identical_vectors_stay_within_minus_one_and_one(v, data):
    w = data.draw(arrays(np.float32, v.shape, elements=FINITE))
    for a, b in ((v, w), (v, v), (v, -v)):
        assert -1.0 <= cosine(unit(a), unit(b)) <= 1.0
        assert -1.0 <= cosine_of(a, b) <= 1.0
    if np.linalg.norm(v) > 0:
        assert cosine(unit(v), unit(v)) == 1.0 or np.dot(unit(v), unit(v)) < 1.0


def test_the_rounding_edge_that_failed_a_cell_is_clipped():
    # float32 unit vectors whose dot product rounds above 1: found by search, kept as the worked case
    rng = np.random.default_rng(3)
    over = None
    for _ in range(2000):
        v = rng.normal(size=384).astype(np.float32)
        v /= np.linalg.norm(v)
        if float(np.dot(v, v)) > 1.0:
            over = v
            break
    assert over is not None, "no float32 vector rounds above 1 in 2000 draws: the edge moved"
    assert float(np.dot(over, over)) > 1.0
    assert cosine(over, over) == 1.0
    assert metrics.intent_drift(pd.Series([cosine(over, over)] * 3)) == 0.0
    # the drift of the raw dot products would have been negative
    assert (1.0 - float(np.dot(over, over))) < 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=40))
def test_intent_drift_stays_within_its_scale(cosines):
    series = pd.Series(cosines)
    assert 0.0 <= metrics.intent_drift(series) <= 2.0
    for calibration in CALIBRATIONS.values():
        assert 0.0 <= metrics.calibrated_intent_drift(series, calibration) <= 2.0 * calibration.drift_scale <= DRIFT_MAX


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=12))
def test_directional_alignment_stays_within_minus_one_and_one(cosines):
    value = directional_alignment(pd.Series(range(1, len(cosines) + 1)), pd.Series(cosines))
    assert np.isnan(value) or -1.0 <= value <= 1.0


def test_clipped_keeps_nan_and_values_inside():
    assert np.isnan(clipped(float("nan"), 0.0, 2.0))
    assert clipped(-5e-7, 0.0, 2.0) == 0.0 and clipped(0.5, 0.0, 2.0) == 0.5 and clipped(2.0000001, 0.0, 2.0) == 2.0


def test_identical_intent_descriptions_give_a_cosine_of_exactly_one_and_no_negative_drift():
    # the embedding hands back float32 vectors normalised to about 1 (as sentence-transformers does)
    rng = np.random.default_rng(11)
    texts = ["wants a refund", "asks for the manager", "final goal"]
    vectors = {}
    for t in texts:
        v = rng.normal(size=384).astype(np.float32)
        vectors[t] = (v / np.linalg.norm(v)).astype(np.float32) * np.float32(1.0000001)
    turns = pd.DataFrame(
        {
            "target": "t",
            "pool": "p",
            "seed_id": "s1",
            "turn": [1, 2, 3],
            "gold_intent_description": ["wants a refund", "asks for the manager", "wants a refund"],
            "pred_intent_description": ["wants a refund", "asks for the manager", "wants a refund"],
            "error": None,
            "complete": True,
        }
    )
    seeds = pd.DataFrame({"seed_id": ["s1"], "final_intent": ["final goal"]})
    table, _ = intent_similarities(turns, seeds, lambda texts: ({t: vectors[t] for t in texts}, None))
    assert len(table) == 3 and float(np.dot(vectors["wants a refund"], vectors["wants a refund"])) > 1.0
    assert (table["cos_gold_pred"] == 1.0).all()
    assert metrics.intent_drift(table["cos_gold_pred"]) == 0.0
