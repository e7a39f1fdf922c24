"""The explorer's questions about SpeechEQ: the items (filtered by EQ-i subscale, composite and valence,
paginated) and one item with what the build stored about it and each target's choices (paper §2.2-2.4: a
six-turn dialogue whose turns 4 and 6 each have a resonant and a dissonant clip; round 1 asks about turn 4,
round 2 about turn 6)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import pandas as pd

from eyt_dagster.explorer.queries import PAGE_SIZE, plain
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.speech_eq.vocabulary import COMPOSITES, SUBSCALES, TEST_TURNS, TURN_ROLE, TURN_SPEAKER, VALENCES

ITEM_COLUMNS = (
    "dataset_id",
    "subscale",
    "composite",
    "valence",
    "scenario_type",
    "scenario_title",
    "turn4_contrast",
    "turn6_contrast",
    "source",
)
ITEM_TABLES = (
    "speech.eq_items",
    "speech.scenarios",
    "speech.dialogues",
    "speech.tone_instructions",
    "speech.tone_selection",
    "speech.contrast_scores",
    "speech.slm_choices",
)
CHOICE_ORDER = 'target, condition, inference, "order", round'


def clip_url(path: str) -> str:
    return "/clip/" + quote(path, safe="/")


@dataclass(frozen=True)
class ItemPage:
    rows: pd.DataFrame
    total: int
    page: int
    pages: int


# What a target's choices on an item were, when the list names a target (speech.slm_choices; `condition` narrows)
OUTCOMES = {
    "": "any",
    "wrong": "a wrong choice",
    "parse_failed": "a reply that did not parse",
    "error": "a failed call",
}
CHOICE_COLUMNS = ("choices", "correct", "parse_failed", "errors")
_KEPT = {
    "": "",
    "wrong": " AND c.correct < c.choices - c.errors",
    "parse_failed": " AND c.parse_failed > 0",
    "error": " AND c.errors > 0",
}


def check_filters(subscale: str, composite: str, valence: str, outcome: str = "") -> None:
    """ValueError naming a filter value that is not in SpeechEQ's vocabulary (empty means any)."""
    for name, value, known in (
        ("subscale", subscale, SUBSCALES),
        ("composite", composite, COMPOSITES),
        ("valence", valence, VALENCES),
        ("outcome", outcome, tuple(k for k in OUTCOMES if k)),
    ):
        if value and value not in known:
            raise ValueError(f"unknown {name} '{value}'; the {name}s are {', '.join(known)}")


def choice_targets(wh: Warehouse) -> tuple[list[str], list[str]]:
    """The targets with speech.slm_choices rows, and the persona conditions they were asked under."""
    found = wh.partition_values("speech.slm_choices", "target")
    with wh.sql(["speech.slm_choices"]) as con:
        if found is None:
            found = {str(r[0]) for r in con.execute("SELECT DISTINCT target FROM slm_choices").fetchall()}
        rows = con.execute("SELECT DISTINCT condition FROM slm_choices ORDER BY 1").fetchall()
    return sorted(found), [str(r[0]) for r in rows]


def items(
    wh: Warehouse,
    subscale: str = "",
    composite: str = "",
    valence: str = "",
    page: int = 1,
    target: str = "",
    condition: str = "",
    outcome: str = "",
    known: tuple[list[str], list[str]] | None = None,
) -> ItemPage:
    """speech.eq_items, one row per item, in dataset_id order; PAGE_SIZE per page. With a target: its choices on
    each item (under `condition` when named) counted beside it, and `outcome` keeps the items where one of them
    was wrong, did not parse or failed. `known` is choice_targets(wh) when the caller has it already."""
    check_filters(subscale, composite, valence, outcome)
    if (condition or outcome) and not target:
        raise ValueError("condition and outcome filter a target's choices: name the target too")
    params = {"subscale": subscale, "composite": composite, "valence": valence}
    columns = ", ".join(f"i.{c}" for c in ITEM_COLUMNS)
    joined = ""
    if target:
        targets, conditions = known if known is not None else choice_targets(wh)
        if target not in targets:
            raise ValueError(f"speech.slm_choices has no choices of target '{target}'; the targets are {targets}")
        if condition and condition not in conditions:
            raise ValueError(f"unknown condition '{condition}'; the conditions are {', '.join(conditions)}")
        params |= {"target": target, "condition": condition}
        columns += ", " + ", ".join(f"coalesce(c.{c}, 0) AS {c}" for c in CHOICE_COLUMNS)
        joined = (
            " LEFT JOIN (SELECT item_id, count(*) AS choices, count(*) FILTER (WHERE correct) AS correct,"
            " count(*) FILTER (WHERE parse_failed) AS parse_failed, count(*) FILTER (WHERE error IS NOT NULL)"
            " AS errors FROM slm_choices WHERE target = $target AND ($condition = '' OR condition = $condition)"
            " GROUP BY item_id) c ON c.item_id = i.dataset_id"
        )
    base = (
        f"SELECT {columns} FROM eq_items i{joined} WHERE ($subscale = '' OR i.subscale = $subscale) "
        f"AND ($composite = '' OR i.composite = $composite) AND ($valence = '' OR i.valence = $valence)"
        f"{_KEPT[outcome] if target else ''}"
    )
    tables = ["speech.eq_items", "speech.slm_choices"] if target else ["speech.eq_items"]
    with wh.sql(tables, {"target": target} if target else None) as con:
        row = con.execute(f"SELECT count(*) FROM ({base})", params).fetchone()
        total = int(row[0]) if row else 0
        pages = max(1, -(-total // PAGE_SIZE))
        page = min(max(1, page), pages)
        rows = con.execute(
            f"{base} ORDER BY i.dataset_id LIMIT {PAGE_SIZE} OFFSET {(page - 1) * PAGE_SIZE}", params
        ).df()
    return ItemPage(rows, total, page, pages)


@dataclass(frozen=True)
class SpeechItem:
    item: dict[str, Any]  # the eq_items row
    scenario: dict[str, Any]  # the scenario's fields (speech.scenarios, else the item's own copy)
    scenario_source: str
    lines: list[dict[str, Any]]  # turn, speaker, role, text, tone, clips [(kind, path, tone)] for turns 4 and 6
    lines_source: str
    tones: list[dict[str, Any]]  # speech.tone_instructions: every attempt, accepted or rejected
    selection: list[dict[str, Any]]  # speech.tone_selection: the resonant and dissonant options of turns 4 and 6
    contrasts: list[dict[str, Any]]  # speech.contrast_scores of turns 4 and 6, every attempt
    choices: dict[str, list[dict[str, Any]]]  # target -> its speech.slm_choices rows


def item(wh: Warehouse, dataset_id: str) -> SpeechItem | None:
    """Everything stored about one item, or None when speech.eq_items has no row with this dataset_id."""
    key = {"id": dataset_id}
    with wh.sql(ITEM_TABLES) as con:

        def rows(sql: str) -> list[dict[str, Any]]:
            return [plain(r) for r in con.execute(sql, key).df().to_dict("records")]

        found = rows("SELECT * FROM eq_items WHERE dataset_id = $id")
        if not found:
            return None
        scenarios = rows("SELECT * FROM scenarios WHERE scenario_id = $id ORDER BY created_at DESC NULLS LAST")
        accepted = rows(
            "SELECT * FROM dialogues WHERE scenario_id = $id AND accepted AND attempt IS NOT DISTINCT FROM "
            "(SELECT max(attempt) FROM dialogues WHERE scenario_id = $id AND accepted) ORDER BY turn"
        )
        tones = rows("SELECT * FROM tone_instructions WHERE scenario_id = $id ORDER BY turn, option_index, attempt")
        selection = rows("SELECT * FROM tone_selection WHERE scenario_id = $id ORDER BY turn")
        contrasts = rows("SELECT * FROM contrast_scores WHERE scenario_id = $id ORDER BY turn, attempt")
        choices = rows(f"SELECT * FROM slm_choices WHERE item_id = $id ORDER BY {CHOICE_ORDER}")
    row = found[0]
    scenario_json = scenarios[0]["scenario_json"] if scenarios else row.get("scenario_json")
    scenario = json.loads(scenario_json) if scenario_json else {}
    scenario_source = "speech.scenarios" if scenarios else "the item's own copy (speech.eq_items)"
    if accepted:
        texts = {int(r["turn"]): r["text"] for r in accepted}
        lines_source = f"speech.dialogues, the accepted version (attempt {accepted[0].get('attempt')})"
    else:
        texts = {n: row.get(f"turn{n}_text") for n in TURN_SPEAKER}
        lines_source = "the item's own text (speech.eq_items): speech.dialogues has no accepted version"
    lines = []
    for n, speaker in TURN_SPEAKER.items():
        line: dict[str, Any] = {
            "turn": n,
            "speaker": speaker,
            "role": TURN_ROLE[n],
            "text": texts.get(n),
            "tone": None,
            "clips": [],
        }
        if n in TEST_TURNS:
            line["clips"] = [
                (kind, row.get(f"turn{n}_{kind}_path"), row.get(f"turn{n}_{kind}_tone"))
                for kind in ("resonant", "dissonant")
            ]
        else:
            line["tone"] = row.get(f"turn{n}_tone")
        lines.append(line)
    by_target: dict[str, list[dict[str, Any]]] = {}
    for choice in choices:
        by_target.setdefault(str(choice["target"]), []).append(choice)
    return SpeechItem(row, scenario, scenario_source, lines, lines_source, tones, selection, contrasts, by_target)


def with_condition(found: SpeechItem, condition: str) -> SpeechItem:
    """The item with only its choices made under one persona condition."""
    kept = {t: [c for c in rows if c.get("condition") == condition] for t, rows in found.choices.items()}
    return replace(found, choices={t: rows for t, rows in kept.items() if rows})
