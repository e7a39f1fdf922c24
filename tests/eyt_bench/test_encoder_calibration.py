"""The per-encoder calibration is a test: each entry of eyt_dagster/eyt_bench/encoder_calibration.py is checked
against the pair files of eyt_dagster/fixtures/encoder_calibration/ and the shipped persona pools, in every language
the entry claims (docs/languages.md#per-encoder-calibration). What each entry must do, with the share stated:

- deduplication: every non-paraphrase below the threshold (100%: merging two different people is the costly error),
  at least 95% of near-duplicates at or above it (a kept near-duplicate costs little);
- ranking: a paraphrase pair is more similar than a non-paraphrase pair in at least 95% of (paraphrase,
  non-paraphrase) combinations (AUC >= 0.95);
- on the shipped pools, the threshold drops exactly the near-duplicates that MiniLM at 0.85 drops;
- a multilingual entry: a sentence's Chinese translation is its nearest Chinese text for at least 80% of them;
- the drift scale is the least-squares fit of MiniLM's 1 - cos on the encoder's 1 - cos over the English pairs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench import metrics
from eyt_dagster.eyt_bench.encoder_calibration import (
    CALIBRATIONS,
    MINILM,
    USE_MULTILINGUAL,
    EncoderCalibration,
    UncalibratedEncoder,
    calibration,
    uncalibrated,
)
from eyt_dagster.eyt_bench.sampling import deduplicate
from eyt_dagster.eyt_bench.settings import PoolSource
from resources.datasets.calibration_pairs import PAIR_KINDS, read_pairs
from resources.datasets.persona_sources import load_pool_records
from resources.text.embeddings import embed

pytestmark = pytest.mark.unit

ENTRIES = [(encoder, language) for encoder, entry in CALIBRATIONS.items() for language in entry.languages]


def _cosines(encoder: str, relation: str, language: str) -> np.ndarray:
    pairs = read_pairs(relation)
    left = embed([p.a[language] for p in pairs], encoder).astype(np.float64)
    right = embed([p.b[language] for p in pairs], encoder).astype(np.float64)
    return np.einsum("ij,ij->i", left, right)


def _auc(positive: np.ndarray, negative: np.ndarray) -> float:
    wins = (positive[:, None] > negative[None, :]).sum() + 0.5 * (positive[:, None] == negative[None, :]).sum()
    return float(wins / (len(positive) * len(negative)))


def test_pair_files_have_forty_pairs_per_kind_in_both_languages() -> None:
    sizes = {relation: len(read_pairs(relation)) for relation in PAIR_KINDS}
    assert sizes == {"near_duplicates": 20, "paraphrases": 40, "non_paraphrases": 40}
    for relation in PAIR_KINDS:
        pairs = read_pairs(relation)
        assert {p.kind for p in pairs} == {"persona", "intent"}
        assert all(p.a["en"] != p.b["en"] and p.a["zh"] != p.b["zh"] for p in pairs)


@pytest.mark.parametrize(("encoder", "language"), ENTRIES)
def test_threshold_separates_near_duplicates_from_non_paraphrases(encoder: str, language: str) -> None:
    threshold = calibration(encoder, language).dedup_threshold
    non = _cosines(encoder, "non_paraphrases", language)
    assert (non < threshold).all(), f"{encoder} merges a non-paraphrase in {language}: max cos {non.max():.3f}"
    near = _cosines(encoder, "near_duplicates", language)
    assert (near >= threshold).mean() >= 0.95, f"{encoder} {language}: near-duplicates {np.sort(near)[:3]}"


@pytest.mark.parametrize(("encoder", "language"), ENTRIES)
def test_paraphrases_rank_above_non_paraphrases(encoder: str, language: str) -> None:
    auc = _auc(_cosines(encoder, "paraphrases", language), _cosines(encoder, "non_paraphrases", language))
    assert auc >= 0.95, f"{encoder} {language}: AUC {auc:.3f}"


def test_minilm_is_not_calibrated_for_chinese_and_why() -> None:
    """MiniLM ranks Chinese paraphrases little better than chance (measured 0.63), so its entry is English only."""
    assert calibration(MINILM).languages == ("en",)
    assert _auc(_cosines(MINILM, "paraphrases", "zh"), _cosines(MINILM, "non_paraphrases", "zh")) < 0.8
    with pytest.raises(
        UncalibratedEncoder, match=f"'{MINILM}' is calibrated for en, not for Chinese.*'{USE_MULTILINGUAL}'"
    ):
        calibration(MINILM, "zh")


@pytest.mark.parametrize("pool", ["nemotron_usa", "personamem_v2"])
def test_each_threshold_drops_the_same_personas_as_minilm_on_the_shipped_pools(pool: str) -> None:
    records = load_pool_records(pool, PoolSource())[0]
    texts = [r.persona_text for r in records]
    reference = deduplicate(records, embed(texts, MINILM), 0.85)
    assert len(reference.duplicate_of) == 6  # the fixture's six near-duplicates (eyt_dagster/fixtures/README.md)
    for encoder, entry in CALIBRATIONS.items():
        result = deduplicate(records, embed(texts, encoder), entry.dedup_threshold)
        assert result.duplicate_of == reference.duplicate_of, encoder


def test_chinese_translations_are_nearest_with_the_multilingual_encoder() -> None:
    pairs = read_pairs("paraphrases")
    english = [p.a["en"] for p in pairs] + [p.b["en"] for p in pairs]
    chinese = [p.a["zh"] for p in pairs] + [p.b["zh"] for p in pairs]
    similarity = embed(english, USE_MULTILINGUAL) @ embed(chinese, USE_MULTILINGUAL).T
    nearest = similarity.argmax(axis=1) == np.arange(len(english))
    assert nearest.mean() >= 0.8  # measured 69 of 80
    assert np.median(np.diag(similarity)) >= 0.65  # measured 0.71; MiniLM: 0.09


def test_drift_scale_is_the_fit_on_minilm_over_english_pairs() -> None:
    reference = np.concatenate([1.0 - _cosines(MINILM, r, "en") for r in PAIR_KINDS])
    for encoder, entry in CALIBRATIONS.items():
        x = np.concatenate([1.0 - _cosines(encoder, r, "en") for r in PAIR_KINDS])
        fitted = float(x @ reference / (x @ x))
        assert entry.drift_scale == pytest.approx(fitted, abs=0.01), encoder
        # after scaling, the encoder's drift over these pairs is within 0.02 of MiniLM's on average
        assert abs(float((entry.drift_scale * x).mean() - reference.mean())) < 0.02, encoder


def test_minilm_entry_leaves_the_english_numbers_unchanged() -> None:
    entry = calibration(MINILM)
    assert (entry.dedup_threshold, entry.drift_scale, entry.calibrated) == (0.85, 1.0, True)
    cosines = pd.Series(np.random.default_rng(7).uniform(-0.2, 1.0, 500))
    assert metrics.calibrated_intent_drift(cosines, entry) == metrics.intent_drift(cosines)  # to the bit


def test_calibrated_drift_on_hand_computed_turns() -> None:
    cosines = pd.Series([1.0, 0.5, 0.2])  # 1 - cos: 0, 0.5, 0.8; mean 1.3 / 3
    assert metrics.calibrated_intent_drift(cosines, calibration(MINILM)) == pytest.approx(1.3 / 3)
    scaled = EncoderCalibration("x", dedup_threshold=0.9, drift_scale=1.5, languages=("en",))
    assert metrics.calibrated_intent_drift(cosines, scaled) == pytest.approx(1.5 * 1.3 / 3)


def test_an_encoder_without_entry_is_refused_with_the_fix_or_taken_uncalibrated() -> None:
    with pytest.raises(UncalibratedEncoder) as raised:
        calibration("/models/my-local-encoder")
    message = str(raised.value)
    assert "'/models/my-local-encoder' has no calibration entry" in message
    assert MINILM in message and USE_MULTILINGUAL in message
    assert "eyt_dagster/eyt_bench/encoder_calibration.py" in message
    fallback = uncalibrated("/models/my-local-encoder", 0.9)
    assert (fallback.dedup_threshold, fallback.drift_scale, fallback.calibrated) == (0.9, 1.0, False)
    assert metrics.calibrated_intent_drift(pd.Series([0.25, 0.75]), fallback) == 0.5
