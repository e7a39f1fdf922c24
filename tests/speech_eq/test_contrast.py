"""Contrast filter: features of synthetic clips and the composite score against hand-computed values.

Clips are 1 s at 16 kHz, written as WAV and analysed at 22,050 Hz. The first clip pays librosa's numba
start-up (a few seconds; ~20 s on a fresh install), the others ~0.02 s each.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pydantic import ValidationError

from eyt_dagster.speech_eq.contrast import FEATURES, AcousticFeatures, ContrastThresholds, contrast_score, feature_gaps
from resources.audio.audio_features import ANALYSIS_SR, AudioFeatureError, clip_features

pytestmark = pytest.mark.unit

SR = 16000
LEVEL_TO_C0 = math.sqrt(128)  # c0 of librosa's ortho DCT over 128 mel bands moves by sqrt(128) per dB


def harmonic_tone(f0: float, seconds: float = 1.0, amp: float = 0.3) -> np.ndarray:
    """Five harmonics with 1/k amplitudes, peak-normalised to `amp`."""
    t = np.arange(int(seconds * SR)) / SR
    y = sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 6))
    return (amp * y / np.abs(y).max()).astype(np.float32)


def sine(f0: float, amp: float = 0.3) -> np.ndarray:
    return (amp * np.sin(2 * np.pi * f0 * np.arange(SR) / SR)).astype(np.float32)


def white_noise(rms: float) -> np.ndarray:
    y = np.random.default_rng(7).standard_normal(SR)
    return (y * rms / y.std()).astype(np.float32)


CLIPS = {
    "t120": harmonic_tone(120),
    "t240": harmonic_tone(240),
    "t120_long": harmonic_tone(120, seconds=1.3),
    "t120_x3": 3 * harmonic_tone(120),
    "t120_x1_1": 1.1 * harmonic_tone(120),
    "sine200": sine(200),
    "noise": white_noise(0.3 / math.sqrt(2)),  # the RMS of sine200
}


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("clips")
    for name, samples in CLIPS.items():
        sf.write(directory / f"{name}.wav", samples, SR)
    return directory


@pytest.fixture(scope="module")
def feats(clip_dir: Path) -> dict[str, AcousticFeatures]:
    return {name: clip_features(clip_dir / f"{name}.wav") for name in CLIPS}


def make(**overrides: object) -> AcousticFeatures:
    """Features written by hand, for threshold edges."""
    base: dict[str, object] = {
        "mean_pitch_hz": 100.0,
        "zcr": 0.1,
        "spectral_centroid_hz": 1000.0,
        "rms": 0.1,
        "rms_db": -20.0,
        "mfcc_mean": [0.0] * 13,
        "duration_s": 1.0,
        "sample_rate": 22050,
        "voiced_ratio": 1.0,
    }
    return AcousticFeatures.model_validate({**base, **overrides})


def test_features_of_a_tone(feats: dict[str, AcousticFeatures]) -> None:
    f = feats["t120"]
    assert f.mean_pitch_hz == pytest.approx(120, rel=0.01)
    assert f.voiced_ratio == 1.0
    assert f.duration_s == pytest.approx(1.0, abs=0.01)
    assert f.sample_rate == ANALYSIS_SR and len(f.mfcc_mean) == 13
    assert f.rms_db == pytest.approx(20 * math.log10(f.rms))
    assert feats["t240"].mean_pitch_hz == pytest.approx(240, rel=0.01)


def test_octave_pair(feats: dict[str, AcousticFeatures]) -> None:
    """An octave is 12 semitones (2 points); the doubled spectrum doubles ZCR and centroid (gaps ~0.5)."""
    result = contrast_score(feats["t120"], feats["t240"])
    assert result.gaps["pitch"] == pytest.approx(12.0, abs=0.1)
    assert result.gaps["rate"] == pytest.approx(0.5, abs=0.02)
    assert result.gaps["centroid"] == pytest.approx(0.5, abs=0.03)
    assert result.gaps["rms"] == pytest.approx(0.0, abs=0.1)
    assert result.gaps["duration"] == pytest.approx(0.0, abs=0.01)
    assert result.points == {"pitch": 2, "rate": 2, "centroid": 1, "rms": 0, "mfcc": 1, "duration": 0}
    assert result.total == 6 and result.passed


def test_duration_only(feats: dict[str, AcousticFeatures]) -> None:
    result = contrast_score(feats["t120"], feats["t120_long"])
    assert result.gaps["duration"] == pytest.approx(0.3 / 1.3, abs=0.01)
    assert result.points == {"pitch": 0, "rate": 0, "centroid": 0, "rms": 0, "mfcc": 0, "duration": 1}
    assert result.total == 1 and not result.passed


def test_three_times_louder(feats: dict[str, AcousticFeatures]) -> None:
    """x3 is 9.54 dB; a uniform level shift moves only c0, by 9.54 * sqrt(128) = 108."""
    result = contrast_score(feats["t120"], feats["t120_x3"])
    level_db = 20 * math.log10(3)
    assert result.gaps["rms"] == pytest.approx(level_db, abs=0.05)
    assert result.gaps["mfcc"] == pytest.approx(level_db * LEVEL_TO_C0, rel=0.01)
    assert result.points == {"pitch": 0, "rate": 0, "centroid": 0, "rms": 1, "mfcc": 1, "duration": 0}
    assert result.total == 2


def test_noise_against_a_tone(feats: dict[str, AcousticFeatures]) -> None:
    """Same RMS; noise has no voiced frame (no pitch point), ~20x the ZCR and a ~4 kHz centroid."""
    noise = feats["noise"]
    assert noise.mean_pitch_hz is None and noise.voiced_ratio == 0.0
    result = contrast_score(feats["sine200"], noise)
    assert result.gaps["pitch"] is None
    assert result.gaps["rate"] == pytest.approx(0.95, abs=0.03)  # 0.0175 against 0.36
    assert result.gaps["centroid"] == pytest.approx(0.95, abs=0.03)  # ~210 Hz against ~3.8 kHz
    assert result.gaps["rms"] == pytest.approx(0.0, abs=1.0)
    assert result.points == {"pitch": 0, "rate": 2, "centroid": 1, "rms": 0, "mfcc": 1, "duration": 0}
    assert result.total == 4 and result.passed  # exactly the default pass score


def test_identical_clips_score_nothing(feats: dict[str, AcousticFeatures], clip_dir: Path) -> None:
    again = clip_features(clip_dir / "t120.wav")
    result = contrast_score(feats["t120"], again)
    assert result.total == 0 and not result.passed
    assert all(gap == 0 for gap in result.gaps.values())
    assert set(result.points) == set(FEATURES)


def test_order_does_not_matter(feats: dict[str, AcousticFeatures]) -> None:
    assert contrast_score(feats["t120"], feats["t240"]) == contrast_score(feats["t240"], feats["t120"])


def test_mfcc_default(feats: dict[str, AcousticFeatures]) -> None:
    """20 sits between near-identical deliveries and different ones; alone, a 1.1x level change is below."""
    assert ContrastThresholds().mfcc_l2 == 20.0
    result = contrast_score(feats["t120"], feats["t120_x1_1"])
    assert result.gaps["mfcc"] == pytest.approx(20 * math.log10(1.1) * LEVEL_TO_C0, rel=0.02)  # 9.4
    assert result.points["mfcc"] == 0 and result.total == 0


@pytest.mark.parametrize(
    ("feature", "below", "at", "points_at"),
    [
        ("pitch", {"mean_pitch_hz": 100 * 2 ** (1.99 / 12)}, {"mean_pitch_hz": 100 * 2 ** (2 / 12)}, 1),
        ("pitch", {"mean_pitch_hz": 100 * 2 ** (-3.99 / 12)}, {"mean_pitch_hz": 100 * 2 ** (-4 / 12)}, 2),
        ("rate", {"zcr": 0.0901}, {"zcr": 0.09}, 1),
        ("rate", {"zcr": 0.0801}, {"zcr": 0.08}, 2),
        ("centroid", {"spectral_centroid_hz": 901.0}, {"spectral_centroid_hz": 900.0}, 1),
        ("rms", {"rms_db": -22.99}, {"rms_db": -23.0}, 1),
        ("mfcc", {"mfcc_mean": [19.99] + [0.0] * 12}, {"mfcc_mean": [12.0, 16.0] + [0.0] * 11}, 1),
        ("duration", {"duration_s": 0.851}, {"duration_s": 0.85}, 1),
    ],
)
def test_threshold_edges(feature: str, below: dict, at: dict, points_at: int) -> None:
    base = make()
    low, edge = contrast_score(base, make(**below)), contrast_score(base, make(**at))
    assert low.points[feature] == points_at - 1 and low.total == points_at - 1
    assert edge.points[feature] == points_at and edge.total == points_at


def test_gap_definitions() -> None:
    gaps = feature_gaps(make(mean_pitch_hz=110.0, zcr=0.05, rms_db=-10.0), make(mean_pitch_hz=220.0, zcr=0.2))
    assert gaps["pitch"] == pytest.approx(12.0)
    assert gaps["rate"] == pytest.approx(0.15 / 0.2)  # denominator: the larger value
    assert gaps["rms"] == pytest.approx(10.0)
    assert feature_gaps(make(mean_pitch_hz=None), make())["pitch"] is None


def test_thresholds_are_settings(feats: dict[str, AcousticFeatures]) -> None:
    defaults = ContrastThresholds()
    assert (
        defaults.pitch_semitones_1,
        defaults.pitch_semitones_2,
        defaults.zcr_relative_1,
        defaults.zcr_relative_2,
        defaults.centroid_relative,
        defaults.rms_db,
        defaults.duration_relative,
        defaults.pass_score,
        defaults.max_regenerations,
    ) == (2, 4, 0.1, 0.2, 0.1, 3, 0.15, 4, 3)
    strict = ContrastThresholds(pass_score=7)
    assert not contrast_score(feats["t120"], feats["t240"], strict).passed
    with pytest.raises(ValidationError, match="pitch_semitones_2"):
        ContrastThresholds(pitch_semitones_1=5, pitch_semitones_2=4)
    with pytest.raises(ValidationError):
        ContrastThresholds.model_validate({"unknown": 1})


def test_array_and_stereo_inputs(feats: dict[str, AcousticFeatures], tmp_path: Path) -> None:
    from_array = clip_features(CLIPS["t120"], sr=SR)
    assert from_array.mean_pitch_hz == pytest.approx(feats["t120"].mean_pitch_hz, rel=1e-3)
    assert from_array.rms_db == pytest.approx(feats["t120"].rms_db, abs=0.01)
    stereo = tmp_path / "stereo.wav"
    sf.write(stereo, np.stack([CLIPS["t120"], CLIPS["t120"]], axis=1), SR)
    assert clip_features(stereo).mfcc_mean == pytest.approx(feats["t120"].mfcc_mean, abs=1e-3)


def test_pyin_agrees_with_yin(clip_dir: Path, feats: dict[str, AcousticFeatures]) -> None:
    pyin = clip_features(clip_dir / "t120.wav", pitch_method="pyin")
    assert pyin.mean_pitch_hz == pytest.approx(feats["t120"].mean_pitch_hz, rel=0.01)


def test_unusable_clips_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.wav"
    with pytest.raises(AudioFeatureError, match="missing.wav: no such audio file"):
        clip_features(missing)
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(SR, dtype=np.float32), SR)
    with pytest.raises(AudioFeatureError, match="silent.wav: audio is silent"):
        clip_features(silent)
    empty = tmp_path / "empty.wav"
    sf.write(empty, np.zeros(0, dtype=np.float32), SR)
    with pytest.raises(AudioFeatureError, match="empty.wav: no audio samples"):
        clip_features(empty)
    garbage = tmp_path / "garbage.wav"
    garbage.write_text("not audio")
    with pytest.raises(AudioFeatureError, match="garbage.wav: cannot read audio"):
        clip_features(garbage)
    with pytest.raises(AudioFeatureError, match="sample rate"):
        clip_features(CLIPS["t120"])
    with pytest.raises(AudioFeatureError, match="arrays only"):
        clip_features(silent, sr=SR)
