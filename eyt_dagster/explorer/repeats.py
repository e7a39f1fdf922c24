"""One ChatSEED's repeated samples (the slate's `repeats` and `judge_repeats`): the scores of every sample of a
target's dialogue, and one repeated play's turns (dialogue.repeat_dialogues) for the dialogue page."""

from __future__ import annotations

from typing import Any

from eyt_dagster.explorer.queries import Dialogue, _dialogue, plain
from eyt_dagster.explorer.reads import Warehouse

REPEAT_TABLES = (
    "dialogue.chat_seeds",
    "dialogue.dialogue_scores",
    "dialogue.repeat_dialogues",
    "dialogue.repeat_scores",
)
SHOWN = ("completed", "satisfaction", "empathy", "persona", "anthropomorphic", "drift", "n_turns")
_SAMPLES = f"""
SELECT 0 AS repeat, 0 AS judge_repeat, {", ".join(SHOWN)} FROM dialogue_scores
WHERE target = $target AND seed_id = $seed_id
UNION ALL
SELECT repeat, judge_repeat, {", ".join(SHOWN)} FROM repeat_scores WHERE target = $target AND seed_id = $seed_id
ORDER BY repeat, judge_repeat
"""


def samples(wh: Warehouse, target: str, seed_id: str) -> list[dict[str, Any]]:
    """Every sample's scores of the target's dialogue of `seed_id`, sample (0, 0) first; one row when the slate
    asked for no repeats."""
    with wh.sql(REPEAT_TABLES, {"target": [target]}) as con:
        return [plain(r) for r in con.execute(_SAMPLES, {"target": target, "seed_id": seed_id}).df().to_dict("records")]


def repeat_dialogue(wh: Warehouse, target: str, seed_id: str, repeat: int) -> tuple[Dialogue, int | None] | None:
    """Repeat `repeat` (1 or more) of the target's dialogue of `seed_id` and the seed its target was sent, or None
    when it was not played. Its per-turn verdicts are not kept (repeat_scores holds its scores)."""
    key = {"target": target, "seed_id": seed_id, "repeat": repeat}
    with wh.sql(REPEAT_TABLES, {"target": [target]}) as con:
        turns = [
            plain(r)
            for r in con.execute(
                "SELECT * FROM repeat_dialogues WHERE target = $target AND seed_id = $seed_id AND repeat = $repeat "
                "ORDER BY turn",
                key,
            )
            .df()
            .to_dict("records")
        ]
        if not turns:
            return None
        pool = str(turns[0]["pool"])
        seeds = con.execute(
            "SELECT * FROM chat_seeds WHERE seed_id = $seed_id AND pool = $pool", {"seed_id": seed_id, "pool": pool}
        ).df()
        scores = con.execute(
            "SELECT * FROM repeat_scores WHERE target = $target AND seed_id = $seed_id AND repeat = $repeat "
            "AND judge_repeat = 0",
            key,
        ).df()
    seed = plain(seeds.to_dict("records")[0]) if len(seeds) else None
    score_rows = [plain(r) for r in scores.to_dict("records")]
    sent = turns[0].get("sample_seed")
    return _dialogue(target, pool, seed_id, seed, turns, [], [], [], score_rows), (
        int(sent) if sent is not None else None
    )
