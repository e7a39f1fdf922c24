"""Process-wide running totals of the call ledger's rows (calls, cache hits, tokens, cost, retries, failures by
kind), counted as CallCache.record appends each row, so a step's progress can show them without reading the ledger
back. A run executes in one process at a time (eyt's workers, Dagster's run launchers; steps run in process), so
the difference between two snapshots taken inside a step is that step's calls (resources/models/run_progress.py)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CallTotals:
    calls: int = 0
    cache_hits: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    failures: dict[str, int] = field(default_factory=dict)

    def since(self, earlier: CallTotals) -> CallTotals:
        """What was counted between `earlier` and this snapshot."""
        kinds = {k: n - earlier.failures.get(k, 0) for k, n in self.failures.items()}
        return CallTotals(
            calls=self.calls - earlier.calls,
            cache_hits=self.cache_hits - earlier.cache_hits,
            tokens=self.tokens - earlier.tokens,
            cost_usd=self.cost_usd - earlier.cost_usd,
            retries=self.retries - earlier.retries,
            failures={k: n for k, n in kinds.items() if n > 0},
        )


_LOCK = threading.Lock()
_TOTALS = {"calls": 0, "cache_hits": 0, "tokens": 0, "cost_usd": 0.0, "retries": 0}
_FAILURES: dict[str, int] = {}


def count_call(*, cached: bool, tokens: int, cost_usd: float, retries: int, failure: str | None) -> None:
    """One ledger row (`failure` its kind, None for an ok row)."""
    with _LOCK:
        _TOTALS["calls"] += 1
        _TOTALS["cache_hits"] += int(cached)
        _TOTALS["tokens"] += tokens
        _TOTALS["cost_usd"] += cost_usd
        _TOTALS["retries"] += retries
        if failure is not None:
            _FAILURES[failure] = _FAILURES.get(failure, 0) + 1


def call_totals() -> CallTotals:
    """The totals counted in this process so far."""
    with _LOCK:
        return CallTotals(
            calls=int(_TOTALS["calls"]),
            cache_hits=int(_TOTALS["cache_hits"]),
            tokens=int(_TOTALS["tokens"]),
            cost_usd=float(_TOTALS["cost_usd"]),
            retries=int(_TOTALS["retries"]),
            failures=dict(_FAILURES),
        )
