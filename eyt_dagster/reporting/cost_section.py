"""The report's section on where the money went ("Estimated against actual cost"): per model and role of the latest
`eyt run`, the calls, tokens and USD `eyt plan` estimated (with their ranges) beside the ledger's actual ones, and
the totals, from reports.run_costs. Absent when the table has no rows (before the first `eyt run`, or a warehouse
from before the table existed)."""

from __future__ import annotations

import pandas as pd

from eyt_dagster.core import cost_words as cw
from eyt_dagster.reporting.html_report import Section

TITLE = "Estimated against actual cost"


def cost_table(run_costs: pd.DataFrame) -> pd.DataFrame:
    """One row per model and role as words (sorted by model and role), then the totals."""
    rows = run_costs.sort_values(["model", "role"]).to_dict("records") if len(run_costs) else []
    shown = [cw.row_words(r) for r in rows] + [cw.total_words(rows)]
    return pd.DataFrame(shown, columns=[*cw.SHOWN, *cw.SHOWN_USD])


def cost_section(run_costs: pd.DataFrame) -> Section | None:
    """The section, or None when the table is empty or missing."""
    if not len(run_costs) or "model" not in run_costs.columns:
        return None
    rows = run_costs.to_dict("records")
    parts = [cw.ABOUT, f"The estimate was made at {cw.estimated_at(rows)}.", cw.UNFORESEEN]
    unpriced = cw.unpriced_models(rows)
    if unpriced:
        parts.append(f"Unpriced: {', '.join(unpriced)}.")
    if cw.sequential(rows):
        parts.append(cw.SEQUENTIAL)
    return Section(title=TITLE, description="\n\n".join(parts), table=cost_table(run_costs), labels=cw.LABELS)
