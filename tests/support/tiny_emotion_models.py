"""Very small, randomly initialised wav2vec2 speech-emotion models saved to a folder (no download): regression
heads in the two layouts resources/audio/emotion_regression.py loads, for tests of the dimensional cue path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

VAD_LABELS = {0: "arousal", 1: "dominance", 2: "valence"}  # the order the paper's checkpoint declares


def tiny_config(labels: dict[int, str], problem_type: str | None = "regression") -> Any:
    from transformers import Wav2Vec2Config

    return Wav2Vec2Config(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(8,) * 7,
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        classifier_proj_size=8,
        id2label=dict(labels),
        label2id={v: k for k, v in labels.items()},
        problem_type=problem_type,
    )


def save_feature_extractor(folder: Path) -> None:
    from transformers import Wav2Vec2FeatureExtractor

    Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=16000, padding_value=0.0, do_normalize=True, return_attention_mask=True
    ).save_pretrained(folder)


def save_tiny_regression(
    folder: Path,
    labels: dict[int, str] = VAD_LABELS,
    *,
    layout: str = "sequence",
    weights_from: Path | None = None,
    seed: int = 0,
    problem_type: str | None = "regression",
) -> Path:
    """A tiny regression model in `folder`: layout 'sequence' is transformers' Wav2Vec2ForSequenceClassification,
    'speech' the paper checkpoint's Wav2Vec2ForSpeechClassification. `weights_from` copies the weights of
    another folder of the same layout, so only the labels differ."""
    import torch
    from transformers import Wav2Vec2ForSequenceClassification

    from resources.audio.emotion_regression import speech_classification_class

    model_class = speech_classification_class() if layout == "speech" else Wav2Vec2ForSequenceClassification
    torch.manual_seed(seed)
    model = model_class(tiny_config(labels, problem_type))
    if weights_from is not None:
        model.load_state_dict(model_class.from_pretrained(str(weights_from)).state_dict())
    model.save_pretrained(folder)
    save_feature_extractor(folder)
    return folder
