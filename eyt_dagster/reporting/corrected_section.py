"""The report's judge-made headline numbers under correction (docs/reports.md): the leaderboard's Empathy, Persona,
Anthropomorphic, FICR and satisfaction replaced by the figure `dialogue.judge_corrected` says to show (with its
marker, eyt_dagster/eyt_bench/shown_figures.py), and the section "Rankings under correction" from
`dialogue.corrected_rank_intervals` and `dialogue.corrected_pairwise`. A warehouse without judge_corrected leaves
the report as it was. Pure logic over frames already read from the warehouse."""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from eyt_dagster.eyt_bench import corrected_rankings as cr
from eyt_dagster.eyt_bench import shown_figures as sf
from eyt_dagster.reporting.html_report import Marks, Section

RANKINGS_TITLE = "Rankings under correction"
# the tables this module reads, as the report reads them from the dialogue schema
TABLES = ("judge_corrected", "corrected_rank_intervals", "corrected_pairwise")


def _cell_figures(df: pd.DataFrame, figures: dict[tuple[str, str, str], sf.ShownFigure]) -> list[sf.ShownFigure]:
    """The figures of the table's rows and judge-made columns."""
    wanted = [m for m in sf.JUDGE_MADE if m in df.columns]
    found = (figures.get((str(t), str(p), m)) for t, p in zip(df["target"], df["pool"]) for m in wanted)
    return [f for f in found if f is not None]


def shown_leaderboard(
    df: pd.DataFrame, figures: dict[tuple[str, str, str], sf.ShownFigure]
) -> tuple[pd.DataFrame, Marks, dict[str, str], str]:
    """The leaderboard table (its metric columns `X`, and `X_ci_low` / `X_ci_high` when present) with every
    judge-made number the figure to show: (the table, each number's marker by (row position, column), the
    judge-made columns' headers, the legend). With no figures, the table as it came and nothing else."""
    among = _cell_figures(df, figures)
    if not among:
        return df, {}, {}, ""
    out = df.copy()
    marks: Marks = {}
    for i, (target, pool) in enumerate(zip(df["target"], df["pool"])):
        for metric in (m for m in sf.JUDGE_MADE if m in df.columns):
            figure = figures.get((str(target), str(pool), metric))
            if figure is None:
                continue
            out.iloc[i, out.columns.get_loc(metric)] = figure.value
            for column, value in ((f"{metric}_ci_low", figure.low), (f"{metric}_ci_high", figure.high)):
                if column in out.columns:
                    out.iloc[i, out.columns.get_loc(column)] = value
            if mark := sf.marker(figure, among):
                marks[(i, metric)] = (mark, figure.title)
    note = sf.header_note(among)
    labels = {m: f"{m}{note}" for m in sf.JUDGE_MADE if m in df.columns} if note else {}
    return out, marks, labels, sf.legend(among)


def shown_intervals(intervals: pd.DataFrame, figures: dict[tuple[str, str, str], sf.ShownFigure]) -> pd.DataFrame:
    """leaderboard_intervals (long) with each judge-made row's value and bounds the figure to show (for the plots)."""
    if not figures or intervals.empty:
        return intervals
    out = intervals.copy()
    for i, key in enumerate(zip(intervals["target"].astype(str), intervals["pool"].astype(str), intervals["metric"])):
        figure = figures.get(key)
        if figure is not None:
            for column, value in (("value", figure.value), ("ci_low", figure.low), ("ci_high", figure.high)):
                out.iloc[i, out.columns.get_loc(column)] = value
    return out


def plot_caption(metric: str, figures: dict[tuple[str, str, str], sf.ShownFigure]) -> str:
    """The caption of a leaderboard plot of `metric`: which of its figures are corrected."""
    caption = f"{metric} with 95% intervals"
    mine = [f for (_, _, m), f in figures.items() if m == metric]
    if not mine:
        return caption
    corrected = sum(f.corrected for f in mine)
    if not corrected:
        return f"{caption} ({sf.JUDGE_ONLY})"
    if corrected == len(mine):
        return f"{caption}, every cell {sf.CORRECTED} ({sf.CORRECTED_MARK} in the table)"
    return (
        f"{caption}: {corrected} of {len(mine)} cells {sf.CORRECTED} ({sf.CORRECTED_MARK} in the table), "
        f"the others {sf.JUDGE_ONLY}"
    )


def _number(value: object) -> str:
    number = float(value)  # type: ignore[arg-type]
    if math.isnan(number):
        return "\u2013"
    return f"{number:.3f}" if abs(number) <= 1 else f"{number:.1f}"


def _verdict(verdict: object, a: str, b: str) -> str:
    """A stored verdict (corrected_rankings' a_better / b_better / no_clear_difference) in words."""
    return {cr.A_BETTER: f"{a} better", cr.B_BETTER: f"{b} better"}.get(str(verdict), "no clear difference")


def rank_sentences(ranks: pd.DataFrame) -> list[str]:
    """One sentence per target whose rank changes under correction (corrected_rankings.ranking_changes, the same
    sentences the table's materialisation metadata holds)."""
    return [f"{sentence}." for sentence in cr.ranking_changes(ranks)]


def pairwise_sentences(pairs: pd.DataFrame) -> list[str]:
    """One sentence per pair whose verdict changes under correction."""
    if pairs.empty:
        return []
    out = []
    changed = pairs[pairs["changed"].astype(bool)].sort_values(["pool", "metric", "target_a", "target_b"])
    for r in changed.to_dict("records"):
        a, b = str(r["target_a"]), str(r["target_b"])
        judge = _verdict(r["judge_verdict"], a, b)
        corrected = _verdict(r["corrected_verdict"], a, b)
        out.append(
            f"{r['pool']}, {cr.METRIC_TITLES.get(str(r['metric']), str(r['metric']))}, {a} against {b}: "
            f"judge only {judge} "
            f"(difference {_number(r['judge_diff'])} [{_number(r['judge_low'])}, {_number(r['judge_high'])}]), "
            f"corrected {corrected} (difference {_number(r['corrected_diff'])} "
            f"[{_number(r['corrected_low'])}, {_number(r['corrected_high'])}])."
        )
    return out


def _groups(frame: pd.DataFrame) -> set[tuple[str, str]]:
    if frame.empty:
        return set()
    return {(str(p), str(m)) for p, m in zip(frame["pool"], frame["metric"])}


def _listed(groups: Iterable[tuple[str, str]]) -> str:
    return ", ".join(f"{p} x {m}" for p, m in sorted(groups))


def rankings_section(tables: dict[str, pd.DataFrame]) -> Section | None:
    """ "Rankings under correction", or None when the warehouse has no judge_corrected table (an older one)."""
    corrected = tables.get("judge_corrected")
    if corrected is None or corrected.empty:
        return None
    ranks = tables.get("corrected_rank_intervals", pd.DataFrame())
    pairs = tables.get("corrected_pairwise", pd.DataFrame())
    every = _groups(corrected)
    compared = _groups(ranks) | _groups(pairs)
    description = (
        "The targets' ranks and paired verdicts recomputed from the corrected figures, for each pool x metric "
        "whose cells all show a corrected figure (dialogue.corrected_rank_intervals, dialogue.corrected_pairwise); "
        "elsewhere the rankings are the judge's alone."
    )
    if not compared:
        note = (
            f"The rankings are the judge's alone: in none of the {len(every)} pool x metric groups does every cell "
            f"have enough human-labelled dialogues. Add labels with `{sf.HOW_TO_LABEL}`."
        )
        return Section(RANKINGS_TITLE, description, None, note=note)
    said = [
        f"Compared: {len(compared)} of {len(every)} pool x metric groups had every cell labelled ({_listed(compared)})."
    ]
    changes = rank_sentences(ranks) + pairwise_sentences(pairs)
    said += changes or ["No ranking and no paired verdict changes under correction."]
    moved = ranks[ranks["rank_changed"].astype(bool)] if len(ranks) else ranks
    keep = [
        c
        for c in (
            "pool",
            "metric",
            "target",
            "judge_rank",
            "judge_rank_low",
            "judge_rank_high",
            "corrected_rank",
            "corrected_rank_low",
            "corrected_rank_high",
        )
        if c in moved.columns
    ]
    table = moved[keep].sort_values(["pool", "metric", "corrected_rank"]) if len(moved) else None
    return Section(RANKINGS_TITLE, description + "\n\n" + "\n\n".join(said), table)
