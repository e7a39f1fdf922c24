"""SpeechEQ's part of the slate: how items are built (text roles, TTS, contrast thresholds) and how targets are
tested (conditions, inference modes, option orders), and the settings of a cascaded target."""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from eyt_dagster.core.languages import DEFAULT_LANGUAGE, Language
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.speech_eq.contrast import ContrastThresholds
from eyt_dagster.speech_eq.protocol import DEFAULT_REPLY_FORMAT, ReplyFormat


class CascadeSettings(BaseModel):
    """A cascaded SpeechEQ system (paper §3): speech -> transcript + emotion cues -> the text LLM.

    `cues`: emo_num gives the cues as numbers, emo_des as words. Cues come from `emotion_model_path` when set:
    a wav2vec2 regression model giving arousal / dominance / valence (the paper's cascades), or a transformers
    audio-classification model giving emotion labels, as its config.json says; else from the project's
    acoustic features (pitch level and variability, energy, speaking rate). See docs/speecheq-cascade.md.
    `asr_model_path` (a faster-whisper / CTranslate2 model folder) turns ASR on; without it the item's own
    transcripts are used, an upper bound on ASR quality.
    """

    model_config = ConfigDict(extra="forbid")

    cues: Literal["emo_num", "emo_des"] = "emo_des"
    asr_model_path: str | None = Field(
        default=None, description="faster-whisper model folder; None = reference transcripts."
    )
    emotion_model_path: str | None = Field(
        default=None,
        description="transformers audio model folder: a wav2vec2 regression head (arousal / dominance "
        "/ valence) or an emotion classifier; None = acoustic-feature cues.",
    )


TEMPLATE_GENERATOR = "template-baseline"
_BOTH_INFERENCES: list[Literal["sequential", "direct"]] = [
    "sequential",
    "direct",
]  # a default list of Literals: a typed constant whose .copy is the default_factory (mypy cannot type a lambda's list of Literals through pydantic's Field)


class SpeechEvaluation(BaseModel):
    """How SpeechEQ targets are tested (paper §2.4-2.5, docs/speecheq-evaluation.md): persona conditions, inference
    modes, whether both option orders are asked, and an optional human ranking to correlate with."""

    model_config = ConfigDict(extra="forbid")

    conditions: list[str] = Field(
        default_factory=lambda: ["default"],
        description="Persona conditions (system prompts): default, adaptive, global_deficit, deficit_<composite>.",
    )
    inference: list[Literal["sequential", "direct"]] = Field(
        default_factory=_BOTH_INFERENCES.copy,
        min_length=1,
        description="Round 2 after the model's own round-1 choice (sequential) and/or after the correct clip (direct).",
    )
    both_orders: bool = Field(
        default=False, description="Also ask every round with the options swapped (position bias)."
    )
    human_ranking: str | None = Field(
        default=None,
        description="CSV with columns target,rank (1 = best) and optionally item_id (the items the "
        "humans rated) to correlate each metric with; see docs/speecheq-evaluation.md.",
    )
    reply_format: ReplyFormat = Field(
        default=DEFAULT_REPLY_FORMAT,
        description="'paper': acoustic profile of each option and the situational demand "
        "before reasoning and selection (paper App. D); 'short': reasoning "
        "and selection only.",
    )
    seq_cohort: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Target ids whose Acc_traj sets the SEQ scale; default: the end-to-end and cascaded models "
        "evaluated, or the baselines when there is none (docs/speecheq-evaluation.md).",
    )

    @field_validator("conditions")
    @classmethod
    def _known_conditions(cls, value: list[str]) -> list[str]:
        from eyt_dagster.speech_eq.conditions import CONDITIONS  # the one list of condition names

        unknown = [c for c in value if c not in CONDITIONS]
        if unknown or not value or len(set(value)) != len(value):
            raise ValueError(f"conditions {value}: each must appear once and be one of {list(CONDITIONS)}")
        return value


SpeechTextRole = Literal["generator", "validator", "tone_judge"]
_ALL_VALENCES: list[Literal["Positive", "Negative", "Conflict"]] = ["Positive", "Negative", "Conflict"]  # as above


class SpeechSettings(BaseModel):
    """SpeechEQ items (docs/method.md#building-items): how many, which text generator, validator, tone judge and
    TTS engine. The text roles name 'template-baseline' (the embedded template generator) or the id of a
    model in `models`: a `provider: openai` chat model, or `provider: embedded` with model 'template-baseline'."""

    model_config = ConfigDict(extra="forbid")

    language: Language = Field(
        default=DEFAULT_LANGUAGE,
        description="The language the items are written and spoken in: the generator's text and prompts, the "
        "tone instructions, the espeak-ng voice (cmn for zh) and the evaluation prompts (docs/languages.md).",
    )
    generator: str = Field(
        default=TEMPLATE_GENERATOR, description="'template-baseline' or the id of a model in speech.models."
    )
    models: list[ModelRef] = Field(default_factory=list, description="Chat models the speech text roles may name.")
    validator: str | None = Field(
        default=None,
        description="Model id that checks turns 4 and 6 read plausibly in either tone; default: the "
        "generator. 'template-baseline' = no check.",
    )
    tone_judge: str | None = Field(
        default=None,
        description="Model id that selects the resonant and most dissonant tone; default: the "
        "generator. 'template-baseline' = the rule judge.",
    )
    items_per_valence: int = Field(default=1, ge=1, description="Scenarios per subscale and valence.")
    valences: list[Literal["Positive", "Negative", "Conflict"]] = Field(default_factory=_ALL_VALENCES.copy)
    bland_words: list[str] | None = Field(
        default=None, description="Rejected tone words; default: speech_eq/vocabulary.py."
    )
    max_tone_attempts: int = Field(default=3, ge=1, description="Attempts per tone instruction before giving up.")
    tts: ModelRef | None = Field(default=None, description="OpenAI-compatible speech endpoint; None = espeak-ng.")
    contrast: ContrastThresholds = Field(default_factory=ContrastThresholds)
    contrast_by_engine: dict[str, ContrastThresholds] | None = Field(
        default=None,
        description="Contrast thresholds for the clips of one TTS engine, by its name ('espeak-ng', a remote TTS "
        "model's id, or 'imported' for released items), in place of `contrast`: the defaults were calibrated on "
        "espeak-ng's clips, and another engine's voices may differ less (or more) between two tones.",
    )
    source: Literal["generated", "released"] = Field(
        default="generated", description="'released' imports items from `released_path` instead of building them."
    )
    released_path: str | None = Field(default=None, description="A folder in the released SpeechEQ layout.")
    max_skipped_fraction: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="With source 'released': the share of a subscale's item folders that may be skipped (a field "
        "missing, a clip absent) before its import fails; an import with no item always fails.",
    )
    evaluation: SpeechEvaluation = Field(default_factory=lambda: SpeechEvaluation())

    def thresholds_for(self, engine: str) -> ContrastThresholds:
        """The contrast thresholds for the clips of one TTS engine (`contrast_by_engine`, else `contrast`)."""
        return (self.contrast_by_engine or {}).get(engine, self.contrast)

    @model_validator(mode="after")
    def _released_needs_path(self) -> SpeechSettings:
        if self.source == "released" and not self.released_path:
            raise ValueError("speech.source 'released' needs speech.released_path (a folder in the released layout)")
        return self

    @model_validator(mode="after")
    def _text_models(self) -> SpeechSettings:
        ids = [m.id for m in self.models]
        if len(set(ids)) != len(ids):
            raise ValueError(f"speech.models: duplicate id in {ids}")
        for m in self.models:
            if m.provider == "embedded" and m.model != TEMPLATE_GENERATOR:
                raise ValueError(
                    f"speech.models '{m.id}': the only embedded speech text generator is "
                    f"'{TEMPLATE_GENERATOR}', not '{m.model}'"
                )
        for role in ("generator", "validator", "tone_judge"):
            value = getattr(self, role)
            if value is not None and value != TEMPLATE_GENERATOR and value not in ids:
                raise ValueError(
                    f"speech.{role}: '{value}' is neither '{TEMPLATE_GENERATOR}' nor the id of a model "
                    f"in speech.models {ids}"
                )
        if self.text_model("generator") is None:
            chat_roles: tuple[SpeechTextRole, ...] = ("validator", "tone_judge")
            for role in chat_roles:
                if self.text_model(role) is not None:
                    raise ValueError(
                        f"speech.{role}: a chat model needs a chat-model generator; with the template "
                        f"generator leave {role} unset (its lines are neutral and its judge is a rule)"
                    )
        return self

    def text_model(self, role: SpeechTextRole) -> ModelRef | None:
        """The chat model playing a speech text role, or None for the embedded template baseline. The validator
        and the tone judge default to the generator."""
        value = getattr(self, role)
        if value is None:
            value = self.generator
        for m in self.models:
            if m.id == value:
                return None if m.is_baseline else m
        return None


class SpeechTarget(Protocol):
    """What SpeechEQ's functions read of a target (eyt_dagster/slate.py's `TargetRef` has all of it)."""

    @property
    def id(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def is_baseline(self) -> bool: ...
    @property
    def max_concurrency(self) -> int: ...
    @property
    def speech_input(self) -> str: ...
    @property
    def cascade(self) -> CascadeSettings: ...
    def fingerprint(self) -> str: ...
