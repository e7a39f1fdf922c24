"""SpeechEQ's results in the explorer: the SEQ leaderboard (/seq) and one EQ-i subscale (/seq/subscale/<slug>).

The numbers are the SpeechEQ report tables as the runs wrote them (docs/speecheq-evaluation.md): speech.seq_leaderboard,
one row per target x persona condition (SEQ on the condition's cohort scale, Acc1, Acc2 and Acc_traj over the clean
items with their item-bootstrap intervals, and the checks and efficiency figures), with a chance row per condition; and
speech.seq_breakdown, the same accuracies per subscale and composite. A subscale's page adds its items, each with every
target's headline trajectory on it from speech.slm_choices: round 1 and round 2 of the seeded option order under the
target's headline inference mode (sequential when it ran it), as the accuracies count them. Nothing is recomputed."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from eyt_dagster.explorer.queries import plain
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.speech_eq.conditions import CONDITIONS, DEFAULT_CONDITION
from eyt_dagster.speech_eq.seq_tables import CHANCE_TARGET, COHORT_KINDS, HEADLINE_ORDER, shortcut_notes
from eyt_dagster.speech_eq.vocabulary import COMPOSITES, SUBSCALE_NAMES, SUBSCALES

TABLES = ("speech.seq_leaderboard", "speech.seq_breakdown")
ITEM_TABLES = ("speech.eq_items", "speech.slm_choices")

# The leaderboard's number columns, in the order shown; each is a sort key (as is the target).
BOARD_COLUMNS = (
    "seq",
    "acc_traj",
    "acc1",
    "acc2",
    "n_items",
    "n_error_items",
    "contextual_amnesia",
    "acc2_direct",
    "sequential_direct_delta",
    "position_bias_rate",
    "parse_failure_rate",
    "cost_per_100_queries",
    "mean_latency_s",
    "tokens_per_s",
    "queries",
)
# A subscale's number columns (speech.seq_breakdown), in the order shown; each is a sort key.
SUBSCALE_COLUMNS = (
    "acc_traj",
    "acc1",
    "acc2",
    "n_items",
    "contextual_amnesia",
    "n_items_direct",
    "acc2_direct",
    "sequential_direct_delta",
)
INTERVALS = ("acc_traj", "acc1", "acc2")  # shown with their 95% item-bootstrap interval
LABELS = {
    "target": "target",
    "seq": "SEQ",
    "acc_traj": "Acc_traj",
    "acc1": "Acc1",
    "acc2": "Acc2",
    "n_items": "items",
    "n_error_items": "failed items",
    "contextual_amnesia": "Acc1 - Acc2",
    "n_items_direct": "items, direct",
    "acc2_direct": "Acc2, direct",
    "sequential_direct_delta": "direct - sequential Acc2",
    "position_bias_rate": "position bias",
    "parse_failure_rate": "parse failures",
    "cost_per_100_queries": "USD per 100 queries",
    "mean_latency_s": "latency (s)",
    "tokens_per_s": "tokens/s",
    "queries": "queries",
}


@dataclass(frozen=True)
class Order:
    """How a table's rows are sorted: by a column ('' = as the table stores them), descending or not."""

    column: str = ""
    descending: bool = True


@dataclass(frozen=True)
class Board:
    condition: str  # the persona condition shown
    conditions: list[str]  # every condition of the table, the default first
    rows: list[dict[str, Any]]  # its seq_leaderboard rows, chance's too, in `order`
    order: Order
    cohort: str  # what the condition's SEQ cohort is, in words
    members: list[str]  # the cohort's targets whose rows are read (all of them but in a static export's selection)
    shortcuts: list[str]  # baselines that beat chance with an acoustic rule (seq_tables.shortcut_notes)
    subscales: list[dict[str, Any]] = field(default_factory=list)  # slug, name, composite, per target Acc_traj
    targets: list[str] = field(default_factory=list)  # the targets of the subscale table, in the board's order
    hidden_members: int = 0  # cohort members without a row here: left out of a static export's selection


@dataclass(frozen=True)
class Subscale:
    slug: str
    name: str  # e.g. Empathy
    composite: str  # e.g. Interpersonal
    condition: str
    conditions: list[str]
    rows: list[dict[str, Any]]  # seq_breakdown rows of this subscale and condition, in `order`
    order: Order
    targets: list[str]  # the targets with choices on its items under the condition, in the rows' order
    items: list[dict[str, Any]]  # its eq_items, each with `outcomes`: target -> (round 1, round 2) marks
    headline: dict[str, str]  # target -> its headline inference mode under the condition


def baseline_flags(wh: Warehouse) -> dict[str, bool]:
    """SpeechEQ target -> is_baseline, as the SEQ leaderboard and the choices store it (chance is a reference point,
    marked as a baseline too)."""
    with wh.sql(("speech.seq_leaderboard", "speech.slm_choices")) as con:
        rows = con.execute(
            "SELECT target, bool_or(is_baseline) FROM (SELECT target, is_baseline FROM seq_leaderboard "
            "UNION ALL SELECT target, is_baseline FROM slm_choices) GROUP BY target"
        ).fetchall()
    return {str(t): bool(b) for t, b in rows}


def check_order(column: str, descending: bool, columns: tuple[str, ...]) -> Order:
    """The sort order asked for; ValueError naming a column that is not a sort key."""
    if column and column != "target" and column not in columns:
        raise ValueError(f"unknown sort '{column}'; the columns are target, {', '.join(columns)}")
    return Order(column, descending)


def _conditions(found: set[str]) -> list[str]:
    return [c for c in CONDITIONS if c in found] + sorted(found - set(CONDITIONS))


def _chosen(condition: str, conditions: list[str]) -> str:
    """The condition asked for, or the default one (else the first); ValueError when the table has no such."""
    if not condition:
        return DEFAULT_CONDITION if DEFAULT_CONDITION in conditions or not conditions else conditions[0]
    if condition not in conditions:
        known = ", ".join(conditions) or "none"
        raise ValueError(f"unknown condition '{condition}'; the conditions are {known}")
    return condition


def _sorted(rows: list[dict[str, Any]], order: Order) -> list[dict[str, Any]]:
    """Rows by `order.column` (text or number; a missing value last either way), ties by target."""
    if not order.column:
        return rows

    def missing(row: dict[str, Any]) -> bool:
        value = row.get(order.column)
        return value is None or (isinstance(value, float) and math.isnan(value))

    present = [r for r in rows if not missing(r)]
    present.sort(key=lambda r: str(r["target"]))
    present.sort(key=lambda r: r[order.column], reverse=order.descending)
    return present + sorted((r for r in rows if missing(r)), key=lambda r: str(r["target"]))


def board(wh: Warehouse, condition: str = "", order: Order = Order()) -> Board:
    """The SEQ leaderboard of one persona condition (the default one unless named), and its subscales' Acc_traj per
    target. ValueError for a condition the table does not have."""
    with wh.sql(TABLES) as con:
        board_rows = con.execute("SELECT * FROM seq_leaderboard").df()
        found = {str(c) for c in board_rows["condition"].dropna()}
        conditions = _conditions(found)
        shown = _chosen(condition, conditions)
        breakdown = con.execute(
            "SELECT target, name, display_name, composite_name, acc_traj, n_items FROM seq_breakdown "
            "WHERE level = 'subscale' AND condition = $condition",
            {"condition": shown},
        ).df()
    mine = board_rows[board_rows["condition"] == shown]
    stored = [plain(r) for r in mine.to_dict("records")]  # in the table's order: SEQ descending, chance last
    rows = _sorted(stored, order)
    first = stored[0] if stored else {}
    kind = str(first.get("seq_cohort_kind") or "")
    cohort = [m for m in str(first.get("seq_cohort") or "").split(",") if m]
    members = [m for m in cohort if m in set(mine["target"].astype(str))]
    targets = [str(r["target"]) for r in stored if r["target"] != CHANCE_TARGET]
    targets += sorted({str(t) for t in breakdown["target"]} - set(targets))
    return Board(
        condition=shown,
        conditions=conditions,
        rows=rows,
        order=order,
        cohort=COHORT_KINDS.get(kind, kind),
        members=members,
        shortcuts=shortcut_notes(mine) if len(mine) else [],
        subscales=_subscale_rows(breakdown),
        targets=targets,
        hidden_members=len(cohort) - len(members),
    )


def _subscale_rows(breakdown: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per subscale in EQ-i order: slug, names, and each target's Acc_traj and items on it."""
    out: dict[str, dict[str, Any]] = {}
    for r in (plain(x) for x in breakdown.to_dict("records")):
        slug = str(r["name"])
        row = out.setdefault(
            slug,
            {"slug": slug, "name": r["display_name"] or slug, "composite": r["composite_name"] or "", "targets": {}},
        )
        row["targets"][str(r["target"])] = r
    position = {slug: i for i, slug in enumerate(SUBSCALES)}
    return [out[s] for s in sorted(out, key=lambda s: (position.get(s, len(position)), s))]


def subscale(wh: Warehouse, slug: str, condition: str = "", order: Order = Order()) -> Subscale:
    """One EQ-i subscale: each target's figures on it and its items with each target's headline trajectory.
    KeyError for a slug that is not a subscale; ValueError for a condition the tables do not have."""
    if slug not in SUBSCALES:
        raise KeyError(slug)
    composite, sub = SUBSCALES[slug]
    with wh.sql(TABLES) as con:
        found = {
            str(r[0])
            for r in con.execute(
                "SELECT condition FROM seq_breakdown UNION SELECT condition FROM seq_leaderboard"
            ).fetchall()
            if r[0] is not None
        }
        conditions = _conditions(found)
        shown = _chosen(condition, conditions)
        rows = [
            plain(r)
            for r in con.execute(
                "SELECT * FROM seq_breakdown WHERE level = 'subscale' AND name = $slug AND condition = $condition "
                "ORDER BY acc_traj DESC NULLS LAST, target",
                {"slug": slug, "condition": shown},
            )
            .df()
            .to_dict("records")
        ]
    items, headline = _items(wh, slug, shown)
    targets = [str(r["target"]) for r in rows]
    targets += sorted(set(headline) - set(targets))
    return Subscale(
        slug=slug,
        name=SUBSCALE_NAMES.get(sub, slug),
        composite=COMPOSITES[composite][0],
        condition=shown,
        conditions=conditions,
        rows=_sorted(rows, order),
        order=order,
        targets=targets,
        items=items,
        headline=headline,
    )


# Each target's headline mode under the condition, over all its items as seq_tables decides it (sequential when it ran
# it): for the targets with choices on the subscale's items.
_HEADLINES = """
SELECT target, CASE WHEN bool_or(inference = 'sequential') THEN 'sequential' ELSE 'direct' END AS headline
FROM slm_choices WHERE condition = $condition
    AND target IN (SELECT target FROM slm_choices WHERE condition = $condition AND subscale = $slug)
GROUP BY target ORDER BY target
"""
# The rounds of each target's headline trajectory on each item of the subscale.
_TRAJECTORIES = f"""
WITH cell AS ({_HEADLINES})
SELECT c.target, c.item_id, c.round, c.correct, c.parse_failed, c.error
FROM slm_choices c JOIN cell USING (target)
WHERE c.condition = $condition AND c.subscale = $slug AND c."order" = '{HEADLINE_ORDER}' AND c.inference = cell.headline
ORDER BY c.target, c.item_id, c.round
"""


def _items(wh: Warehouse, slug: str, condition: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    params = {"slug": slug, "condition": condition}
    with wh.sql(ITEM_TABLES) as con:
        items = [
            plain(r)
            for r in con.execute(
                "SELECT dataset_id, valence, scenario_title FROM eq_items WHERE subscale = $slug ORDER BY dataset_id",
                {"slug": slug},
            )
            .df()
            .to_dict("records")
        ]
        headline = {str(t): str(m) for t, m in con.execute(_HEADLINES, params).fetchall()}
        choices = [plain(r) for r in con.execute(_TRAJECTORIES, params).df().to_dict("records")]
    rounds: dict[str, dict[str, dict[int, str]]] = {}  # item -> target -> round -> its mark
    for c in choices:
        rounds.setdefault(str(c["item_id"]), {}).setdefault(str(c["target"]), {})[int(c["round"])] = outcome(c)
    for item in items:
        marks = rounds.get(str(item["dataset_id"]), {})
        item["outcomes"] = {target: (m.get(1, ""), m.get(2, "")) for target, m in marks.items()}
    return items, headline


def outcome(choice: dict[str, Any]) -> str:
    """One round's mark: 'right', 'wrong', 'unparsed' (a reply that did not parse: counted wrong) or 'error' (the
    call failed: the item is left out of the accuracies)."""
    if choice.get("error"):
        return "error"
    if choice.get("parse_failed"):
        return "unparsed"
    if choice.get("correct") is None:
        return "error"
    return "right" if choice["correct"] else "wrong"
