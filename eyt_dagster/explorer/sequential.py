"""The sequential design's outcome in the explorer (/sequential): per pool, every comparison of
dialogue.sequential_decisions with its verdict in words, and every target's dialogues played of N and estimated
USD saved from dialogue.sequential_savings. Empty when the slate does not use the design. Only the comparisons
of targets this warehouse reader shows (a static export's selection) are listed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eyt_dagster.explorer.formats import usd
from eyt_dagster.explorer.pairs import metric_column
from eyt_dagster.explorer.queries import plain, targets
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.eyt_bench.sequential_words import GUARANTEE, verdict_words

TABLES = ("dialogue.sequential_decisions", "dialogue.sequential_savings")
_DECISIONS = """
SELECT * FROM sequential_decisions
WHERE list_contains($targets, target_a) AND list_contains($targets, target_b)
ORDER BY pool, metric, target_a, target_b
"""
_SAVINGS = "SELECT * FROM sequential_savings WHERE list_contains($targets, target) ORDER BY pool, target"


@dataclass
class Pool:
    name: str
    comparisons: list[dict[str, Any]] = field(default_factory=list)  # decisions rows, with `words`
    targets: list[dict[str, Any]] = field(default_factory=list)  # savings rows, with `spent` and `saved` as dollars
    saved_usd: float = 0.0

    @property
    def saved(self) -> str:
        return usd(self.saved_usd)


@dataclass(frozen=True)
class Settled:
    pools: list[Pool]
    comparisons: int
    early: int
    saved: str  # the estimated USD saved over all pools, as dollars
    guarantee: str = GUARANTEE


def settled(wh: Warehouse) -> Settled:
    """Every pool's comparisons and targets (no pools when the design is not used)."""
    shown = sorted(targets(wh))
    with wh.sql(TABLES) as con:
        decisions = [plain(r) for r in con.execute(_DECISIONS, {"targets": shown}).df().to_dict("records")]
        savings = [plain(r) for r in con.execute(_SAVINGS, {"targets": shown}).df().to_dict("records")]
    if not decisions:
        return Settled([], 0, 0, usd(0))
    pools: dict[str, Pool] = {}
    for row in decisions:
        row["words"] = verdict_words(row["verdict"], row["undecided_at_n"], row["n_total"])
        row["pairs_metric"] = _pairs_metric(str(row["metric"]))
        pools.setdefault(str(row["pool"]), Pool(str(row["pool"]))).comparisons.append(row)
    for row in savings:
        row["spent"], row["saved"] = usd(row["spent_usd"]), usd(row["saved_usd_estimate"])
        pool = pools.setdefault(str(row["pool"]), Pool(str(row["pool"])))
        pool.targets.append(row)
        pool.saved_usd += float(row["saved_usd_estimate"] or 0.0)
    early = sum(bool(r["decided_early"]) for r in decisions)
    total = sum(p.saved_usd for p in pools.values())
    return Settled([pools[name] for name in sorted(pools)], len(decisions), early, usd(total))


def _pairs_metric(metric: str) -> str | None:
    """The per-dialogue column the paired differences page sorts a metric by, or None when it has none."""
    try:
        return metric_column(metric)
    except ValueError:
        return None
