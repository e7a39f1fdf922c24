"""What every model-backed role returns, in both benchmarks: the validated value with its raw text (`Reply`) and
what the calls cost (`CallStats`)."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class CallStats(BaseModel):
    """What one or more model calls cost. Embedded baselines cost nothing and take no network time."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    calls: int = 0
    cache_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    def __add__(self, other: CallStats) -> CallStats:
        return CallStats(
            calls=self.calls + other.calls,
            cache_hits=self.cache_hits + other.cache_hits,
            tokens_in=self.tokens_in + other.tokens_in,
            tokens_out=self.tokens_out + other.tokens_out,
            cost_usd=self.cost_usd + other.cost_usd,
            latency_s=self.latency_s + other.latency_s,
        )


class Reply(BaseModel, Generic[T]):
    """A role's answer: the validated value, the raw text the model sent, and what it cost."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    value: T
    raw: str
    stats: CallStats = CallStats()
