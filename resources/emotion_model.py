"""Speech-emotion classifiers for cascaded SpeechEQ systems, and what every emotion model folder must hold.

`AudioEmotionClassifier` wraps a transformers `audio-classification` pipeline over a model folder on disk
(transformers and torch arrive with sentence-transformers; both are imported on first use). A clip is read
with librosa at the feature extractor's sampling rate, mono, and scored over all of the model's labels
(softmax for single-label heads, sigmoid for multi-label ones). Scores are cached per file. Regression heads
(dimensional arousal / dominance / valence models, the paper's kind) are not label probabilities: they are
run by resources/emotion_regression.py, and resources/cue_source.py picks between the two from config.json.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from resources.audio_features import file_version


class EmotionModelError(RuntimeError):
    """The emotion model cannot load or score a clip; the message names the model folder or clip."""


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
        raise EmotionModelError(f"{p}: no such audio file")
    return p


def read_clip(path: Path, rate: int) -> Any:
    """The clip's samples, mono float32 at `rate` (librosa); EmotionModelError naming the clip when unreadable."""
    import librosa

    from resources.numba_cache import prepare

    prepare()  # before librosa's first numba kernel: resources/numba_cache.py
    try:
        y, _ = librosa.load(str(path), sr=rate, mono=True)
    except Exception as exc:
        raise EmotionModelError(f"{path}: cannot read audio ({type(exc).__name__}: {exc})") from exc
    if y.size == 0:
        raise EmotionModelError(f"{path}: no audio samples")
    return y


class AudioEmotionClassifier:
    """Label -> score of a transformers audio-classification model for a clip (loaded once, cached per file)."""

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self.name = f"classifier:{Path(model_path).expanduser().name or model_path}"
        self._pipeline: Any = None
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, int, int], dict[str, float]] = {}

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
                        "(resources/emotion_regression.py)"
                    )
                self._pipeline = pipe
            return self._pipeline

    @property
    def sampling_rate(self) -> int:
        return int(self.load().feature_extractor.sampling_rate)

    def scores(self, path: str | Path) -> dict[str, float]:
        """Every label of the model with its score for the clip."""
        p = clip_path(path)
        key = file_version(p)
        if key in self._cache:
            return dict(self._cache[key])
        pipe, rate = self.load(), self.sampling_rate
        y = read_clip(p, rate)
        with self._lock:
            ranked = pipe({"raw": y, "sampling_rate": rate}, top_k=None)
        result = {item["label"]: float(item["score"]) for item in ranked}
        self._cache[key] = result
        return dict(result)

    __call__ = scores
