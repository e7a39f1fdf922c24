"""Which source feeds a cascade's emotion cues, and the name it is recorded under in speech.slm_choices.

`make_cue_source` reads the model folder's config.json (no model is loaded yet) and picks:
- a regression head (`problem_type: "regression"`, outputs arousal / dominance / valence; the paper's kind of
  model): values by resources/audio/emotion_regression.py, rendered by `cues_from_dimensions`;
  recorded as 'regression:<folder name>';
- any other transformers audio-classification model: label scores by resources/audio/emotion_model.py, rendered by
  `cues_from_labels`; recorded as 'classifier:<folder name>';
- no model: the clip's acoustic measurements (resources/audio/voice_measures.py), rendered by `emo_num` / `emo_des`;
  recorded as 'acoustic'.
A folder that cannot be read, or a regression head without exactly those three labels, fails here, before
any clip is scored. What the cues are rendered from (measures, label scores, values) comes through the clip
analysis store (resources/audio/clip_analysis.py), computed once per clip for every target and rerun; only the rendering,
which depends on the target's cue kind and the speaker's gender, is done per call. See docs/speecheq-cascade.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from eyt_dagster.speech_eq.cues import (
    CUE_KINDS,
    VAD_DIMENSIONS,
    CueKind,
    cues_from_dimensions,
    cues_from_labels,
    emo_des,
    emo_num,
)
from resources.audio.clip_analysis import ClipAnalyses
from resources.audio.emotion_model import AudioEmotionClassifier, EmotionModelError, read_model_config
from resources.audio.emotion_regression import DimensionalEmotionModel, dimension_indices, is_dimensional
from resources.audio.voice_measures import VOICE_MEASURES

ACOUSTIC = "acoustic"

EmotionModel = AudioEmotionClassifier | DimensionalEmotionModel


@dataclass
class CueSource:
    """A cascade's cue line for a clip: `source(path, gender)`; `origin` is the recorded cue source. The clip's
    analysis is read through `analyses`."""

    kind: CueKind
    analyses: ClipAnalyses
    model: EmotionModel | None = None
    origin: str = field(init=False)

    def __post_init__(self) -> None:
        if self.kind not in CUE_KINDS:
            raise ValueError(f"cue kind must be one of {CUE_KINDS}, got {self.kind!r}")
        self.origin = self.model.name if self.model else ACOUSTIC

    def __call__(self, path: str | Path, gender: str | None = None) -> str:
        if self.model is not None:
            outputs: dict[str, float] = self.analyses.get(self.model.analysis, path)
            if isinstance(self.model, DimensionalEmotionModel):
                return cues_from_dimensions(outputs, self.kind)
            return cues_from_labels(outputs, self.kind)
        measures = self.analyses.get(VOICE_MEASURES, path)
        return emo_num(measures) if self.kind == "emo_num" else emo_des(measures, gender)


def make_cue_source(emotion_model_path: str | None, kind: CueKind, analyses: ClipAnalyses) -> CueSource:
    """Cues from the model at `emotion_model_path` (regression or classifier, as its config.json says), or
    from acoustic measurements when it is None; each clip's analysis read through `analyses`."""
    if kind not in CUE_KINDS:
        raise ValueError(f"cue kind must be one of {CUE_KINDS}, got {kind!r}")
    if not emotion_model_path:
        return CueSource(kind, analyses)
    config = read_model_config(emotion_model_path)
    labels = config.get("id2label") or {}
    if is_dimensional(config):
        dimension_indices(labels, emotion_model_path)
        return CueSource(kind, analyses, DimensionalEmotionModel(emotion_model_path))
    if isinstance(labels, dict) and sorted(str(v).strip().lower() for v in labels.values()) == sorted(VAD_DIMENSIONS):
        raise EmotionModelError(
            f"emotion model {emotion_model_path}: config.json id2label names the dimensions {sorted(VAD_DIMENSIONS)} "
            f'but problem_type is {config.get("problem_type")!r}; set problem_type to "regression" if the head '
            "predicts dimensional values (label probabilities over dimensions would be meaningless)"
        )
    return CueSource(kind, analyses, AudioEmotionClassifier(emotion_model_path))
