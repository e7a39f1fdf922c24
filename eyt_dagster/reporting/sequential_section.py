"""The report's section on the sequential design ("Stopped when settled"): per pool, every comparison's verdict in
words, at how many dialogues it was decided and whether early, its interval; per target, the dialogues played of
the pool's N and the USD the unplayed ones would have cost. Absent when the slate does not use the design
(dialogue.sequential_decisions has no rows)."""

from __future__ import annotations

import pandas as pd

from eyt_dagster.core.baseline_text import REFERENCE_POINTS
from eyt_dagster.eyt_bench.sequential_words import GUARANTEE, early_words, usd, verdict_words
from eyt_dagster.reporting.html_report import Section

TITLE = "Stopped when settled"
COMPARISON_COLUMNS = [
    "metric",
    "target_a",
    "target_b",
    "verdict_words",
    "decided_items",
    "early",
    "diff",
    "ci_low",
    "ci_high",
    "margin",
    "played_a",
    "played_b",
    "is_baseline_pair",
]
SAVINGS_COLUMNS = [
    "target",
    "dialogues_played",
    "not_played",
    "spent",
    "saved",
    "saved_calls",
    "is_baseline",
    "self_preference_risk",
]
LABELS = {
    "verdict_words": "verdict",
    "decided_items": "decided at (dialogues)",
    "early": "decided early",
    "diff": "diff (a - b)",
    "played_a": "a played",
    "played_b": "b played",
    "is_baseline_pair": "baseline pair",
    "dialogues_played": "dialogues played of N",
    "not_played": "not played",
    "spent": "spent (USD)",
    "saved": "saved, estimated (USD)",
    "saved_calls": "calls saved, estimated",
}


def comparisons(decisions: pd.DataFrame) -> pd.DataFrame:
    """One pool's comparisons as the report shows them (verdict and early in words)."""
    df = decisions.reset_index(drop=True)
    df["verdict_words"] = [
        verdict_words(v, u, n) for v, u, n in zip(df["verdict"], df["undecided_at_n"], df["n_total"], strict=True)
    ]
    df["early"] = [early_words(e) for e in df["decided_early"]]
    return df[[c for c in COMPARISON_COLUMNS if c in df.columns]].sort_values(["metric", "target_a", "target_b"])


def played(savings: pd.DataFrame) -> pd.DataFrame:
    """One pool's targets: dialogues played of N, and USD spent and saved (estimated) as dollars."""
    df = savings.reset_index(drop=True)
    df["dialogues_played"] = [f"{_count(p)} of {_count(n)}" for p, n in zip(df["played"], df["n_total"], strict=True)]
    df["spent"] = [usd(v) for v in df["spent_usd"]]
    df["saved"] = [usd(v) for v in df["saved_usd_estimate"]]
    if "saved_calls_estimate" in df.columns:  # a table from before the column existed has none
        df["saved_calls"] = [_count(v) for v in df["saved_calls_estimate"]]
    return df[[c for c in SAVINGS_COLUMNS if c in df.columns]].sort_values("target")


def _count(value: object) -> str:
    return "\u2013" if value is None or pd.isna(value) else str(int(float(str(value))))


def _saved(savings: pd.DataFrame) -> float:
    return float(pd.to_numeric(savings["saved_usd_estimate"], errors="coerce").fillna(0).sum()) if len(savings) else 0


def sequential_section(decisions: pd.DataFrame, savings: pd.DataFrame) -> Section | None:
    """The section, or None when the design was not used."""
    if not len(decisions):
        return None
    tables: list[tuple[str, pd.DataFrame]] = []
    pools = sorted({str(p) for p in decisions["pool"]} | ({str(p) for p in savings["pool"]} if len(savings) else set()))
    for pool in pools:
        mine = decisions[decisions["pool"].astype(str) == pool]
        if len(mine):
            tables.append((f"{pool}: comparisons", comparisons(mine)))
        cells = savings[savings["pool"].astype(str) == pool] if len(savings) else savings
        if len(cells):
            tables.append((f"{pool}: dialogues played, {usd(_saved(cells))} saved (estimated)", played(cells)))
    early = int(decisions["decided_early"].map(lambda v: early_words(v) == "yes").sum())
    description = (
        "The slate's sequential design played each pool's ChatSEEDs in one seeded order, in rounds, and stopped each "
        "target once every comparison it takes part in was decided on every metric with a margin "
        '(docs/eyt-metrics.md, "Stopping when the ranking is settled"). Per pool, each comparison\'s verdict: A ahead, '
        "B ahead, within margin (the difference is smaller than the margin, whatever it is), or undecided at N, "
        "where the full design's verdict (the paired comparisons table on all N ChatSEEDs) applies; the number of "
        "dialogues it was decided at, whether that was before N, and the difference a - b with its interval then. "
        "Per target: the dialogues played of the pool's N and the USD the unplayed ones would have cost at the "
        "cell's mean per played dialogue (its target's, simulator's and judges' calls).\n\n"
        f"{GUARANTEE}\n\n"
        f"{early} of {len(decisions)} comparisons were decided early. Estimated saving over all pools: "
        f"{usd(_saved(savings))}.\n\n"
        f"Rows of embedded baselines (is_baseline; a baseline pair has one) are {REFERENCE_POINTS}."
    )
    return Section(title=TITLE, description=description, labels=LABELS, more_tables=tables)
