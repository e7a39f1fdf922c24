"""Emotion cues for cascaded SpeechEQ systems: a speech-emotion classifier when configured, else acoustics.

`AudioEmotionClassifier` wraps a transformers `audio-classification` pipeline over a model folder on disk
(transformers and torch arrive with sentence-transformers; both are imported on first use). A clip is read
with librosa at the feature extractor's sampling rate, mono, and scored over all of the model's labels
(softmax for single-label heads, sigmoid for multi-label ones). Regression heads (dimensional
valence/arousal/dominance models) are refused: their outputs are not label probabilities, and a checkpoint
with a custom head would load here with a randomly initialised one. Scores are cached per file.

`make_cue_source` picks the source for a cascade's `cues` setting: the classifier's labels rendered by
`cues_from_labels`, or the clip's `voice_measures` rendered by `emo_num` / `emo_des`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eyt_dagster.speech.cues import CUE_KINDS, CueKind, cues_from_labels, emo_des, emo_num
from resources.audio_features import file_version
from resources.voice_measures import voice_measures


class EmotionModelError(RuntimeError):
    """The emotion model cannot load or score a clip; the message names the model folder or clip."""


class AudioEmotionClassifier:
    """Label -> score of a transformers audio-classification model for a clip (loaded once, cached per file)."""

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self.name = f"audio-classifier:{Path(model_path).name or model_path}"
        self._pipeline: Any = None
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, int, int], dict[str, float]] = {}

    def load(self) -> Any:
        """The pipeline, built on the first call; EmotionModelError when the folder or transformers is missing."""
        with self._lock:
            if self._pipeline is None:
                folder = Path(self.model_path).expanduser()
                if not folder.is_dir():
                    raise EmotionModelError(f"emotion model {self.model_path}: no such model folder; "
                                            "emotion_model_path must be a transformers audio-classification "
                                            "directory (config.json, weights, preprocessor_config.json)")
                try:
                    from transformers import pipeline
                except ImportError as exc:
                    raise EmotionModelError(f"emotion model {self.model_path}: transformers is not importable "
                                            f"({exc}); pip install transformers torch") from None
                try:
                    pipe = pipeline("audio-classification", model=str(folder), device="cpu")
                except Exception as exc:  # noqa: BLE001 - transformers raises many kinds for a bad folder
                    raise EmotionModelError(f"emotion model {self.model_path}: cannot load as audio-classification "
                                            f"({type(exc).__name__}: {exc})") from exc
                if getattr(pipe.model.config, "problem_type", None) == "regression":
                    raise EmotionModelError(f"emotion model {self.model_path}: a regression head (dimensional "
                                            "scores) is not supported; use a classifier with emotion labels")
                self._pipeline = pipe
            return self._pipeline

    @property
    def sampling_rate(self) -> int:
        return int(self.load().feature_extractor.sampling_rate)

    def scores(self, path: str | Path) -> dict[str, float]:
        """Every label of the model with its score for the clip."""
        import librosa

        p = Path(path)
        if not p.is_file():
            raise EmotionModelError(f"{p}: no such audio file")
        key = file_version(p)
        if key in self._cache:
            return dict(self._cache[key])
        pipe, rate = self.load(), self.sampling_rate
        try:
            y, _ = librosa.load(str(p), sr=rate, mono=True)
        except Exception as exc:  # noqa: BLE001 - soundfile and audioread raise unrelated types
            raise EmotionModelError(f"{p}: cannot read audio ({type(exc).__name__}: {exc})") from exc
        if y.size == 0:
            raise EmotionModelError(f"{p}: no audio samples")
        with self._lock:
            ranked = pipe({"raw": y, "sampling_rate": rate}, top_k=None)
        result = {item["label"]: float(item["score"]) for item in ranked}
        self._cache[key] = result
        return dict(result)

    __call__ = scores


@dataclass
class CueSource:
    """A cascade's cue line for a clip: `source(path, gender)`; `origin` names the classifier or 'acoustic'."""

    kind: CueKind
    classifier: AudioEmotionClassifier | None = None
    origin: str = field(init=False)

    def __post_init__(self) -> None:
        if self.kind not in CUE_KINDS:
            raise ValueError(f"cue kind must be one of {CUE_KINDS}, got {self.kind!r}")
        self.origin = self.classifier.name if self.classifier else "acoustic"

    def __call__(self, path: str | Path, gender: str | None = None) -> str:
        if self.classifier is not None:
            return cues_from_labels(self.classifier.scores(path), self.kind)
        measures = voice_measures(path)
        return emo_num(measures) if self.kind == "emo_num" else emo_des(measures, gender)


def make_cue_source(emotion_model_path: str | None, kind: CueKind) -> CueSource:
    """Cues from the classifier at `emotion_model_path`, or from acoustic measurements when it is None."""
    return CueSource(kind, AudioEmotionClassifier(emotion_model_path) if emotion_model_path else None)
