"""Dimensional speech-emotion values (arousal, dominance, valence) from a wav2vec2 regression model on disk.

The SpeechEQ paper's cascades (§3) read valence, arousal and dominance from a wav2vec2 speech-emotion model
with a regression head. `DimensionalEmotionModel` runs such a model folder: config.json with
`problem_type: "regression"` and an `id2label` naming the three dimensions, the weights, and
preprocessor_config.json (the feature extractor). A clip is read with librosa at the extractor's sampling
rate, mono, normalised by the extractor, and passed through the model once; the three outputs are returned
by dimension name. Cascades read them through the clip analysis store (`DimensionalEmotionModel.analysis`,
resources/audio/clip_analysis.py): each clip once for every target and rerun.

Two head layouts load:
- transformers' own `Wav2Vec2ForSequenceClassification` (linear projector, mean pooling over time, linear
  output), through `AutoModelForAudioClassification`;
- the layout the paper's published checkpoint declares as `Wav2Vec2ForSpeechClassification` (mean pooling
  over time, then `classifier.dense`, tanh, `classifier.out_proj`). transformers has no class for it and would
  load it as the first layout with a random head, so `speech_classification_class` builds it here.
A checkpoint that lacks any weight the chosen class needs is refused: a random initialisation would give
numbers that look like cues but say nothing. Outputs are matched to dimensions by the label names in
id2label, never by their position. See docs/speecheq-cascade.md.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from eyt_dagster.speech_eq.cues import VAD_DIMENSIONS
from resources.audio.clip_analysis import ClipAnalysis
from resources.audio.emotion_model import EmotionModelError, clip_path, emotion_analysis, read_clip, read_model_config

SPEECH_CLASSIFICATION_ARCHITECTURE = "Wav2Vec2ForSpeechClassification"
REGRESSION = "regression"


def dimension_indices(id2label: Mapping[Any, Any], model_path: str) -> dict[str, int]:
    """Dimension name -> output index, read from a config's id2label (keys may be strings or ints; names are
    matched without regard to case or surrounding spaces). EmotionModelError naming the folder and the
    labels unless they are exactly arousal, dominance and valence, once each."""
    try:
        names = {int(index): str(label).strip().lower() for index, label in id2label.items()}
    except (TypeError, ValueError):
        names = {}
    if sorted(names.values()) != sorted(VAD_DIMENSIONS) or sorted(names) != list(range(len(VAD_DIMENSIONS))):
        shown = {str(k): v for k, v in id2label.items()} if isinstance(id2label, Mapping) else id2label
        raise EmotionModelError(
            f"emotion model {model_path}: a regression head must name its outputs arousal, dominance and valence "
            f"(each once, indices 0-2) in config.json id2label; it has {shown or 'none'}. Use a dimensional "
            "speech-emotion model, or a classifier (problem_type single_label_classification) for label cues"
        )
    return {name: index for index, name in names.items()}


def is_dimensional(config: Mapping[str, Any]) -> bool:
    """Whether a model folder's config.json declares a regression head (read by resources/audio/cue_source.py)."""
    return config.get("problem_type") == REGRESSION


@lru_cache(maxsize=1)
def speech_classification_class() -> Any:  # a transformers model class, defined at run time
    """The model class of the `Wav2Vec2ForSpeechClassification` layout: wav2vec2, the mean of the last hidden
    states over time, then a dense layer, tanh and a linear output (weights `classifier.dense.*` and
    `classifier.out_proj.*`). Built on first use so torch is imported only when a model is loaded."""
    from torch import nn
    from transformers.modeling_outputs import SequenceClassifierOutput
    from transformers.models.wav2vec2.modeling_wav2vec2 import Wav2Vec2Model, Wav2Vec2PreTrainedModel

    class DenseTanhHead(nn.Module):
        def __init__(self, config: Any) -> None:
            super().__init__()
            self.dense = nn.Linear(config.hidden_size, config.hidden_size)
            self.out_proj = nn.Linear(config.hidden_size, config.num_labels)

        def forward(self, pooled: Any) -> Any:
            return self.out_proj(self.dense(pooled).tanh())

    # transformers types neither PreTrainedModel.__init_subclass__ nor post_init
    class Wav2Vec2ForSpeechClassification(Wav2Vec2PreTrainedModel):  # type: ignore[no-untyped-call]
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.wav2vec2 = Wav2Vec2Model(config)
            self.classifier = DenseTanhHead(config)
            self.post_init()  # type: ignore[no-untyped-call]

        def forward(self, input_values: Any, attention_mask: Any = None) -> SequenceClassifierOutput:
            hidden = self.wav2vec2(input_values, attention_mask=attention_mask).last_hidden_state
            return SequenceClassifierOutput(logits=self.classifier(hidden.mean(dim=1)))

    return Wav2Vec2ForSpeechClassification


class DimensionalEmotionModel:
    """Dimension -> value of a wav2vec2 regression model for a clip (loaded once, on first use)."""

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self.name = f"regression:{Path(model_path).expanduser().name or model_path}"
        self._loaded: tuple[Any, Any, dict[str, int]] | None = None
        self._lock = threading.Lock()

    def load(self) -> tuple[Any, Any, dict[str, int]]:
        """(model, feature extractor, dimension -> output index), loaded on the first call."""
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> tuple[Any, Any, dict[str, int]]:
        where = f"emotion model {self.model_path}"
        config = read_model_config(self.model_path)
        if not is_dimensional(config):
            raise EmotionModelError(
                f"{where}: config.json has problem_type {config.get('problem_type')!r}, not "
                f"{REGRESSION!r}; a classifier's labels are read by AudioEmotionClassifier"
            )
        dimension_indices(config.get("id2label") or {}, self.model_path)
        try:
            from transformers import AutoFeatureExtractor, AutoModelForAudioClassification
        except ImportError as exc:
            raise EmotionModelError(
                f"{where}: transformers is not importable ({exc}); pip install transformers torch"
            ) from None
        custom = SPEECH_CLASSIFICATION_ARCHITECTURE in (config.get("architectures") or [])
        model_class = speech_classification_class() if custom else AutoModelForAudioClassification
        folder = str(Path(self.model_path).expanduser())
        try:
            model, info = model_class.from_pretrained(folder, output_loading_info=True)
            extractor = AutoFeatureExtractor.from_pretrained(folder)
        except Exception as exc:
            raise EmotionModelError(
                f"{where}: cannot load as a wav2vec2 regression model ({type(exc).__name__}: {exc})"
            ) from exc
        missing = sorted(info.get("missing_keys") or [])
        if missing:
            raise EmotionModelError(
                f"{where}: the checkpoint lacks weights {missing[:8]} of {type(model).__name__}, which would be "
                f"random. Supported heads: transformers' Wav2Vec2ForSequenceClassification, or "
                f"{SPEECH_CLASSIFICATION_ARCHITECTURE} (classifier.dense, classifier.out_proj) named in "
                "config.json architectures"
            )
        model.eval()
        # the loaded config is the one the outputs follow; its labels were checked above in config.json form
        return model, extractor, dimension_indices(model.config.id2label, self.model_path)

    @property
    def sampling_rate(self) -> int:
        return int(self.load()[1].sampling_rate)

    def values(self, path: str | Path) -> dict[str, float]:
        """The clip's arousal, dominance and valence on the model's own scale (about 0-1 for the paper's model)."""
        import torch

        p = clip_path(path)
        (model, extractor, indices), rate = self.load(), self.sampling_rate
        inputs = extractor(read_clip(p, rate), sampling_rate=rate, return_tensors="pt")
        with self._lock, torch.inference_mode():
            logits = model(**inputs).logits
        if tuple(logits.shape) != (1, len(indices)):
            raise EmotionModelError(
                f"emotion model {self.model_path}: expected {len(indices)} outputs per clip, "
                f"got shape {tuple(logits.shape)}"
            )
        row = logits[0].tolist()
        return {dimension: float(row[index]) for dimension, index in indices.items()}

    __call__ = values

    @cached_property
    def analysis(self) -> ClipAnalysis[dict[str, float]]:
        """The dimensional values as a stored clip analysis (resources/audio/clip_analysis.py)."""
        return emotion_analysis("emotion_dimensions", self.model_path, self.values)
