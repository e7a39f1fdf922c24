"""The spoken EYT-Bench in the explorer: the gap, ASR errors and prosody effect of every voice target, a cell's
voiced dialogues, and one voiced dialogue with each user clip playable beside its text control."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from eyt_dagster.explorer.queries import plain
from eyt_dagster.explorer.reads import Warehouse

REPORT_TABLES = ("voice.voice_gap", "voice.asr_errors", "voice.prosody_effect")
CELL_TABLES = ("voice.dialogue_scores",)
DIALOGUE_TABLES = ("dialogue.chat_seeds", "voice.voiced_turns", "voice.text_turns", "voice.dialogue_scores")
LABELS = ("explicit_intent", "latent_intent", "emotion")


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [plain(r) for r in df.to_dict("records")]


@dataclass(frozen=True)
class VoiceReport:
    gap: list[dict[str, Any]]  # voice.voice_gap rows
    asr: list[dict[str, Any]]  # voice.asr_errors rows
    prosody: list[dict[str, Any]]  # voice.prosody_effect rows
    dialogues: list[dict[str, Any]]  # the chosen cell's dialogues with both modes' scores
    target: str
    pool: str


def report(wh: Warehouse, target: str = "", pool: str = "") -> VoiceReport:
    """The report tables, and (for a chosen target and pool) that cell's dialogues."""
    with wh.sql(REPORT_TABLES) as con:
        gap = _records(con.execute("SELECT * FROM voice_gap ORDER BY target, pool, metric").df())
        asr = _records(con.execute("SELECT * FROM asr_errors ORDER BY target, pool").df())
        prosody = _records(con.execute("SELECT * FROM prosody_effect ORDER BY target, pool").df())
    dialogues: list[dict[str, Any]] = []
    if target and pool:
        with wh.sql(CELL_TABLES, {"target": [target]}) as con:
            dialogues = _records(con.execute(_CELL_DIALOGUES, {"target": target, "pool": pool}).df())
    return VoiceReport(gap, asr, prosody, dialogues, target, pool)


_CELL_DIALOGUES = """
SELECT seed_id,
       any_value(empathy) FILTER (WHERE mode = 'voice') AS voice_empathy,
       any_value(empathy) FILTER (WHERE mode = 'text') AS text_empathy,
       any_value(completed::DOUBLE) FILTER (WHERE mode = 'voice') AS voice_completed,
       any_value(completed::DOUBLE) FILTER (WHERE mode = 'text') AS text_completed
FROM dialogue_scores WHERE target = $target AND pool = $pool GROUP BY seed_id ORDER BY seed_id
"""


@dataclass(frozen=True)
class VoicedDialogue:
    target: str
    pool: str
    seed_id: str
    seed: dict[str, Any] | None
    turns: list[dict[str, Any]]  # voiced turns, each with its labels and the text control's same turn
    scores: dict[str, dict[str, Any]]  # mode -> its dialogue_scores row
    error: dict[str, Any] | None


def voiced(wh: Warehouse, target: str, seed_id: str) -> VoicedDialogue | None:
    key = {"target": target, "seed_id": seed_id}
    with wh.sql(DIALOGUE_TABLES, {"target": [target]}) as con:
        rows = _records(
            con.execute(
                "SELECT * FROM voiced_turns WHERE target = $target AND seed_id = $seed_id ORDER BY turn", key
            ).df()
        )
        if not rows:
            return None
        control = _records(
            con.execute(
                "SELECT * FROM text_turns WHERE target = $target AND seed_id = $seed_id ORDER BY turn", key
            ).df()
        )
        scores = _records(
            con.execute("SELECT * FROM dialogue_scores WHERE target = $target AND seed_id = $seed_id", key).df()
        )
        pool = str(rows[0]["pool"])
        seeds = _records(
            con.execute(
                "SELECT * FROM chat_seeds WHERE seed_id = $seed_id AND pool = $pool", {"seed_id": seed_id, "pool": pool}
            ).df()
        )
    read = {int(t["turn"]): t for t in control if t["turn"] > 0}
    turns = []
    for t in (r for r in rows if r["turn"] > 0):
        labels = [(f, t[f"gold_{f}"], t[f"pred_{f}"], t[f"gold_{f}"] == t[f"pred_{f}"]) for f in LABELS]
        turns.append({**t, "labels": labels, "text": read.get(int(t["turn"]))})
    error = next((r for r in rows if r["turn"] == 0), None)
    return VoicedDialogue(
        target, pool, seed_id, seeds[0] if seeds else None, turns, {str(s["mode"]): s for s in scores}, error
    )
