"""The report's model-card opening and its SpeechEQ sections (see docs/reports.md): pure logic over frames
already read from the warehouse, like eyt_dagster/reporting/report_sections.py for EYT-Bench.

Interval columns of the SpeechEQ tables (`X_low`, `X_high`) are renamed `X_ci_low`, `X_ci_high` so the HTML
table shows them as one "X [low, high]" cell.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import pandas as pd

from eyt_dagster.core import explorer_links
from eyt_dagster.eyt_bench.shown_figures import JUDGE_ONLY, ShownFigure, legend, marker, pooled
from eyt_dagster.reporting.html_report import Marks, Section
from eyt_dagster.reporting.model_card_plots import CARDS_PLOT_TITLE, CARDS_PLOT_TITLE_JUDGE_ONLY, model_cards_png
from eyt_dagster.reporting.model_cards import POOLED
from eyt_dagster.reporting.plots import distribution_png
from eyt_dagster.reporting.seq_plots import sequential_direct_png, subscale_accuracy_png
from eyt_dagster.speech_eq.seq_tables import COHORT_KINDS, conditioning_table, seq_cohort_note, shortcut_notes

# Section titles in report order (the browser test checks each one is on the page).
CARDS_TITLE = "Model cards"
SPEECH_TITLES = (
    "SEQ leaderboard",
    "SpeechEQ subscales and composites",
    "Sequential vs direct inference",
    "Position bias and parse failures",
    "Persona conditioning",
    "SEQ and the human ranking",
    "SpeechEQ build report",
)
# The card table, readable on one page: the headline scores (each with its 95% interval) in one table, what the
# calls cost and which model answered in a second; every column of a card is in reports.model_cards.
CARD_SCORES: tuple[str, ...] = (
    "target",
    *(f"eyt_{POOLED}_{m}" for m in ("explicit_acc", "emotion_acc", "ficr", "empathy")),
    *(f"speech_{m}" for m in ("acc1", "acc_traj")),
    "speech_seq",
)
# the card table's judge-made columns (pooled over the pools): corrected where every pool of the model is
CARD_JUDGE_MADE: dict[str, str] = {
    c: c.removeprefix(f"eyt_{POOLED}_") for c in CARD_SCORES if c.removeprefix(f"eyt_{POOLED}_") in ("ficr", "empathy")
}
POOLED_NOTE = (
    "Its judge-made numbers (FICR, Empathy) are pooled over the pools: a model whose every pool has a corrected "
    "figure shows the pools' corrected figures pooled (each pool weighed by its dialogues, the intervals combined "
    "as independent), the others the judge's; reports.model_cards keeps the judge's."
)
CARD_DETAILS: tuple[str, ...] = (
    "target",
    "eyt_cost_usd",
    "eyt_mean_latency_s",
    "speech_cost_usd",
    "speech_mean_latency_s",
    "model",
    "endpoint",
    "model_fingerprint",
)
CARD_LABELS: dict[str, str] = {
    "target": "model",
    f"eyt_{POOLED}_explicit_acc": "EYT explicit intent acc.",
    f"eyt_{POOLED}_emotion_acc": "EYT emotion acc.",
    f"eyt_{POOLED}_ficr": "EYT final intent completion",
    f"eyt_{POOLED}_empathy": "EYT Empathy (0-100)",
    "speech_acc1": "SpeechEQ Acc1",
    "speech_acc_traj": "SpeechEQ Acc_traj",
    "speech_seq": "SEQ",
    "eyt_cost_usd": "EYT cost (USD)",
    "eyt_mean_latency_s": "EYT latency per call (s)",
    "speech_cost_usd": "SpeechEQ cost (USD)",
    "speech_mean_latency_s": "SpeechEQ latency per call (s)",
    "model": "model name",
    "endpoint": "endpoint",
    "model_fingerprint": "settings fingerprint",
}


def _with_ci(df: pd.DataFrame, metrics: tuple[str, ...] = ("acc1", "acc2", "acc_traj")) -> pd.DataFrame:
    return df.rename(columns={f"{m}_{side}": f"{m}_ci_{side}" for m in metrics for side in ("low", "high")})


def _keep(df: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    return df[[c for c in columns if c in df.columns]]


def _card_link(base: str) -> Callable[[str], str]:
    return lambda target: base + explorer_links.leaderboard_path(target=target)


def card_section(
    cards: pd.DataFrame | None, figures: Mapping[tuple[str, str, str], ShownFigure] | None = None
) -> Section:
    """The opening section: one row per model over both benchmarks and a panel per model. `figures`: the
    leaderboard cells' judge-made figures by (target, pool, metric) (dialogue.judge_corrected); when there are any,
    a card's pooled judge-made number is the corrected one pooled where every pool of the model is corrected
    (shown_figures.pooled), marked as the leaderboard marks, and the judge's otherwise."""
    description = (
        "One row per model id across both benchmarks. EYT-Bench columns are pooled over the persona pools "
        "(per-pool values are in reports.model_cards); SpeechEQ columns are the default persona condition. "
        "A benchmark a model did not run is left empty, not zero. Costs are what the model's own calls cost; "
        "the fingerprint hashes the settings that change its answers. In the plot every dimension is on 0-1 "
        "(0-100 scores / 100, drift as 1 - drift/2, SEQ as (SEQ - 40)/120) with 95% whiskers. "
    )
    try:
        link: Callable[[str], str] | None = _card_link(explorer_links.view_url())
        description += (
            f"Each model id links to its rows in the explorer at {explorer_links.view_url()} (start it with "
            f"`eyt view` or `make view`; the address is {explorer_links.VIEW_URL_ENV})."
        )
    except ValueError as exc:
        link, description = None, description + f"No links into the explorer: {exc}."
    if cards is None or cards.empty:
        return Section(
            CARDS_TITLE,
            description,
            pd.DataFrame(),
            note="No model cards materialised yet (run the unified_reports job or `eyt run`).",
        )
    shown = cards.sort_values("target").reset_index(drop=True)
    labels = CARD_LABELS
    title = CARDS_PLOT_TITLE
    marks: Marks = {}
    if figures:
        shown, marks, legend = pooled_figures(shown, figures)
        description += f" {POOLED_NOTE} {legend}"
        if not marks:  # nothing corrected: the headers say so, as the leaderboard's do
            note = f" ({JUDGE_ONLY})"
            labels = {**CARD_LABELS, **{c: CARD_LABELS[c] + note for c in CARD_JUDGE_MADE}}
            title = CARDS_PLOT_TITLE_JUDGE_ONLY

    def pick(columns: tuple[str, ...]) -> pd.DataFrame:
        intervals = [f"{c}_ci_{side}" for c in columns for side in ("low", "high")]
        return shown[[c for c in (*columns, *intervals) if c in shown.columns]]

    return Section(
        CARDS_TITLE,
        description,
        pick(CARD_SCORES),
        images=[("Model cards", model_cards_png(shown, title=title))],
        labels=labels,
        more_tables=[("What the calls cost, and which model answered", pick(CARD_DETAILS))],
        target_link=link,
        marks=marks,
    )


def pooled_figures(
    cards: pd.DataFrame, figures: Mapping[tuple[str, str, str], ShownFigure]
) -> tuple[pd.DataFrame, Marks, str]:
    """The cards (rows in position order) with each judge-made number the pooled corrected figure where
    shown_figures.pooled gives one, each number's marker by (row position, column), and the legend."""
    out = cards.copy()
    found: dict[tuple[int, str], ShownFigure] = {}
    for i, target in enumerate(cards["target"].astype(str)):
        for column, metric in CARD_JUDGE_MADE.items():
            if column not in cards.columns:
                continue
            cells = [f for (t, _, m), f in figures.items() if t == target and m == metric]
            if not cells:  # not an EYT-Bench model of this warehouse: nothing to mark
                continue
            figure = pooled(cells)
            if figure is None:
                why = "not every pool of this model has a corrected figure"
                figure = ShownFigure(float(cards.at[i, column]), math.nan, math.nan, JUDGE_ONLY, 0, why)
            else:
                out.at[i, column] = figure.value
                for side, value in (("low", figure.low), ("high", figure.high)):
                    if f"{column}_ci_{side}" in out.columns:
                        out.at[i, f"{column}_ci_{side}"] = value
            found[(i, column)] = figure
    among = list(found.values())
    marks: Marks = {}
    for key, figure in found.items():
        if mark := marker(figure, among):
            marks[key] = (mark, figure.title)
    return out, marks, legend(among) if marks else ""


def speech_sections(tables: dict[str, pd.DataFrame]) -> list[Section]:
    """The SpeechEQ sections, from the speech report tables present (a missing one gives an empty section)."""
    board = tables.get("speech.seq_leaderboard", pd.DataFrame())
    breakdown = tables.get("speech.seq_breakdown", pd.DataFrame())
    human = tables.get("speech.seq_human_alignment", pd.DataFrame())
    build = tables.get("speech.speech_build_report", pd.DataFrame())
    contrast = tables.get("speech.contrast_scores", pd.DataFrame())
    empty = "No rows: SpeechEQ has not been run for this slate, or the table is not materialised yet."
    sections = []

    cohort = seq_cohort_note(board) if len(board) else ""
    if shortcuts := shortcut_notes(board):
        cohort += "\nShortcut (a rule, not a model, beats chance by a wide margin):\n" + "\n".join(shortcuts)
    kinds = "; ".join(f"{k}: {v}" for k, v in COHORT_KINDS.items())
    sections.append(
        Section(
            SPEECH_TITLES[0],
            "Per target and persona condition: Acc1, Acc2 and Acc_traj with 95% item-bootstrap intervals, and SEQ "
            "(100 + 15 z, clipped to 40-160) relative to the condition's cohort, named in seq_cohort. Cohort kinds: "
            f"{kinds}. Chance is a reference row.",
            _keep(
                _with_ci(board),
                (
                    "target",
                    "condition",
                    "is_baseline",
                    "speech_input",
                    "headline_inference",
                    "n_items",
                    "n_error_items",
                    "acc1",
                    "acc1_ci_low",
                    "acc1_ci_high",
                    "acc2",
                    "acc2_ci_low",
                    "acc2_ci_high",
                    "acc_traj",
                    "acc_traj_ci_low",
                    "acc_traj_ci_high",
                    "seq",
                    "seq_cohort",
                    "seq_cohort_kind",
                    "cost_per_100_queries",
                    "mean_latency_s",
                    "tokens_per_s",
                ),
            )
            if len(board)
            else pd.DataFrame(),
            note=cohort if len(board) else empty,
        )
    )

    images = []
    if len(breakdown):
        composites = breakdown[breakdown["level"] == "composite"].assign(level="subscale")  # same bar layout
        images = [
            ("Acc_traj per subscale", subscale_accuracy_png(breakdown)),
            ("Acc1 per subscale", subscale_accuracy_png(breakdown, "acc1")),
            ("Acc_traj per composite", subscale_accuracy_png(composites, title="Acc_traj per composite")),
        ]
    sections.append(
        Section(
            SPEECH_TITLES[1],
            "Accuracy per EQ-i subscale and composite (paper Figures 2-3), with 95% intervals.",
            _keep(
                _with_ci(breakdown),
                (
                    "target",
                    "condition",
                    "is_baseline",
                    "level",
                    "display_name",
                    "composite_name",
                    "n_items",
                    "acc1",
                    "acc1_ci_low",
                    "acc1_ci_high",
                    "acc2",
                    "acc2_ci_low",
                    "acc2_ci_high",
                    "acc_traj",
                    "acc_traj_ci_low",
                    "acc_traj_ci_high",
                    "contextual_amnesia",
                ),
            )
            if len(breakdown)
            else pd.DataFrame(),
            images=images,
            note="" if len(breakdown) else empty,
        )
    )

    sections.append(
        Section(
            SPEECH_TITLES[2],
            "Round 2 asked after the model's own round-1 choice (sequential) against round 2 asked with the correct "
            "turn-4 clip as history (direct); sequential_direct_delta is direct minus sequential (paper Figure 3).",
            _keep(
                board,
                (
                    "target",
                    "condition",
                    "is_baseline",
                    "acc2",
                    "acc2_direct",
                    "acc_traj",
                    "acc_traj_direct",
                    "sequential_direct_delta",
                    "contextual_amnesia",
                ),
            )
            if len(board)
            else pd.DataFrame(),
            images=[("Round-2 accuracy, direct minus sequential, per subscale", sequential_direct_png(breakdown))]
            if len(breakdown)
            else [],
            note="" if len(board) else empty,
        )
    )

    sections.append(
        Section(
            SPEECH_TITLES[3],
            "Share of items whose chosen position changed when the two options were swapped (position bias), and "
            "the share of replies that did not parse (counted as wrong answers).",
            _keep(board, ("target", "condition", "is_baseline", "position_bias_rate", "parse_failure_rate", "queries"))
            if len(board)
            else pd.DataFrame(),
            note="" if len(board) else empty,
        )
    )

    conditioning = conditioning_table(board) if len(board) else pd.DataFrame()
    sections.append(
        Section(
            SPEECH_TITLES[4],
            "Acc_traj under each persona condition, and SEQ with every condition placed on the default condition's "
            "cohort scale so that columns compare (paper Figure 4).",
            conditioning,
            note="" if len(conditioning) else empty,
        )
    )

    sections.append(
        Section(
            SPEECH_TITLES[5],
            "Spearman rho of each metric with the human ranking named in the slate (paper Table 4).",
            human,
            note="" if len(human) else "No human ranking configured (speech.evaluation.human_ranking).",
        )
    )

    build_table = build.copy()
    if len(build_table) and {"items", "discarded"} <= set(build_table.columns):
        attempted = build_table["items"] + build_table["discarded"]
        build_table["discard_rate"] = (build_table["discarded"] / attempted.where(attempted > 0)).astype(float)
    plots = []
    if len(contrast):
        plots.append(
            (
                "Contrast score (0-8), every attempt",
                distribution_png(contrast, "total", "subscale", title="Contrast score, every attempt"),
            )
        )
        for gap in ("gap_pitch", "gap_rate"):
            if gap in contrast.columns:
                plots.append((f"{gap} per subscale", distribution_png(contrast, gap, "subscale", title=gap)))
    sections.append(
        Section(
            SPEECH_TITLES[6],
            "Per subscale: scenarios, items built, tone instructions rejected as bland, pairs regenerated and "
            "discarded (discard_rate = discarded / (items + discarded)), and the mean contrast score and feature "
            "gaps of the accepted pairs; the plots show the contrast distributions over every attempt.",
            build_table,
            images=plots,
            note="" if len(build_table) else empty,
        )
    )
    return [_drop_created(s) for s in sections]


def _drop_created(section: Section) -> Section:
    if section.table is not None and "created_at" in section.table.columns:
        section.table = section.table.drop(columns="created_at")
    return section
