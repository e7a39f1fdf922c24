"""Where the money went, in the explorer (/costs): per model and role of the latest `eyt run`, the calls, tokens and
USD `eyt plan` estimated (with their ranges) beside the ledger's actual ones, and the totals, from
reports.run_costs (the same words as the report's section). Empty before the first `eyt run` or when the table does
not exist yet. In a static export, a target model that was not selected is left out."""

from __future__ import annotations

from dataclasses import dataclass, field

from eyt_dagster.core import cost_words as cw
from eyt_dagster.explorer.queries import plain
from eyt_dagster.explorer.reads import Warehouse

TABLES = ("reports.run_costs",)
_ROWS = "SELECT * FROM run_costs WHERE NOT list_contains($hidden, model) ORDER BY model, role"


@dataclass(frozen=True)
class Costs:
    rows: list[dict[str, str]] = field(default_factory=list)  # one per model and role, as words
    total: dict[str, str] = field(default_factory=dict)
    estimated_at: str = cw.DASH
    sequential: bool = False
    unpriced: list[str] = field(default_factory=list)
    about: str = cw.ABOUT
    unforeseen: str = cw.UNFORESEEN
    sequential_words: str = cw.SEQUENTIAL
    empty: str = cw.EMPTY


def costs(wh: Warehouse) -> Costs:
    """The latest `eyt run`'s estimate beside its actual cost (no rows before the first)."""
    with wh.sql(TABLES) as con:
        found = con.execute(_ROWS, {"hidden": sorted(wh.hidden_targets())}).df().to_dict("records")
    rows = [plain(r) for r in found]
    if not rows:
        return Costs()
    return Costs(
        rows=[cw.row_words(r) for r in rows],
        total=cw.total_words(rows),
        estimated_at=cw.estimated_at(rows),
        sequential=cw.sequential(rows),
        unpriced=cw.unpriced_models(rows),
    )
