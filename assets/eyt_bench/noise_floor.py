"""noise_floor and pass_k: what the repeated samples say about every cell (eyt_dagster/eyt_bench/noise_floor.py)."""

from typing import Any

import pandas as pd
from dagster import AssetIn, MetadataValue, Output, asset

from assets._asset_args import AssetArgs
from assets._output import now_utc, table_output
from eyt_dagster.core.baseline_flags import baseline_note, flag_targets
from eyt_dagster.eyt_bench import noise_floor as nf
from resources.models.model_access import ReportAccess, SlateAccess

LOGIC_VERSION = "1"
_REPORT: AssetArgs = dict(key_prefix=["dialogue"], group_name="reports", code_version=LOGIC_VERSION)
_INS = {name: AssetIn(key=["dialogue", name]) for name in ("dialogue_scores", "repeat_scores")}


def _finish(df: pd.DataFrame, slate: SlateAccess, **metadata: Any) -> Output[pd.DataFrame]:
    if len(df):
        df = flag_targets(df, slate.slate, "target")
    df["created_at"] = now_utc()
    return table_output(df, baselines=baseline_note(df, "target"), **metadata)


@asset(**_REPORT, ins=_INS)
def noise_floor(
    slate: SlateAccess, reports: ReportAccess, dialogue_scores: pd.DataFrame, repeat_scores: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Per cell and metric: the spread between ChatSEEDs, within a ChatSEED (the target's sampling) and the judge's,
    as standard deviations and shares; the spread over repeats; how far the mean moves on a rerun."""
    current = slate.slate
    samples = nf.all_samples(dialogue_scores, repeat_scores)
    df = nf.noise_floor(samples, repeats=current.repeats, judge_repeats=current.judge_repeats, store=reports.cache)
    shown = df[df["metric"] == "empathy"] if len(df) else df
    columns = ["target", "pool", "n_seeds", "mean", "sd_between", "sd_within", "sd_judge", "rerun_sd"]
    preview = shown[columns].round(3).to_markdown(index=False) if len(shown) else "_no rows_"
    return _finish(
        df, slate, repeats=current.repeats, judge_repeats=current.judge_repeats, empathy=MetadataValue.md(preview)
    )


@asset(**_REPORT, ins=_INS)
def pass_k(
    slate: SlateAccess, reports: ReportAccess, dialogue_scores: pd.DataFrame, repeat_scores: pd.DataFrame
) -> Output[pd.DataFrame]:
    """pass^k of final-intent completion for k = 1..repeats: the chance that k plays of a ChatSEED all complete."""
    current = slate.slate
    df = nf.pass_k(
        nf.all_samples(dialogue_scores, repeat_scores),
        repeats=current.repeats,
        judge_repeats=current.judge_repeats,
        store=reports.cache,
    )
    last = df[df["k"] == current.repeats] if len(df) else df
    preview = last[["target", "pool", "n_seeds", "pass_k"]].round(3).to_markdown(index=False) if len(last) else ""
    return _finish(
        df, slate, repeats=current.repeats, **{f"pass_{current.repeats}": MetadataValue.md(preview or "_no rows_")}
    )
