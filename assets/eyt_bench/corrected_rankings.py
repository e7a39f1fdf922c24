"""Rankings under correction: the ranks and pairwise verdicts the prediction-powered estimates give, beside the
judge-only ones (docs/eyt-metrics.md#rankings-under-correction)."""

from typing import Any

import pandas as pd
from dagster import AssetIn, MetadataValue, Output, asset

from assets._asset_args import AssetArgs
from assets._output import now_utc, table_output
from eyt_dagster.core.baseline_flags import baseline_note, baseline_targets, flag_targets
from eyt_dagster.eyt_bench import corrected_rankings as corrected
from resources.models.model_access import SlateAccess

LOGIC_VERSION = "1"
_REPORT: AssetArgs = dict(key_prefix=["dialogue"], group_name="reports", code_version=LOGIC_VERSION)


def _ins(*names: str) -> dict[str, AssetIn]:
    return {name: AssetIn(key=["dialogue", name]) for name in names}


def _groups(df: pd.DataFrame) -> int:
    return int(df[["pool", "metric"]].drop_duplicates().shape[0]) if len(df) else 0


def _done(df: pd.DataFrame, **metadata: Any) -> Output[pd.DataFrame]:
    df["created_at"] = now_utc()
    return table_output(df, **metadata)


@asset(**_REPORT, ins=_ins("judge_corrected", "rank_intervals"))
def corrected_rank_intervals(
    slate: SlateAccess, judge_corrected: pd.DataFrame, rank_intervals: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Each target's rank per pool and metric from the corrected (prediction-powered) estimates, with a seeded
    parametric-bootstrap interval, beside its judge-only rank; only for pools and metrics all of whose targets
    show a corrected figure."""
    df = corrected.corrected_rank_intervals(
        judge_corrected, rank_intervals, resamples=slate.slate.bootstrap_resamples, seed=slate.slate.seed
    )
    df = flag_targets(df, slate.slate)
    changes = corrected.ranking_changes(df)
    return _done(
        df,
        baselines=baseline_note(df),
        groups_compared=_groups(df),
        rankings_changed=int(df["rank_changed"].sum()) if len(df) else 0,
        changes=MetadataValue.md("\n".join(f"- {line}" for line in changes) if changes else "_none_"),
        resamples=slate.slate.bootstrap_resamples,
    )


@asset(**_REPORT, ins=_ins("judge_corrected", "pairwise_comparisons"))
def corrected_pairwise(
    slate: SlateAccess, judge_corrected: pd.DataFrame, pairwise_comparisons: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Every pair of targets per pool and metric compared on the corrected (prediction-powered) estimates, beside
    the judge-only comparison, and whether the verdict changes; only for pools and metrics all of whose targets
    show a corrected figure."""
    df = corrected.corrected_pairwise(judge_corrected, pairwise_comparisons)
    baselines = baseline_targets(slate.slate)
    risky = [t.id for t in slate.slate.targets if slate.slate.self_preference_risk(t.id)]
    df["is_baseline_pair"] = (df["target_a"].isin(baselines) | df["target_b"].isin(baselines)).astype(bool)
    df["self_preference_risk"] = (df["target_a"].isin(risky) | df["target_b"].isin(risky)).astype(bool)
    return _done(
        df,
        baselines="rows name targets in pairs; see is_baseline_pair",
        groups_compared=_groups(df),
        verdicts_changed=int(df["changed"].sum()) if len(df) else 0,
        significant_corrected=int(df["corrected_significant"].sum()) if len(df) else 0,
        adjusted_over="every pair of one pool and metric (Holm), as in pairwise_comparisons",
    )
