"""What the shareable HTML report contains: the tables in order, their explanations and their plots.
Pure logic over DataFrames already read from the warehouse (the `eyt report` command does the reading)."""

from __future__ import annotations

import pandas as pd

from eyt_dagster.eyt_bench import shown_figures
from eyt_dagster.reporting import corrected_section, plots
from eyt_dagster.reporting.html_report import Marks, Section

# (table, title, description) in report order; every one is a table in the warehouse's dialogue schema.
REPORT_TABLES: tuple[tuple[str, str, str], ...] = (
    (
        "leaderboard",
        "Leaderboard",
        "Headline metrics per target and pool (docs/eyt-metrics.md) with 95% bootstrap intervals resampled by dialogue. "
        "Accuracies and FICR are shares; satisfaction and the three dimensions are on 0-100.",
    ),
    (
        "pairwise_comparisons",
        "Paired comparisons",
        "For each pair of targets on the same ChatSEEDs: the mean per-dialogue difference (a - b), its 95% paired "
        "bootstrap interval and standard error, the two-sided p-value (normal approximation) and that p-value "
        "Holm-adjusted over every pair of the same pool and metric. Read significant_adjusted (adjusted p < 0.05), "
        "not the interval alone: with many targets, some unadjusted intervals exclude zero by chance. mde_80 is the "
        "smallest true difference these ChatSEEDs would detect 80% of the time (two-sided 5%, unadjusted).",
    ),
    (
        "rank_intervals",
        "Ranks with intervals",
        "Each target's rank per pool and metric (1 = best; drift lowest first; ties share the best rank) and its 95% "
        "bootstrap interval, the ChatSEEDs every target played resampled together. Two targets whose intervals "
        "overlap may swap places on another draw of ChatSEEDs.",
    ),
    (
        "simulator_audit_effect",
        "Simulator audit: with and without flagged dialogues",
        "The simulator audit flags dialogues where the user simulator leaked the hidden latent intent, answered as "
        "the assistant, repeated itself, sent an empty turn or ended at the first chance (dialogue.simulator_audit), "
        "and, when the slate names a simulator audit model, where that model found a leak or a role flip (the flags "
        "model_leak and model_role_flip). "
        "Per pool, metric and target: the value over all dialogues and over the unflagged ones, each with its rank; "
        "rank_changed says whether leaving them out reorders the targets.",
    ),
    (
        "trajectory",
        "Trajectory (paper Table 13)",
        "Intent drift (Eq. 1), directional alignment (Spearman of turn index vs similarity to the final intent), "
        "FICR and satisfaction.",
    ),
    (
        "alpha_sensitivity",
        "Warm-up weight sensitivity (paper Table 8)",
        "Weighted scores for each alpha, early (turns 1-2) and late (turns 3+) raw means and their difference; "
        "rank_flip marks a pool x dimension where two targets swap order across the sweep.",
    ),
    ("turn_curves", "Score by turn", "Mean judge score per turn index (0-100)."),
    (
        "persona_source_comparison",
        "Persona source comparison (paper Table 5)",
        "Family-level means per persona pool and the shift from the first pool to the second.",
    ),
    (
        "thinking_ablation",
        "Thinking on/off (paper Table 7)",
        "Think minus non-think for the reasoning pairs declared in the slate; highlighted marks objective "
        "metrics whose difference reaches the slate's threshold.",
    ),
    (
        "judge_agreement",
        "Judge agreement",
        "Krippendorff's alpha across the slate's judges, and the share of "
        "dialogues whose completion vote was unanimous.",
    ),
    (
        "cross_judge_ablation",
        "Cross-judge ablation (paper Tables 9/14)",
        "Replacement judge minus primary judges on a stratified subsample; ranking rows give Kendall tau and "
        "Spearman rho between the two judges' target rankings per pool.",
    ),
    (
        "human_alignment",
        "Judge-human alignment (paper Table 15)",
        "The primary judges against the human annotations named in the slate.",
    ),
)
DROP = ("created_at",)
CORRECTABLE = ("leaderboard", "trajectory")  # per target x pool tables of judge-made numbers
RANKINGS_AFTER = "rank_intervals"  # the section "Rankings under correction" follows this one


def wide_intervals(intervals: pd.DataFrame) -> pd.DataFrame:
    """leaderboard_intervals (long) to one row per target x pool with X, X_ci_low, X_ci_high columns."""
    if intervals.empty:
        return pd.DataFrame(columns=["target", "pool"])
    # dropna=False: a metric with no value in any cell (no dialogue long enough for directional alignment) keeps
    # its columns, empty, instead of vanishing from the pivot
    wide = intervals.pivot_table(
        index=["target", "pool"], columns="metric", values=["value", "ci_low", "ci_high"], dropna=False
    )
    out = pd.DataFrame(index=wide.index)
    for metric in intervals["metric"].unique():
        for column, name in (("value", metric), ("ci_low", f"{metric}_ci_low"), ("ci_high", f"{metric}_ci_high")):
            out[name] = wide[(column, metric)] if (column, metric) in wide.columns else float("nan")
    return out.reset_index()


def leaderboard_with_intervals(board: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard's identity and flag columns next to every metric with its interval."""
    keep = [
        c
        for c in ("target", "pool", "is_baseline", "self_preference_risk", "n_dialogues", "n_errors")
        if c in board.columns
    ]
    return board[keep].merge(wide_intervals(intervals), on=["target", "pool"], how="left")


def build_sections(tables: dict[str, pd.DataFrame]) -> list[Section]:
    """One section per report table present, with the plots that go with it; with dialogue.judge_corrected, the
    leaderboard's judge-made numbers are the figures it says to show (reporting/corrected_section.py), and the
    section "Rankings under correction" follows the rankings."""
    sections = []
    figures = shown_figures.figures(tables.get("judge_corrected"))
    rankings = corrected_section.rankings_section(tables)
    for name, title, description in REPORT_TABLES:
        if name not in tables:
            continue
        df = tables[name].drop(columns=[c for c in DROP if c in tables[name].columns])
        images: list[tuple[str, bytes]] = []
        note = "" if len(df) else "No rows: the slate does not configure this analysis, or nothing is materialised yet."
        marks: Marks = {}
        labels: dict[str, str] = {}
        if name == "leaderboard" and "leaderboard_intervals" in tables:
            intervals = tables["leaderboard_intervals"].merge(
                df[["target", "pool", "is_baseline"]], on=["target", "pool"]
            )
            intervals = corrected_section.shown_intervals(intervals, figures)
            df = leaderboard_with_intervals(df, tables["leaderboard_intervals"])
            images = [
                (corrected_section.plot_caption(m, figures), plots.interval_png(intervals, m))
                for m in ("empathy", "ficr")
            ]
        if name in CORRECTABLE and figures:
            df, marks, labels, legend = corrected_section.shown_leaderboard(df, figures)
            description = f"{description}\n\n{legend}" if legend else description
        elif name == "pairwise_comparisons" and len(df):
            images = [("Empathy: paired differences", plots.pairwise_png(df, "empathy"))]
        elif name == "alpha_sensitivity" and len(df):
            images = [("Weighted score by alpha", plots.alpha_sweep_png(df))]
        elif name == "turn_curves" and len(df):
            images = [("Mean score by turn", plots.turn_curves_png(df))]
        sections.append(
            Section(
                title=title, description=description, table=df, images=images, note=note, labels=labels, marks=marks
            )
        )
        if name == RANKINGS_AFTER and rankings is not None:
            sections.append(rankings)
            rankings = None
    return sections + ([rankings] if rankings is not None else [])


def interval_cells(intervals: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    """One row per target x pool (in groupby order), each metric as text 'value [low, high]', for a markdown
    preview. The rows' values are read in one pass over the columns (not a lookup per cell and metric: 1,600 of
    them at 100 targets took a second)."""
    cells = intervals.groupby(["target", "pool"]).size().index
    wanted = intervals[intervals["metric"].isin(metrics)]
    text: dict[tuple[object, object], dict[object, str]] = {}
    columns = (wanted[c].to_numpy() for c in ("target", "pool", "metric", "value", "ci_low", "ci_high"))
    for target, pool, metric, v, lo, hi in zip(*columns):
        digits = 3 if abs(v) <= 1 else 1
        text.setdefault((target, pool), {})[metric] = f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
    rows = []
    for target, pool in cells:
        row = {"target": target, "pool": pool}
        found = text.get((target, pool), {})
        for metric in metrics:
            if metric in found:
                row[metric] = found[metric]
        rows.append(row)
    return pd.DataFrame(rows)
