"""Does leaving out the dialogues the simulator audit flagged change a number or a ranking?
(dialogue.simulator_audit_effect)

Per pool, metric and target: the mean per-dialogue value over all its finished dialogues and over those the audit
did not flag, each with the target's rank among the pool's targets (1 = best; drift lowest first; ties share the
best rank), and whether the rank moved. Per-dialogue values are the pairwise comparisons' (a ratio metric is each
dialogue's own ratio), so the numbers read with dialogue.rank_intervals.
"""

from __future__ import annotations

import pandas as pd

from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.analysis import per_dialogue
from eyt_dagster.eyt_bench.rank_intervals import LOWER_IS_BETTER
from eyt_dagster.eyt_bench.simulator_audit import dialogue_flags
from eyt_dagster.eyt_bench.table_contracts import SIMULATOR_AUDIT_EFFECT_COLUMNS
from eyt_dagster.eyt_bench.taxonomy import PAIRED_METRICS

KEYS = ["target", "pool", "seed_id"]
# the table's columns as its contract (table_contracts.py) orders them, without what the asset adds
# (the baseline flags, created_at)
EFFECT_COLUMNS = tuple(
    column_names(SIMULATOR_AUDIT_EFFECT_COLUMNS, without=("is_baseline", "self_preference_risk", "created_at"))
)


def _rank(values: pd.Series, metric: str) -> pd.Series:
    keyed = values if metric in LOWER_IS_BETTER else -values
    return keyed.rank(method="min", na_option="bottom").astype("Int64")


def audit_effect(scores: pd.DataFrame, audit_rows: pd.DataFrame) -> pd.DataFrame:
    """One row per pool, metric and target with a dialogue_scores row; a dialogue the audit has no row of counts
    as not flagged (its cell was not audited)."""
    if not len(scores):
        return pd.DataFrame(columns=list(EFFECT_COLUMNS))
    flags = dialogue_flags(audit_rows)[[*KEYS, "flagged"]]
    scored = scores.merge(flags, on=KEYS, how="left")
    scored["flagged"] = scored["flagged"].astype("boolean").fillna(False).astype(bool)
    frames = []
    for metric in PAIRED_METRICS:
        values = scored[["target", "pool", "flagged"]].assign(value=per_dialogue(scored, metric).to_numpy())
        grouped = values.groupby(["pool", "target"])
        table = pd.DataFrame(
            {
                "n_dialogues": grouped.size(),
                "n_flagged": grouped["flagged"].sum().astype(int),
                "value_all": grouped["value"].mean(),
                "value_unflagged": values[~values["flagged"]].groupby(["pool", "target"])["value"].mean(),
            }
        ).reset_index()
        table["metric"] = metric
        table["flag_rate"] = table["n_flagged"] / table["n_dialogues"]
        for which in ("all", "unflagged"):
            table[f"rank_{which}"] = table.groupby("pool")[f"value_{which}"].transform(lambda v, m=metric: _rank(v, m))
        table["rank_changed"] = table["rank_all"] != table["rank_unflagged"]
        frames.append(table)
    out = pd.concat(frames, ignore_index=True)
    out["n_dialogues"] = out["n_dialogues"].astype(int)
    return out[list(EFFECT_COLUMNS)].sort_values(["pool", "metric", "target"]).reset_index(drop=True)
