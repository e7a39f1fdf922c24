"""Emotion cues for cascaded SpeechEQ systems (paper §3, docs/speecheq-cascade.md): what a text LLM reads of a voice.

A cascade hears nothing: it gets the ASR transcript plus a short cue line per clip, either as numbers
(`emo_num`) or as words (`emo_des`). The paper takes its cues from a speech-emotion model; where none is
configured the project describes the voice from acoustic measurements instead (`VoiceMeasures`, computed
by resources/audio/voice_measures.py). A dimensional regression model's arousal / dominance / valence values (the
paper's kind of model) are rendered by `cues_from_dimensions`, a classifier's label scores by
`cues_from_labels`. This module is pure: it only formats numbers that were measured elsewhere. What each cue
source gives and why the bands sit where they do: docs/speecheq-cascade.md.

Band edges (the `*_EDGES` constants below) are the project's choices, all kept in this one block. A value
exactly on an edge belongs to the band above it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from eyt_dagster.speech_eq.prosody import gender_key

CueKind = Literal["emo_num", "emo_des"]
CUE_KINDS: tuple[CueKind, ...] = ("emo_num", "emo_des")

# --- band edges: the project's choices ------------------------------------------------------------------
# Pitch level is judged against a typical adult speaking pitch for the speaker's gender (F0 medians reported
# for conversational English sit near 100-120 Hz for men and 190-220 Hz for women; the neutral reference is
# roughly their geometric mean), in semitones away from it. With these references the espeak-ng voices of
# this project land in 'medium' at neutral settings and in 'low' / 'high' under the lexicon's pitch words.
REFERENCE_PITCH_HZ: dict[str, float] = {"female": 205.0, "male": 110.0, "neutral": 150.0}
PITCH_EDGES_ST: tuple[float, ...] = (-6.0, -2.0, 2.0, 6.0)
PITCH_WORDS: tuple[str, ...] = ("very low", "low", "medium", "high", "very high")
# Pitch variability: standard deviation of voiced F0 around its median, in semitones. Read speech mostly
# spans 1.5-4 semitones; espeak's 'flat monotone' measures about 0.1.
VARIABILITY_EDGES_ST: tuple[float, ...] = (1.0, 3.0)
VARIABILITY_WORDS: tuple[str, ...] = ("flat", "moderately varied", "lively")
# Energy: mean frame RMS in dB relative to full scale. Absolute levels depend on the recording gain; these
# edges fit normalised TTS output (espeak-ng: whispered about -32, neutral -22, shouting -16 dBFS).
ENERGY_EDGES_DB: tuple[float, ...] = (-36.0, -26.0, -19.0, -13.0)
ENERGY_WORDS: tuple[str, ...] = ("very quiet", "quiet", "moderate volume", "loud", "very loud")
# Speaking rate in syllables per second over the trimmed clip (pauses included). Conversational English
# runs at roughly 4-6; espeak-ng at its default 175 words/min measures about 5.7.
RATE_EDGES_SPS: tuple[float, ...] = (3.0, 4.5, 6.0, 7.5)
RATE_WORDS: tuple[str, ...] = ("very slow", "slow", "medium pace", "fast", "very fast")
# Classifier labels: a runner-up is named beside the top label when it scores at least this share of the top
# score; the top label is called 'possibly' when its own score is below the confidence edge.
RUNNER_UP_SHARE = 0.5
CONFIDENT_SCORE = 0.4
NUMERIC_TOP_LABELS = 3
# Dimensional values of a speech-emotion regression model, on the model's own scale. The paper's model
# (wav2vec2 fine-tuned on MSP-Podcast) reports each dimension on roughly 0 (low) to 1 (high); the middle band
# is 0.5 +- 0.1. Values are shown and banded after rounding to VAD_DECIMALS places, so the number and the
# word never disagree. One pair of edges serves all three dimensions (docs/speecheq-cascade.md).
VAD_DIMENSIONS: tuple[str, ...] = ("valence", "arousal", "dominance")  # rendering order: V, A, D as the paper
VAD_SCALE = "each 0-1, low to high"
VAD_DECIMALS = 2
VAD_EDGES: tuple[float, ...] = (0.4, 0.6)
VAD_WORDS: dict[str, tuple[str, ...]] = {
    "valence": ("negative valence", "neutral valence", "positive valence"),
    "arousal": ("low arousal", "moderate arousal", "high arousal"),
    "dominance": ("submissive", "neither submissive nor dominant", "dominant"),
}
# -------------------------------------------------------------------------------------------------------

# Short emotion codes used by common speech-emotion checkpoints (IEMOCAP, RAVDESS, CREMA-D style) -> words.
LABEL_WORDS: dict[str, str] = {
    "ang": "angry",
    "hap": "happy",
    "neu": "neutral",
    "sad": "sad",
    "fru": "frustrated",
    "exc": "excited",
    "sur": "surprised",
    "fea": "fearful",
    "dis": "disgusted",
    "cal": "calm",
    "con": "contemptuous",
}


class VoiceMeasures(BaseModel):
    """Acoustic measurements of one clip, the input of the acoustic emo_num / emo_des cues."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pitch_hz: float | None = Field(gt=0, description="Median F0 over voiced frames; None when none is voiced.")
    pitch_sd_semitones: float | None = Field(
        ge=0, description="Standard deviation of voiced F0 around its median, in semitones; None when unvoiced."
    )
    energy_db: float = Field(description="Mean frame RMS in dBFS.")
    rate: float = Field(ge=0, description="Speaking rate: syllable nuclei per second of the trimmed clip.")
    duration_s: float = Field(gt=0, description="Duration after trimming edge silence.")


def band(value: float, edges: Sequence[float], words: Sequence[str]) -> str:
    """The word of the band holding `value`: below edges[0] is words[0]; a value on an edge goes up."""
    if len(words) != len(edges) + 1:
        raise ValueError(f"{len(edges)} edges need {len(edges) + 1} words, got {len(words)}")
    return words[sum(value >= edge for edge in edges)]


def pitch_offset_semitones(pitch_hz: float, gender: str | None) -> float:
    """How far a pitch sits above (+) or below (-) the typical speaking pitch of the gender, in semitones."""
    return 12.0 * math.log2(pitch_hz / REFERENCE_PITCH_HZ[gender_key(gender)])


def emo_num(m: VoiceMeasures) -> str:
    """Numeric cues, e.g. 'pitch 182 Hz (variability 2.1 st), energy -21.4 dB, rate 4.2 syllables/s, duration 2.8 s'."""
    pitch = (
        "pitch not measurable (no voiced frames)"
        if m.pitch_hz is None
        else f"pitch {m.pitch_hz:.0f} Hz (variability {m.pitch_sd_semitones or 0.0:.1f} st)"
    )
    return f"{pitch}, energy {m.energy_db:.1f} dB, rate {m.rate:.1f} syllables/s, duration {m.duration_s:.1f} s"


def emo_des(m: VoiceMeasures, gender: str | None) -> str:
    """Descriptive cues, e.g. 'high, lively pitch; loud; fast'; pitch is judged against the gender's norm."""
    if m.pitch_hz is None:
        pitch = "pitch not measurable"
    else:
        level = band(pitch_offset_semitones(m.pitch_hz, gender), PITCH_EDGES_ST, PITCH_WORDS)
        pitch = f"{level}, {band(m.pitch_sd_semitones or 0.0, VARIABILITY_EDGES_ST, VARIABILITY_WORDS)} pitch"
    return f"{pitch}; {band(m.energy_db, ENERGY_EDGES_DB, ENERGY_WORDS)}; {band(m.rate, RATE_EDGES_SPS, RATE_WORDS)}"


def label_word(label: str) -> str:
    """A classifier label as a plain word: short codes expanded, underscores and case normalised."""
    text = label.strip().replace("_", " ").lower()
    return LABEL_WORDS.get(text, text)


def cues_from_labels(scores: Mapping[str, float], kind: CueKind) -> str:
    """Cues from a classifier's label -> score map.

    emo_num: the top three as 'angry p=0.62, sad p=0.21, neutral p=0.10'. emo_des: the top label's word, with
    the runner-up when it is close ('angry, partly sad') and 'possibly' when the top score is low.
    """
    if kind not in CUE_KINDS:
        raise ValueError(f"cue kind must be one of {CUE_KINDS}, got {kind!r}")
    if not scores:
        raise ValueError("no label scores to describe")
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    if kind == "emo_num":
        return ", ".join(f"{label_word(label)} p={score:.2f}" for label, score in ranked[:NUMERIC_TOP_LABELS])
    (top, top_score), rest = ranked[0], ranked[1:]
    text = label_word(top) if top_score >= CONFIDENT_SCORE else f"possibly {label_word(top)}"
    if rest and top_score > 0 and rest[0][1] >= RUNNER_UP_SHARE * top_score:
        text += f", partly {label_word(rest[0][0])}"
    return text


def vad_word(dimension: str, value: float) -> str:
    """The band word of one dimension's value (rounded to VAD_DECIMALS first; a value on an edge goes up)."""
    if dimension not in VAD_WORDS:
        raise ValueError(f"dimension must be one of {VAD_DIMENSIONS}, got {dimension!r}")
    return band(round(value, VAD_DECIMALS), VAD_EDGES, VAD_WORDS[dimension])


def cues_from_dimensions(values: Mapping[str, float], kind: CueKind) -> str:
    """Cues from a regression model's dimension -> value map (all of valence, arousal, dominance).

    emo_num: 'valence 0.42, arousal 0.71, dominance 0.63 (each 0-1, low to high)'.
    emo_des: 'neutral valence, high arousal, dominant'.
    """
    if kind not in CUE_KINDS:
        raise ValueError(f"cue kind must be one of {CUE_KINDS}, got {kind!r}")
    missing = [d for d in VAD_DIMENSIONS if d not in values]
    if missing:
        raise ValueError(f"dimensional values lack {missing}; got {sorted(values)}")
    if kind == "emo_num":
        numbers = ", ".join(f"{d} {values[d]:.{VAD_DECIMALS}f}" for d in VAD_DIMENSIONS)
        return f"{numbers} ({VAD_SCALE})"
    return ", ".join(vad_word(d, values[d]) for d in VAD_DIMENSIONS)
