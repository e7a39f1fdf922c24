"""Acoustic measurements behind the acoustic emotion cues of cascaded SpeechEQ systems (eyt_dagster/speech_eq/cues.py).

Loading, trimming and the voiced-frame pitch track are those of resources/audio/audio_features.py (librosa.yin
with its loudness, periodicity and octave gates), so the cues and the contrast filter see the same pitch.
- pitch: median voiced F0; variability: standard deviation of voiced F0 around that median, in semitones.
- energy: 20 log10 of the mean frame RMS (dBFS), as `AcousticFeatures.rms_db`.
- rate: syllable nuclei per second of the trimmed clip. A nucleus is a peak of the 300-3000 Hz band energy
  (10 ms hop, smoothed over 70 ms) at least 3 dB above its surrounding dips, within 25 dB of the loudest
  frame and 60 ms from the previous one. On espeak-ng clips of three sentences this counts each sentence's
  syllables exactly from 'very slow' to 'very fast' (it undercounts a little at the lexicon's fastest
  setting). librosa's onset detector was tried first and does not keep rates in order: it finds about 1.5
  onsets per syllable in slow speech and fewer than one in fast speech, so a neutral clip came out 'faster'
  than a fast one.
`voice_measures` computes; cascades read the results through the clip analysis store
(`VOICE_MEASURES`, resources/audio/clip_analysis.py), which computes each clip once for every target and rerun.
"""

from __future__ import annotations

from pathlib import Path

import librosa
import numpy as np

from eyt_dagster.speech_eq.cues import VoiceMeasures
from resources.audio.audio_features import (
    ANALYSIS_SR,
    FRAME_LENGTH,
    HOP_LENGTH,
    AudioFeatureError,
    _voiced_f0,
    load_clip,
)
from resources.audio.clip_analysis import ClipAnalysis, package_versions
from resources.audio.numba_cache import prepare as prepare_numba

__all__ = ["VOICE_MEASURES", "AudioFeatureError", "VoiceMeasures", "syllable_rate", "voice_measures"]

NUCLEUS_HOP = ANALYSIS_SR // 100  # 10 ms
NUCLEUS_FFT = 1024
NUCLEUS_BAND_HZ = (300.0, 3000.0)  # where vowel energy sits; drops low hum and fricative hiss
NUCLEUS_SMOOTH_FRAMES = 7
NUCLEUS_PROMINENCE_DB = 3.0
NUCLEUS_FLOOR_DB = 25.0
NUCLEUS_MIN_GAP_S = 0.06
# Bump when a change here or in resources/audio/audio_features.py's loading or pitch track changes a measure: stored
# measures of the old code are then never read again (resources/audio/clip_analysis.py).
ANALYSIS_VERSION = 1


def syllable_rate(y: np.ndarray) -> float:
    """Syllable nuclei per second of mono samples at ANALYSIS_SR (see the module docstring)."""
    from scipy.signal import find_peaks  # imported here: loading the code location stays light

    prepare_numba()

    spectrum = np.abs(librosa.stft(y, n_fft=NUCLEUS_FFT, hop_length=NUCLEUS_HOP)) ** 2
    freqs = librosa.fft_frequencies(sr=ANALYSIS_SR, n_fft=NUCLEUS_FFT)
    energy = spectrum[(freqs >= NUCLEUS_BAND_HZ[0]) & (freqs <= NUCLEUS_BAND_HZ[1])].sum(axis=0)
    db = 10.0 * np.log10(energy + 1e-12)
    window = np.hanning(NUCLEUS_SMOOTH_FRAMES)
    db = np.convolve(db, window / window.sum(), mode="same")
    peaks, _ = find_peaks(
        db,
        prominence=NUCLEUS_PROMINENCE_DB,
        height=db.max() - NUCLEUS_FLOOR_DB,
        distance=max(1, round(NUCLEUS_MIN_GAP_S * ANALYSIS_SR / NUCLEUS_HOP)),
    )
    return len(peaks) / (y.size / ANALYSIS_SR)


def voice_measures(path: str | Path) -> VoiceMeasures:
    """Pitch level and variability, energy, speaking rate and duration of one clip.

    Raises AudioFeatureError naming the file when it is missing, unreadable, silent or too short.
    """
    y, label = load_clip(path)
    frame_rms = librosa.feature.rms(y=y, frame_length=FRAME_LENGTH, hop_length=HOP_LENGTH)[0]
    rms = float(frame_rms.mean())
    if rms <= 0:
        raise AudioFeatureError(f"{label}: audio is silent (zero RMS)")
    f0, voiced = _voiced_f0(y, frame_rms, "yin")
    pitch_hz = pitch_sd = None
    if voiced.any():
        voiced_f0 = f0[voiced]
        pitch_hz = float(np.median(voiced_f0))
        pitch_sd = float(np.std(12.0 * np.log2(voiced_f0 / pitch_hz)))
    return VoiceMeasures(
        pitch_hz=pitch_hz,
        pitch_sd_semitones=pitch_sd,
        energy_db=float(20.0 * np.log10(rms)),
        rate=syllable_rate(y),
        duration_s=y.size / ANALYSIS_SR,
    )


VOICE_MEASURES: ClipAnalysis[VoiceMeasures] = ClipAnalysis(
    name="voice_measures",
    identity={"code_version": ANALYSIS_VERSION, **package_versions("librosa", "numpy", "scipy", "soundfile", "soxr")},
    compute=voice_measures,
    to_json=lambda measures: measures.model_dump(),
    from_json=VoiceMeasures.model_validate,
)
