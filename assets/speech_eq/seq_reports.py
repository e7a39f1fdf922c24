"""SpeechEQ reports over every target's choices (paper §2.5, §4, Tables 3-4, Figures 2-4; docs/method.md#seq): the SEQ
leaderboard, per-subscale and per-composite accuracy, and the correlation with a human ranking."""

from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, MetadataValue, Output, asset

from assets._asset_args import AssetArgs
from assets._output import now_utc, table_output
from eyt_dagster.core.baseline_text import REFERENCE_POINTS
from eyt_dagster.reporting.plots import png_markdown
from eyt_dagster.reporting.seq_plots import sequential_direct_png, subscale_accuracy_png
from eyt_dagster.speech_eq import seq_tables
from eyt_dagster.speech_eq.human_ranking import read_human_ranking
from eyt_dagster.speech_eq.rank_correlation import CORRELATION_COLUMNS, human_alignment
from resources.models.model_access import SlateAccess

LOGIC_VERSION = "2"
BASELINE_NOTE = (
    f"is_baseline rows are embedded chooser baselines or chance: {REFERENCE_POINTS}. SEQ is relative to the "
    "cohort in seq_cohort (seq_cohort_kind says what it is; 'baselines_only' = no model evaluated)."
)
_REPORT: AssetArgs = dict(key_prefix=["speech"], group_name="reports", code_version=LOGIC_VERSION)
_CHOICES = {"slm_choices": AssetIn(key=["speech", "slm_choices"])}


def _finish(df: pd.DataFrame, **metadata: object) -> Output[pd.DataFrame]:
    df = df.copy()
    df["created_at"] = now_utc()
    return table_output(df, baselines=BASELINE_NOTE, **metadata)


@asset(**_REPORT, ins=_CHOICES)
def seq_leaderboard(slate: SlateAccess, slm_choices: pd.DataFrame) -> Output[pd.DataFrame]:
    """Per target and persona condition: Acc1, Acc2, Acc_traj with 95% item-bootstrap intervals, SEQ over the
    condition's cohort, contextual amnesia, direct inference, position bias, parse failures, cost per 100
    queries, latency and tokens per second; chance rows for reference."""
    current = slate.slate
    df = seq_tables.seq_leaderboard(
        slm_choices,
        resamples=current.bootstrap_resamples,
        seed=current.seed,
        cohort=current.speech.evaluation.seq_cohort,
    )
    conditioning = seq_tables.conditioning_table(df)
    return _finish(
        df,
        conditioning=MetadataValue.md(seq_tables.conditioning_markdown(conditioning)),
        cohort=seq_tables.seq_cohort_note(df),
        shortcuts="\n".join(seq_tables.shortcut_notes(df)) or "none: no acoustic rule beats chance by a wide margin",
        reply_format=", ".join(sorted(set(df["reply_format"].dropna().astype(str)))) or "none",
    )


@asset(**_REPORT, ins=_CHOICES)
def seq_breakdown(slate: SlateAccess, slm_choices: pd.DataFrame) -> Output[pd.DataFrame]:
    """Per target, condition, subscale and composite: accuracies, contextual amnesia and the sequential-vs-
    direct delta of round 2 (paper Figures 2-3)."""
    current = slate.slate
    df = seq_tables.seq_breakdown(slm_choices, resamples=current.bootstrap_resamples, seed=current.seed)
    plots = [
        png_markdown(subscale_accuracy_png(df), "Acc_traj per subscale"),
        png_markdown(sequential_direct_png(df), "Round-2 accuracy, direct minus sequential, per subscale"),
    ]
    return _finish(df, plot=MetadataValue.md("\n\n".join(plots)))


@asset(**_REPORT, ins=_CHOICES)
def seq_human_alignment(
    context: AssetExecutionContext, slate: SlateAccess, slm_choices: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Spearman rho of each metric with a human ranking of the targets (paper Table 4), when the slate names a
    ranking file (speech.evaluation.human_ranking); empty otherwise. The metrics are computed over the items
    the file names (its item_id column), else over every item; `item_scope` says which."""
    current = slate.slate
    path = current.speech.evaluation.human_ranking
    if not path:
        context.log.info("no speech.evaluation.human_ranking in the slate: nothing to correlate")
        return _finish(pd.DataFrame(columns=CORRELATION_COLUMNS), ranking="none configured")
    ranking = read_human_ranking(Path(path))
    df = human_alignment(
        slm_choices,
        ranking,
        resamples=current.bootstrap_resamples,
        seed=current.seed,
        cohort=current.speech.evaluation.seq_cohort,
    )
    scope = (
        "every item" if ranking.items is None else f"the {len(ranking.items)} rated items: {', '.join(ranking.items)}"
    )
    return _finish(df, ranking=str(path), items=scope)
