"""EYT-Bench's part of the slate: where each persona pool comes from and the thinking on/off pairs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from eyt_dagster.core.languages import Language
from eyt_dagster.core.model_ref import ModelRef


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
