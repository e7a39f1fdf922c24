"""Analysis tables over all partitions: intervals, paired comparisons, ablations, trajectory."""

from typing import Any

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, MetadataValue, Output, asset

from assets._asset_args import AssetArgs
from assets._output import large_table_output, now_utc, table_output
from eyt_dagster.core.baseline_flags import baseline_note, baseline_targets, flag_targets
from eyt_dagster.eyt_bench import analysis, audit_effect, sequential_plan
from eyt_dagster.eyt_bench import rank_intervals as ranks
from eyt_dagster.eyt_bench.dialogue_scoring import dialogue_lengths, turn_dimension_scores
from eyt_dagster.eyt_bench.taxonomy import ALPHA_SWEEP, POOLS
from eyt_dagster.reporting.plots import (
    alpha_sweep_png,
    cached_pairwise_png,
    cached_png,
    interval_png,
    png_markdown,
    targets_shown,
    turn_curves_png,
)
from eyt_dagster.reporting.report_sections import interval_cells
from resources.models.model_access import ReportAccess, SlateAccess

LOGIC_VERSION = "3"  # 3: pairwise_comparisons gained se, p-values (Holm-adjusted) and mde_80
INTERVAL_PREVIEW = (
    "explicit_acc",
    "emotion_acc",
    "drift",
    "ficr",
    "satisfaction",
    "empathy",
    "persona",
    "anthropomorphic",
)
_REPORT: AssetArgs = dict(key_prefix=["dialogue"], group_name="reports", code_version=LOGIC_VERSION)


def _ins(*names: str) -> dict[str, AssetIn]:
    return {name: AssetIn(key=["dialogue", name]) for name in names}


def _finish(
    df: pd.DataFrame, slate: SlateAccess, *, flag: str | None = "target", by_values: bool = False, **metadata: Any
) -> Output[pd.DataFrame]:
    """The table with its baseline flags and creation time; `by_values`: its data version from values_version (a
    large table no asset reads, large_table_output) instead of content_version."""
    if flag and len(df):
        df = flag_targets(df, slate.slate, flag)
    df["created_at"] = now_utc()
    note = baseline_note(df, flag) if flag else "rows name targets in pairs; see is_baseline_* columns"
    return (large_table_output if by_values else table_output)(df, baselines=note, **metadata)


# .s: every row records the bootstrap's seed (the intervals themselves are as they were)
_SEED_RECORDED: AssetArgs = {**_REPORT, "code_version": f"{LOGIC_VERSION}.s"}


@asset(**_SEED_RECORDED, ins=_ins("dialogue_scores", "dialogue_turns"))
def leaderboard_intervals(
    slate: SlateAccess, reports: ReportAccess, dialogue_scores: pd.DataFrame, dialogue_turns: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Every leaderboard mean with its 95% bootstrap interval, resampled by dialogue (seeded)."""
    df = analysis.leaderboard_intervals(
        dialogue_scores,
        dialogue_turns,
        resamples=slate.slate.bootstrap_resamples,
        seed=slate.slate.seed,
        store=reports.cache,
    )
    plot = ""
    if len(df):
        shown, note = targets_shown(df[df["metric"] == "empathy"], "value")
        title = f"empathy with interval, by pool{note}"
        png = cached_png(
            reports.cache,
            flag_targets(shown, slate.slate),
            lambda rows: interval_png(rows, "empathy", title=title),
            "interval_png",
            title,
        )
        plot = png_markdown(png, "Empathy with 95% intervals")
    table = interval_cells(df, INTERVAL_PREVIEW) if len(df) else pd.DataFrame()
    preview = MetadataValue.md(table.to_markdown(index=False) if len(table) else "_no rows_")
    return _finish(df, slate, intervals=preview, plot=MetadataValue.md(plot), resamples=slate.slate.bootstrap_resamples)


# .1: the ChatSEED columns in id order, so a pair's figures depend on the pool's ChatSEEDs, not on which targets
# there are (the rows' order before); the pairwise and rank intervals of a pool change with it
_SEEDS_IN_ID_ORDER: AssetArgs = {**_REPORT, "code_version": f"{LOGIC_VERSION}.1"}


@asset(**_SEEDS_IN_ID_ORDER, ins=_ins("dialogue_scores"))
def pairwise_comparisons(
    slate: SlateAccess, reports: ReportAccess, dialogue_scores: pd.DataFrame
) -> Output[pd.DataFrame]:
    """For each pair of targets on the same ChatSEEDs: the paired bootstrap difference and its interval."""
    df = analysis.pairwise_comparisons(
        dialogue_scores, resamples=slate.slate.bootstrap_resamples, seed=slate.slate.seed, store=reports.cache
    )
    baselines = baseline_targets(slate.slate)
    plot, drawn = "", 0
    if len(df):
        png, drawn = cached_pairwise_png(reports.cache, df, "empathy", baselines)
        plot = png_markdown(png, "Empathy differences")
    if len(df):
        df["is_baseline_pair"] = df["target_a"].isin(baselines) | df["target_b"].isin(baselines)
        risky = [t.id for t in slate.slate.targets if slate.slate.self_preference_risk(t.id)]
        df["self_preference_risk"] = df["target_a"].isin(risky) | df["target_b"].isin(risky)
    return _finish(
        df,
        slate,
        flag=None,
        by_values=True,  # 90,900 rows at 100 targets: content_version's text took a second; nothing reads the table
        plot=MetadataValue.md(plot),
        plot_pairs=f"{drawn} of {int(((df['metric'] == 'empathy') & df['diff'].notna()).sum()) if len(df) else 0}",
        significant=int(df["excludes_zero"].sum()) if len(df) else 0,
        significant_adjusted=int(df["significant_adjusted"].sum()) if len(df) else 0,
        adjusted_over="every pair of one pool and metric (Holm)",
    )


@asset(**_SEEDS_IN_ID_ORDER, ins=_ins("dialogue_scores"))
def rank_intervals(slate: SlateAccess, reports: ReportAccess, dialogue_scores: pd.DataFrame) -> Output[pd.DataFrame]:
    """Each target's rank per pool and metric with a 95% bootstrap interval (ChatSEEDs resampled together)."""
    df = ranks.rank_intervals(
        dialogue_scores, resamples=slate.slate.bootstrap_resamples, seed=slate.slate.seed, store=reports.cache
    )
    empathy = df[df["metric"] == "empathy"].sort_values(["pool", "rank"]) if len(df) else df
    preview = (
        empathy[["pool", "target", "value", "rank", "rank_low", "rank_high"]].to_markdown(index=False)
        if len(empathy)
        else "_no rows_"
    )
    return _finish(df, slate, empathy_ranks=MetadataValue.md(preview), resamples=slate.slate.bootstrap_resamples)


@asset(**_REPORT, ins=_ins("chat_seeds", "dialogue_scores"))
def sequential_decisions(
    slate: SlateAccess, chat_seeds: pd.DataFrame, dialogue_scores: pd.DataFrame
) -> Output[pd.DataFrame]:
    """The sequential design's comparisons (docs/eyt-metrics.md#stopping-when-the-ranking-is-settled): for each pool,
    metric with a margin and pair of targets, the verdict and the ChatSEEDs it was decided at; empty when the slate
    does not use the design."""
    current = slate.slate
    if current.sequential is None or not current.sequential.enabled:
        df = pd.DataFrame(columns=list(sequential_plan.DECISION_COLUMNS))
    else:
        targets = [t.id for t in current.eyt_targets]
        df = sequential_plan.decisions(chat_seeds, dialogue_scores, targets, current.sequential, current.seed)
    baselines = baseline_targets(current)
    df["is_baseline_pair"] = df["target_a"].isin(baselines) | df["target_b"].isin(baselines)
    early = int(df["decided_early"].sum()) if len(df) else 0
    return _finish(
        df,
        slate,
        flag=None,
        decided_early=early,
        comparisons=len(df),
        error_guarantee="family-wise, per pool and metric (every pair of one pool and metric)",
    )


@asset(**_REPORT, ins=_ins("chat_seeds", "dialogue_turns", "judge_verdicts", "final_intent_verdicts"))
def sequential_savings(
    slate: SlateAccess,
    chat_seeds: pd.DataFrame,
    dialogue_turns: pd.DataFrame,
    judge_verdicts: pd.DataFrame,
    final_intent_verdicts: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Per target and pool under the sequential design: the dialogues played and not played, and the USD the unplayed
    ones would have cost at the cell's mean per played dialogue (target, simulator and judges); empty when the slate
    does not use the design."""
    current = slate.slate
    if current.sequential is None or not current.sequential.enabled:
        df = pd.DataFrame(columns=list(sequential_plan.SAVINGS_COLUMNS))
    else:
        targets = [t.id for t in current.eyt_targets]
        df = sequential_plan.savings(
            chat_seeds,
            dialogue_turns,
            targets,
            current.seed,
            lambda target: not current.target(target).is_baseline,
            remote_simulator=not current.simulator.is_baseline,
            remote_judges=sum(not j.is_baseline for j in current.judges),
            judged=(judge_verdicts, final_intent_verdicts),
        )
    saved = float(df["saved_usd_estimate"].sum()) if len(df) else 0.0
    calls = float(df["saved_calls_estimate"].sum()) if len(df) else 0.0
    not_played = int(df["not_played"].sum()) if len(df) else 0
    return _finish(df, slate, not_played=not_played, saved_usd_estimate=saved, saved_calls_estimate=calls)


@asset(**_REPORT, ins=_ins("dialogue_scores", "simulator_audit"))
def simulator_audit_effect(
    slate: SlateAccess, dialogue_scores: pd.DataFrame, simulator_audit: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Every metric with and without the dialogues the simulator audit flagged, and whether a rank moves."""
    df = audit_effect.audit_effect(dialogue_scores, simulator_audit)
    moved = df[df["rank_changed"].astype(bool)] if len(df) else df
    return _finish(
        df,
        slate,
        rank_changes=len(moved),
        metrics_with_rank_changes=", ".join(sorted(moved["metric"].unique())) if len(moved) else "none",
    )


@asset(**_REPORT, ins=_ins("judge_verdicts", "dialogue_turns"))
def alpha_sensitivity(
    slate: SlateAccess, reports: ReportAccess, judge_verdicts: pd.DataFrame, dialogue_turns: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Paper Table 8: weighted scores for alpha in {0.05, 0.10, 0.15}, early minus late raw scores (the
    warm-up effect) and whether any two targets swap ranks across the sweep."""
    dims = turn_dimension_scores(judge_verdicts, slate.slate.judge_combine)
    alphas = tuple(sorted({*ALPHA_SWEEP, slate.slate.alpha}))
    df = analysis.alpha_sensitivity(dims, dialogue_lengths(dialogue_turns), alphas, store=reports.cache)
    plot = ""
    if len(df):
        shown, note = targets_shown(df, "weighted")
        title = f"Weighted score by alpha{note}"
        png = cached_png(
            reports.cache,
            flag_targets(shown, slate.slate),
            lambda rows: alpha_sweep_png(rows, title=title),
            "alpha_sweep_png",
            title,
        )
        plot = png_markdown(png, "Weighted scores by alpha")
    return _finish(df, slate, plot=MetadataValue.md(plot), rank_flips=int(df["rank_flip"].sum()) if len(df) else 0)


@asset(**_REPORT, ins=_ins("judge_verdicts"))
def turn_curves(slate: SlateAccess, reports: ReportAccess, judge_verdicts: pd.DataFrame) -> Output[pd.DataFrame]:
    """Mean score per turn index, per target, pool and dimension (0-100): the warm-up curve."""
    df = analysis.turn_curves(turn_dimension_scores(judge_verdicts, slate.slate.judge_combine))
    plot = ""
    if len(df):
        shown, note = targets_shown(df, "mean_score")
        title = f"Mean judge score by turn{note}"
        png = cached_png(
            reports.cache,
            flag_targets(shown, slate.slate),
            lambda rows: turn_curves_png(rows, title=title),
            "turn_curves_png",
            title,
        )
        plot = png_markdown(png, "Mean score by turn")
    return _finish(df, slate, plot=MetadataValue.md(plot))


@asset(**_REPORT, ins=_ins("dialogue_scores"))
def trajectory(slate: SlateAccess, dialogue_scores: pd.DataFrame) -> Output[pd.DataFrame]:
    """Paper Table 13: drift, directional alignment, FICR, satisfaction and mean turns per target and pool."""
    return _finish(analysis.trajectory(dialogue_scores), slate)


@asset(**_REPORT, ins=_ins("leaderboard"))
def persona_source_comparison(slate: SlateAccess, leaderboard: pd.DataFrame) -> Output[pd.DataFrame]:
    """Paper Table 5: family-level means of every headline metric per pool and the pool-to-pool shift."""
    families = {t.id: t.family for t in slate.slate.targets}
    df = analysis.persona_source_comparison(leaderboard, families, (POOLS[0], POOLS[1]))
    baseline_families = sorted({slate.slate.target(t).family for t in baseline_targets(slate.slate)})
    df["is_baseline_family"] = df["family"].isin(baseline_families) if len(df) else []
    return _finish(df, slate, flag=None)


@asset(**_REPORT, ins=_ins("leaderboard"))
def thinking_ablation(
    context: AssetExecutionContext, slate: SlateAccess, leaderboard: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Paper Table 7: think minus non-think for every reasoning pair declared in the slate."""
    pairs = [(p.name, p.think, p.non_think) for p in slate.slate.reasoning_pairs]
    if not pairs:
        context.log.info("the slate declares no reasoning_pairs; the table is empty")
    df = analysis.thinking_ablation(leaderboard, pairs, slate.slate.thinking_highlight)
    return _finish(df, slate, flag="think_target", highlighted=int(df["highlighted"].sum()) if len(df) else 0)
