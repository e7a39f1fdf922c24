"""What fills the project's numba cache folder (resources/audio/numba_cache.py says why it exists): run in the filling
subprocess, with NUMBA_CACHE_DIR pointing at the folder being filled. A module of its own, so that the cache's
bookkeeping imports none of the audio code that calls it."""

from __future__ import annotations

from pathlib import Path


def warm() -> None:
    """Run in the filling subprocess: import every librosa module that compiles at import, then call each librosa
    path the project takes (features with yin and with pyin, voice measures, decoding at another sample rate) on
    float32 and float64 signals, so every kernel the project calls is compiled into NUMBA_CACHE_DIR."""
    import importlib
    import pkgutil
    import tempfile

    import librosa
    import numpy as np
    import soundfile as sf

    for info in pkgutil.walk_packages(librosa.__path__, prefix="librosa."):
        if ".tests" not in info.name:
            importlib.import_module(info.name)

    from resources.audio.audio_features import ANALYSIS_SR, clip_features
    from resources.audio.voice_measures import syllable_rate

    rng = np.random.default_rng(0)
    t = np.arange(int(1.5 * ANALYSIS_SR)) / ANALYSIS_SR
    tone = (0.3 * np.sin(2 * np.pi * 180.0 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)
    tone += (0.01 * rng.standard_normal(tone.size)).astype(np.float32)
    for signal in (tone, tone.astype(np.float64)):
        clip_features(signal, sr=ANALYSIS_SR)
        clip_features(signal, sr=ANALYSIS_SR, pitch_method="pyin")
        clip_features(signal, sr=16000)
        syllable_rate(signal.astype(np.float32))
        librosa.yin(signal, fmin=60, fmax=400, sr=ANALYSIS_SR)
    with tempfile.TemporaryDirectory() as folder:  # decoding a file at another rate (resources/audio/emotion_model.py)
        path = Path(folder) / "warm.wav"
        sf.write(str(path), tone, ANALYSIS_SR)
        clip_features(path)
        librosa.load(str(path), sr=16000, mono=True)
