"""Acoustic contrast between the resonant and dissonant clip of a test turn (paper §2.3, docs/method.md).

Six features per clip give a composite score out of 8: pitch and speaking rate (ZCR) up to 2 points each,
spectral centroid, RMS energy, mean MFCC and duration up to 1 each. A pair scoring under `pass_score` is
regenerated up to `max_regenerations` times, then discarded. The paper keeps its thresholds private; the
defaults below are the project's (docs/method.md). Features are computed by `resources.audio.audio_features`; this
module is pure arithmetic on them.

Relative gaps use |a - b| / max(a, b): symmetric in the two clips, bounded in [0, 1], and never divides
by the smaller (possibly near-zero) value, so the score does not depend on which clip is called `a`.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Absorbs float rounding, so a gap built to sit exactly on a threshold (e.g. 2 semitones) scores it.
_EDGE = 1e-9

# Gap names, in the order the points are listed; `rate` is the zero-crossing-rate gap.
FEATURES: tuple[str, ...] = ("pitch", "rate", "centroid", "rms", "mfcc", "duration")


class AcousticFeatures(BaseModel):
    """The per-clip features the contrast score compares (one row of speech.tts_clips' feature columns)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mean_pitch_hz: float | None = Field(description="Mean F0 over voiced frames; None when no frame is voiced.")
    zcr: float = Field(ge=0.0, description="Mean zero-crossing rate per sample (speaking-rate proxy).")
    spectral_centroid_hz: float = Field(ge=0.0)
    rms: float = Field(gt=0.0, description="Mean frame RMS on the [-1, 1] sample scale.")
    rms_db: float = Field(description="20 log10(rms), dBFS.")
    mfcc_mean: list[float] = Field(min_length=1, description="Mean over frames of each MFCC coefficient.")
    duration_s: float = Field(gt=0.0, description="Duration after trimming leading and trailing silence.")
    sample_rate: int = Field(gt=0, description="Rate the features were computed at.")
    voiced_ratio: float = Field(ge=0.0, le=1.0, description="Share of frames counted as voiced.")


class ContrastThresholds(BaseModel):
    """Point thresholds of the contrast filter; each gap scores when it is >= its threshold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pitch_semitones_1: float = Field(default=2.0, gt=0, description="Pitch gap (semitones) for 1 point.")
    pitch_semitones_2: float = Field(default=4.0, gt=0, description="Pitch gap (semitones) for 2 points.")
    zcr_relative_1: float = Field(default=0.10, gt=0, le=1, description="ZCR relative gap for 1 point.")
    zcr_relative_2: float = Field(default=0.20, gt=0, le=1, description="ZCR relative gap for 2 points.")
    centroid_relative: float = Field(default=0.10, gt=0, le=1)
    rms_db: float = Field(default=3.0, gt=0, description="Gap in dB between the clips' mean RMS.")
    # Measured with espeak-ng (espeakng-loader) on six neutral sentences in six prosody presets: a preset
    # against itself with a small jitter (rate +-10 wpm, pitch +-5, volume +-10; n=216) gives 1.5-16.5
    # (p95 14.4); two different presets (n=90) give 28-242 (p5 31). 20 separates the two groups.
    # c0 (log energy) dominates: a pure level change of d dB moves the vector by d * sqrt(128) (~11.3 d).
    mfcc_l2: float = Field(default=20.0, gt=0, description="L2 distance between the mean-MFCC vectors.")
    duration_relative: float = Field(default=0.15, gt=0, le=1)
    pass_score: int = Field(default=4, ge=0, le=8, description="A pair passes with a total >= this.")
    max_regenerations: int = Field(default=3, ge=0, description="TTS retries for a failing pair, then discard.")

    @model_validator(mode="after")
    def _ordered(self) -> ContrastThresholds:
        if self.pitch_semitones_2 < self.pitch_semitones_1:
            raise ValueError("pitch_semitones_2 must be >= pitch_semitones_1")
        if self.zcr_relative_2 < self.zcr_relative_1:
            raise ValueError("zcr_relative_2 must be >= zcr_relative_1")
        return self


class ContrastResult(BaseModel):
    """A pair's score: total 0-8, points and gap per feature, and whether it passes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    total: int = Field(ge=0, le=8)
    points: dict[str, int]
    gaps: dict[str, float | None]
    passed: bool
    pass_score: int


def relative_gap(a: float, b: float) -> float:
    """|a - b| / max(a, b) for non-negative values; 0 when both are 0."""
    top = max(abs(a), abs(b))
    return abs(a - b) / top if top > 0 else 0.0


def semitone_gap(f_a: float | None, f_b: float | None) -> float | None:
    """|12 log2(f_a / f_b)|, or None when either clip has no voiced frame."""
    if f_a is None or f_b is None or f_a <= 0 or f_b <= 0:
        return None
    return abs(12.0 * math.log2(f_a / f_b))


def feature_gaps(a: AcousticFeatures, b: AcousticFeatures) -> dict[str, float | None]:
    """The six gaps between two clips, keyed as FEATURES."""
    if len(a.mfcc_mean) != len(b.mfcc_mean):
        raise ValueError(f"mfcc_mean lengths differ: {len(a.mfcc_mean)} vs {len(b.mfcc_mean)}")
    mfcc = math.sqrt(sum((x - y) ** 2 for x, y in zip(a.mfcc_mean, b.mfcc_mean, strict=True)))
    return {
        "pitch": semitone_gap(a.mean_pitch_hz, b.mean_pitch_hz),
        "rate": relative_gap(a.zcr, b.zcr),
        "centroid": relative_gap(a.spectral_centroid_hz, b.spectral_centroid_hz),
        "rms": abs(a.rms_db - b.rms_db),
        "mfcc": mfcc,
        "duration": relative_gap(a.duration_s, b.duration_s),
    }


def _points(gap: float | None, *thresholds: float) -> int:
    """How many of the thresholds the gap reaches; a missing gap (no voiced frame) reaches none."""
    return 0 if gap is None else sum(gap >= threshold - _EDGE for threshold in thresholds)


def gap_points(gaps: dict[str, float | None], thresholds: ContrastThresholds) -> dict[str, int]:
    """Points per feature for the given gaps."""
    t = thresholds
    return {
        "pitch": _points(gaps["pitch"], t.pitch_semitones_1, t.pitch_semitones_2),
        "rate": _points(gaps["rate"], t.zcr_relative_1, t.zcr_relative_2),
        "centroid": _points(gaps["centroid"], t.centroid_relative),
        "rms": _points(gaps["rms"], t.rms_db),
        "mfcc": _points(gaps["mfcc"], t.mfcc_l2),
        "duration": _points(gaps["duration"], t.duration_relative),
    }


def contrast_score(
    a: AcousticFeatures, b: AcousticFeatures, thresholds: ContrastThresholds | None = None
) -> ContrastResult:
    """Score the contrast between two clips of the same line (order does not matter)."""
    thresholds = thresholds or ContrastThresholds()
    gaps = feature_gaps(a, b)
    points = gap_points(gaps, thresholds)
    total = sum(points.values())
    return ContrastResult(
        total=total, points=points, gaps=gaps, passed=total >= thresholds.pass_score, pass_score=thresholds.pass_score
    )
