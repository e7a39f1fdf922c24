"""EYT-Bench's part of the slate: where each persona pool comes from and the thinking on/off pairs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from eyt_dagster.core.languages import Language
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.eyt_bench.taxonomy import PAIRED_METRICS


class PoolSource(BaseModel):
    """Where a persona pool comes from: the shipped fixture, a local copy, or the Hugging Face hub."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["fixture", "local", "hub"] = "fixture"
    path: str | None = Field(default=None, description="Local copy in the published layout (source: local).")
    revision: str | None = Field(default=None, description="Hub revision to pin (source: hub).")
    language: Language | None = Field(
        default=None,
        description="The language the pool is played in (prompts, simulator, judge); unset = its corpus's language.",
    )

    @model_validator(mode="after")
    def _local_needs_path(self) -> PoolSource:
        if self.source == "local" and not self.path:
            raise ValueError("source 'local' needs a path to the published layout")
        return self


class ReasoningPair(BaseModel):
    """Two targets of the same base model that differ only in the thinking flag (paper Table 7)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    think: str = Field(description="Target id with thinking on.")
    non_think: str = Field(description="Target id with thinking off.")


class SequentialSettings(BaseModel):
    """Stop when the ranking is settled (docs/eyt-metrics.md#stopping-when-the-ranking-is-settled): each pool's
    ChatSEEDs are played in one seeded order, in batches, and a target stops once every comparison it takes part in
    is decided on every metric that has a margin."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    alpha: float = Field(default=0.05, gt=0.0, lt=0.5, description="Family-wise error per pool and metric.")
    min_dialogues: int = Field(default=20, ge=2, description="Dialogues every target plays before the first look.")
    batch: int = Field(default=10, ge=1, description="Dialogues added between looks.")
    margin: dict[str, float] = Field(
        default_factory=dict,
        description="The smallest difference worth resolving, per metric (in the metric's own units, e.g. "
        "explicit_acc: 0.05, satisfaction: 0.1); only the metrics named here decide when to stop.",
    )

    @model_validator(mode="after")
    def _margin_when_enabled(self) -> SequentialSettings:
        if self.enabled and not self.margin:
            raise ValueError(
                "margin is required when sequential.enabled is true: the smallest difference worth resolving per "
                f"metric, e.g. margin: {{explicit_acc: 0.05, satisfaction: 0.1}}; the metrics are {list(PAIRED_METRICS)}"
            )
        unknown = sorted(set(self.margin) - set(PAIRED_METRICS))
        if unknown:
            raise ValueError(
                f"margin: unknown metric(s) {unknown}; the per-dialogue metrics are {list(PAIRED_METRICS)}"
            )
        bad = {k: v for k, v in self.margin.items() if not v > 0}
        if bad:
            raise ValueError(f"margin: {bad} must be positive (the smallest difference worth resolving)")
        return self


class EytSlate(Protocol):
    """What EYT-Bench's functions read from a slate (eyt_dagster/slate.py's `Slate` has all of it)."""

    @property
    def name(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def alpha(self) -> float: ...
    @property
    def judge_combine(self) -> str: ...
    @property
    def repeats(self) -> int: ...
    @property
    def judge_repeats(self) -> int: ...
    @property
    def scale(self) -> tuple[float, ...]: ...
    @property
    def simulator(self) -> ModelRef: ...
    @property
    def targets(self) -> Sequence[ModelRef]: ...
    @property
    def judges(self) -> Sequence[ModelRef]: ...
    @property
    def replacement_judge(self) -> ModelRef | None: ...
    @property
    def pools(self) -> Mapping[str, PoolSource]: ...
    def target(self, target_id: str) -> ModelRef: ...
    def self_preference_risk(self, target_id: str) -> bool: ...
    def pool_language(self, pool: str) -> str: ...
