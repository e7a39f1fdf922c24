"""The explorer's questions about how SpeechEQ's items were built (paper §2.3: each test turn's resonant and
dissonant clips must differ enough acoustically; a pair that does not is synthesised again, and after the last
try its scenario is discarded): the per-subscale summary of speech.speech_build_report, then every clip pair
that was regenerated or discarded with the scores of each try, the tone instructions rejected and the dialogue
drafts the validator turned down, each with the reason stored beside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eyt_dagster.explorer.queries import PAGE_SIZE, plain
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.speech_eq.contrast import FEATURES
from eyt_dagster.speech_eq.vocabulary import SUBSCALES

KINDS = {
    "": "regenerated or discarded",
    "regenerated": "regenerated (more than one try)",
    "discarded": "discarded (no try passed)",
}
BUILD_TABLES = (
    "speech.speech_build_report",
    "speech.contrast_scores",
    "speech.tone_instructions",
    "speech.dialogues",
    "speech.eq_items",
)


@dataclass(frozen=True)
class BuildPage:
    summary: list[dict[str, Any]]  # speech.speech_build_report rows
    pairs: list[dict[str, Any]]  # one clip pair: scenario_id, turn, tries [contrast_scores rows], outcome, why
    total: int
    page: int
    pages: int
    tones: list[dict[str, Any]]  # speech.tone_instructions rows not accepted
    drafts: list[dict[str, Any]]  # speech.dialogues rows not accepted


def why(attempt: dict[str, Any]) -> str:
    """Why one try of a pair did or did not pass: its total and the features that scored nothing."""
    silent = [name for name in FEATURES if not attempt.get(f"points_{name}")]
    total = attempt.get("total")
    verdict = "passed" if attempt.get("passed") else "did not pass"
    shown = f"total {total} of 8, {verdict}"
    return shown + (f"; no points for {', '.join(silent)}" if silent else "")


def build(wh: Warehouse, subscale: str = "", kind: str = "", page: int = 1) -> BuildPage:
    """The build's regenerated and discarded pairs (one subscale, or all), PAGE_SIZE pairs per page, with the
    tones and drafts rejected along the way."""
    if subscale and subscale not in SUBSCALES:
        raise ValueError(f"unknown subscale '{subscale}'; the subscales are {', '.join(SUBSCALES)}")
    if kind not in KINDS:
        raise ValueError(f"unknown kind '{kind}'; the kinds are {', '.join(k for k in KINDS if k)}")
    params = {"subscale": subscale}
    having = {
        "": "max(attempt) > 1 OR NOT bool_or(passed)",
        "regenerated": "max(attempt) > 1",
        "discarded": "NOT bool_or(passed)",
    }[kind]
    pairs_sql = (
        "SELECT scenario_id, turn, any_value(subscale) AS subscale, max(attempt) AS tries, bool_or(passed) AS kept "
        "FROM contrast_scores WHERE ($subscale = '' OR subscale = $subscale) "
        f"GROUP BY scenario_id, turn HAVING {having}"
    )
    partitions = {"subscale": subscale} if subscale else None
    with wh.sql(BUILD_TABLES, partitions) as con:

        def rows(sql: str, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
            return [
                plain(r) for r in con.execute(sql, values if values is not None else params).df().to_dict("records")
            ]

        summary = rows(
            "SELECT * FROM speech_build_report WHERE ($subscale = '' OR subscale = $subscale) ORDER BY subscale"
        )
        found = con.execute(f"SELECT count(*) FROM ({pairs_sql})", params).fetchone()
        total = int(found[0]) if found else 0
        pages = max(1, -(-total // PAGE_SIZE))
        page = min(max(1, page), pages)
        chosen = rows(f"{pairs_sql} ORDER BY scenario_id, turn LIMIT {PAGE_SIZE} OFFSET {(page - 1) * PAGE_SIZE}")
        items = {str(r[0]) for r in con.execute("SELECT dataset_id FROM eq_items").fetchall()}
        tries: dict[tuple[str, int], list[dict[str, Any]]] = {}
        if chosen:
            ids = sorted({str(p["scenario_id"]) for p in chosen})
            for attempt in rows(
                "SELECT * FROM contrast_scores WHERE list_contains($ids, scenario_id) ORDER BY scenario_id, turn, attempt",
                {"ids": ids},
            ):
                tries.setdefault((str(attempt["scenario_id"]), int(attempt["turn"])), []).append(attempt)
        tones = rows(
            "SELECT scenario_id, subscale, turn, option_index, attempt, instruction, rejection_reason FROM "
            "tone_instructions WHERE NOT accepted AND ($subscale = '' OR subscale = $subscale) "
            f"ORDER BY scenario_id, turn, option_index, attempt LIMIT {PAGE_SIZE}"
        )
        drafts = rows(
            "SELECT scenario_id, subscale, attempt, any_value(validator_note) AS validator_note, "
            "any_value(validator) AS validator FROM dialogues WHERE NOT accepted AND ($subscale = '' OR subscale = "
            f"$subscale) GROUP BY scenario_id, subscale, attempt ORDER BY scenario_id, attempt LIMIT {PAGE_SIZE}"
        )
    pairs = []
    for p in chosen:
        attempts = [dict(a, why=why(a)) for a in tries.get((str(p["scenario_id"]), int(p["turn"])), [])]
        outcome = "kept" if p["kept"] else "discarded"
        pairs.append(dict(p, attempts=attempts, outcome=outcome, is_item=str(p["scenario_id"]) in items))
    return BuildPage(summary, pairs, total, page, pages, tones, drafts)
