"""What every model-backed role returns, in both benchmarks: the validated value with its raw text (`Reply`) and
what the calls cost (`CallStats`)."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class CallStats(BaseModel):
    """What one or more model calls cost. Embedded baselines cost nothing and take no network time.
    `reasoning_tokens` are part of `tokens_out` (eyt_dagster/core/reasoning.py); `cut_replies` counts text replies
    cut at max_tokens (used as they were); `adaptations` are the notes of the changes a provider's profile or refusal
    made to the requests (eyt_dagster/core/provider_profiles.py), each once."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    calls: int = 0
    cache_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    reasoning_tokens: int = 0
    cut_replies: int = 0
    adaptations: tuple[str, ...] = ()

    def __add__(self, other: CallStats) -> CallStats:
        return CallStats(
            calls=self.calls + other.calls,
            cache_hits=self.cache_hits + other.cache_hits,
            tokens_in=self.tokens_in + other.tokens_in,
            tokens_out=self.tokens_out + other.tokens_out,
            cost_usd=self.cost_usd + other.cost_usd,
            latency_s=self.latency_s + other.latency_s,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cut_replies=self.cut_replies + other.cut_replies,
            adaptations=merge_notes(self.adaptations, other.adaptations),
        )


def merge_notes(*groups: tuple[str, ...]) -> tuple[str, ...]:
    """The notes of every group, each once, in the order first seen."""
    return tuple(dict.fromkeys(note for group in groups for note in group))


class Reply(BaseModel, Generic[T]):
    """A role's answer: the validated value, the raw text the model sent as its answer, and what it cost.
    `reasoning`: a thinking model's reasoning, never part of `raw` or `value` (eyt_dagster/core/reasoning.py)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    value: T
    raw: str
    stats: CallStats = CallStats()
    reasoning: str = ""
