"""Speech-emotion classifiers for cascaded SpeechEQ systems, and what every emotion model folder must hold.

`AudioEmotionClassifier` wraps a transformers `audio-classification` pipeline over a model folder on disk
(transformers and torch arrive with sentence-transformers; both are imported on first use). A clip is read
with librosa at the feature extractor's sampling rate, mono, and scored over all of the model's labels
(softmax for single-label heads, sigmoid for multi-label ones). Cascades read the scores through the clip
analysis store (`AudioEmotionClassifier.analysis`, resources/audio/clip_analysis.py), keyed by the clip's bytes and
the model folder's identity, so each clip is scored once for every target and rerun. Regression heads
(dimensional arousal / dominance / valence models, the paper's kind) are not label probabilities: they are
run by resources/audio/emotion_regression.py, and resources/audio/cue_source.py picks between the two from config.json.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from resources.audio.audio_features import AudioFeatureError
from resources.audio.clip_analysis import ClipAnalysis, folder_identity, package_versions

# Bump when a change to how a clip is read or scored here (or in resources/audio/emotion_regression.py) changes an
# emotion model's outputs: stored outputs of the old code are then never read again (resources/audio/clip_analysis.py).
ANALYSIS_VERSION = 1
# The libraries between a clip and an emotion model's outputs, part of the stored outputs' key.
LIBRARIES = ("transformers", "torch", "librosa", "soxr", "soundfile", "numpy")

T = TypeVar("T")


class EmotionModelError(RuntimeError):
    """The emotion model cannot load or score a clip; the message names the model folder or clip."""


class EmotionClipError(EmotionModelError, AudioFeatureError):
    """This clip cannot be read for the emotion model (missing, undecodable, empty): that item fails, the others go on."""


FOLDER_HINT = (
    "emotion_model_path must be a transformers audio model directory (config.json, weights, preprocessor_config.json)"
)


def read_model_config(model_path: str) -> dict[str, Any]:
    """The model folder's config.json as a dict; EmotionModelError naming the folder when it cannot be read."""
    folder = Path(model_path).expanduser()
    if not folder.is_dir():
        raise EmotionModelError(f"emotion model {model_path}: no such model folder; {FOLDER_HINT}")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmotionModelError(
            f"emotion model {model_path}: cannot read config.json ({type(exc).__name__}: {exc}); {FOLDER_HINT}"
        ) from None
    if not isinstance(config, dict):
        raise EmotionModelError(f"emotion model {model_path}: config.json is not a JSON object; {FOLDER_HINT}")
    return config


def clip_path(path: str | Path) -> Path:
    """The clip as a Path; EmotionModelError naming it when it is not a file."""
    p = Path(path)
    if not p.is_file():
        raise EmotionClipError(f"{p}: no such audio file")
    return p


def read_clip(path: Path, rate: int) -> Any:
    """The clip's samples, mono float32 at `rate` (librosa); EmotionModelError naming the clip when unreadable."""
    import librosa

    from resources.audio.numba_cache import prepare

    prepare()  # before librosa's first numba kernel: resources/audio/numba_cache.py
    try:
        y, _ = librosa.load(str(path), sr=rate, mono=True)
    except Exception as exc:
        raise EmotionClipError(f"{path}: cannot read audio ({type(exc).__name__}: {exc})") from exc
    if y.size == 0:
        raise EmotionClipError(f"{path}: no audio samples")
    return y


def emotion_analysis(name: str, model_path: str, compute: Callable[[str], T]) -> ClipAnalysis[T]:
    """An emotion model's outputs as a stored clip analysis, keyed by the model folder's files (not its path)."""
    try:
        model = folder_identity(model_path)
    except FileNotFoundError:
        raise EmotionModelError(f"emotion model {model_path}: no such model folder; {FOLDER_HINT}") from None
    return ClipAnalysis(
        name=name,
        identity={"model_folder": model, "code_version": ANALYSIS_VERSION, **package_versions(*LIBRARIES)},
        compute=compute,
    )


class AudioEmotionClassifier:
    """Label -> score of a transformers audio-classification model for a clip (loaded once, on first use)."""

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self.name = f"classifier:{Path(model_path).expanduser().name or model_path}"
        self._pipeline: Any = None
        self._lock = threading.Lock()

    def load(self) -> Any:
        """The pipeline, built on the first call; EmotionModelError when the folder or transformers is missing."""
        with self._lock:
            if self._pipeline is None:
                folder = Path(self.model_path).expanduser()
                if not folder.is_dir():
                    raise EmotionModelError(f"emotion model {self.model_path}: no such model folder; {FOLDER_HINT}")
                try:
                    from transformers import pipeline
                except ImportError as exc:
                    raise EmotionModelError(
                        f"emotion model {self.model_path}: transformers is not importable "
                        f"({exc}); pip install transformers torch"
                    ) from None
                try:
                    pipe = pipeline("audio-classification", model=str(folder), device="cpu")
                except Exception as exc:
                    raise EmotionModelError(
                        f"emotion model {self.model_path}: cannot load as audio-classification "
                        f"({type(exc).__name__}: {exc})"
                    ) from exc
                if getattr(pipe.model.config, "problem_type", None) == "regression":
                    raise EmotionModelError(
                        f"emotion model {self.model_path}: a regression head gives values, "
                        "not label scores; load it with DimensionalEmotionModel "
                        "(resources/audio/emotion_regression.py)"
                    )
                self._pipeline = pipe
            return self._pipeline

    @property
    def sampling_rate(self) -> int:
        return int(self.load().feature_extractor.sampling_rate)

    def scores(self, path: str | Path) -> dict[str, float]:
        """Every label of the model with its score for the clip."""
        p = clip_path(path)
        pipe, rate = self.load(), self.sampling_rate
        y = read_clip(p, rate)
        with self._lock:
            ranked = pipe({"raw": y, "sampling_rate": rate}, top_k=None)
        return {item["label"]: float(item["score"]) for item in ranked}

    __call__ = scores

    @cached_property
    def analysis(self) -> ClipAnalysis[dict[str, float]]:
        """The label scores as a stored clip analysis (resources/audio/clip_analysis.py)."""
        return emotion_analysis("emotion_labels", self.model_path, self.scores)
