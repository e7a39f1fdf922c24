"""run_costs: estimated against actual cost per model and role for the latest `eyt run` or `eyt refresh`
(docs/cost.md#estimated-against-actual): the estimate it kept before its runs (`eyt plan`'s figures, `eyt plan
--refresh`'s for a refresh) beside the ledger's network calls since."""

import json
from pathlib import Path

import pandas as pd
from dagster import MetadataValue, Output, asset

from assets._output import now_utc, table_output
from eyt_dagster.core.cost_actual import ESTIMATE_FILE, RUN_COSTS_COLUMNS, actual_by_role, comparison_rows
from eyt_dagster.core.storage_types import conform
from resources.models.model_access import ModelAccess, SlateAccess

LOGIC_VERSION = "1"
TABLE = "reports.run_costs"


@asset(key_prefix=["reports"], group_name="reports", code_version=LOGIC_VERSION, deps=[["reports", "model_cards"]])
def run_costs(slate: SlateAccess, models: ModelAccess) -> Output[pd.DataFrame]:
    """One row per model and role of the latest `eyt run` or `eyt refresh`: estimated calls, tokens and USD (with
    their range) and the actual ones from the ledger; empty before the first of them (a run from the UI keeps no
    estimate)."""
    path = Path(models.data_dir) / ESTIMATE_FILE
    if not path.exists():
        df = conform(pd.DataFrame(columns=list(RUN_COSTS_COLUMNS)), RUN_COSTS_COLUMNS, TABLE)
        return table_output(df, estimate="none: no `eyt run` has kept one in this data directory")
    estimate = json.loads(path.read_text())
    after = int(estimate["ledger_last_id"])
    actual = actual_by_role(models.cache.ledger(after_id=after), after)  # the rows since the estimate, read as such
    priced = {ref.id for ref in slate.slate.chat_models() if ref.is_priced}
    df = pd.DataFrame(comparison_rows(estimate["lines"], actual, priced))
    df["estimated_at"] = estimate["estimated_at"]
    df["sequential"] = bool(estimate.get("sequential"))
    df["created_at"] = now_utc()
    df = conform(df.reindex(columns=list(RUN_COSTS_COLUMNS)), RUN_COSTS_COLUMNS, TABLE)
    shown = df[["model", "role", "est_calls", "actual_calls", "est_usd", "actual_usd"]]
    return table_output(
        df,
        estimated_at=estimate["estimated_at"],
        comparison=MetadataValue.md(shown.to_markdown(index=False) if len(df) else "_no paid calls_"),
    )
