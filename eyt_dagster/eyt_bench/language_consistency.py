"""Language consistency of a cell's dialogues: the share of the target's replies, and of the simulator's turns, that
are in the pool's language, per dialogue and per cell (docs/eyt-metrics.md#language-consistency). Pure logic: the
language detector is handed in (resources/text/language_id.py `detect`).

Definitions:
- A text is in the pool's language when the detector's top language for the whole text is it. A mixed reply
  ("好的，我明白了。Let me explain...") counts for the language most of it is written in, as the detector weighs it.
- A text with too little language to tell (the detector's None: digits, punctuation, emoji, code, "OK") is
  undetermined: counted, but in neither the numerator nor the denominator of a share. A dialogue whose texts are
  all undetermined has no share (NaN), and the cell's mean skips it.
- The first switch is the first turn whose reply was detected in another language than the pool's (undetermined
  replies are not switches); none: null.
- The rows read are the answered turns of finished dialogues (dialogue_scoring.answered_turns), as every metric.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from eyt_dagster.eyt_bench.dialogue_scoring import KEYS, answered_turns

Detect = Callable[[Sequence[str | None]], list[str | None]]

REPLY_TEXT = "response_text"  # the target's reply (dialogue_turns)
USER_TEXT = "user_text"  # the simulator's utterance (dialogue_turns)

DIALOGUE_COLUMNS = [
    *KEYS,
    "pool_language",
    "turns",
    "reply_in_language",
    "reply_other_language",
    "reply_undetermined",
    "reply_language_share",
    "user_in_language",
    "user_other_language",
    "user_undetermined",
    "user_language_share",
    "first_switch_turn",
]
CELL_COLUMNS = [
    "target",
    "pool",
    "pool_language",
    "dialogues",
    "turns",
    "reply_language_share",
    "user_language_share",
    "dialogues_switched",
]


def _texts(column: pd.Series) -> list[str | None]:
    return [text if isinstance(text, str) else None for text in column]


def dialogue_language_consistency(turns: pd.DataFrame, pool_language: str, detect: Detect) -> pd.DataFrame:
    """One row per finished dialogue of `turns` (a cell's dialogue_turns rows), DIALOGUE_COLUMNS: the counts of
    replies and simulator turns in the pool's language, in another one and undetermined, the two shares and the
    first turn the target switched language."""
    answered = answered_turns(turns).sort_values([*KEYS, "turn"])
    return language_shares(
        answered, detect(_texts(answered[REPLY_TEXT])), detect(_texts(answered[USER_TEXT])), pool_language
    )


def language_shares(
    turns: pd.DataFrame, reply_languages: Sequence[str | None], user_languages: Sequence[str | None], pool_language: str
) -> pd.DataFrame:
    """`dialogue_language_consistency` from languages already detected, one per row of `turns` (columns KEYS and
    turn) for the reply and for the simulator's turn."""
    if len(reply_languages) != len(turns) or len(user_languages) != len(turns):
        raise ValueError(
            f"{len(turns)} turns but {len(reply_languages)} reply and {len(user_languages)} user languages"
        )
    frame = turns[[*KEYS, "turn"]].reset_index(drop=True).copy()
    frame["reply"] = pd.Series(list(reply_languages), dtype="object")
    frame["user"] = pd.Series(list(user_languages), dtype="object")
    rows = []
    for keys, dialogue in frame.sort_values([*KEYS, "turn"]).groupby(KEYS, sort=True):
        row: dict[str, object] = dict(zip(KEYS, keys))
        row["pool_language"] = pool_language
        row["turns"] = len(dialogue)
        for side in ("reply", "user"):
            found = dialogue[side]
            inside = int((found == pool_language).sum())
            undetermined = int(found.isna().sum())
            other = len(found) - inside - undetermined
            row[f"{side}_in_language"] = inside
            row[f"{side}_other_language"] = other
            row[f"{side}_undetermined"] = undetermined
            row[f"{side}_language_share"] = inside / (inside + other) if inside + other else np.nan
        switched = dialogue[dialogue["reply"].notna() & (dialogue["reply"] != pool_language)]
        row["first_switch_turn"] = int(switched["turn"].iloc[0]) if len(switched) else pd.NA
        rows.append(row)
    out = pd.DataFrame(rows, columns=DIALOGUE_COLUMNS)
    out["first_switch_turn"] = out["first_switch_turn"].astype("Int64")
    return out


def cell_language_consistency(dialogues: pd.DataFrame) -> pd.DataFrame:
    """One row per (target, pool) of `dialogue_language_consistency` rows, CELL_COLUMNS: the dialogues' mean shares
    (a dialogue with no share is skipped), the turns, and how many dialogues switched language at least once."""
    rows = []
    for (target, pool), cell in dialogues.groupby(["target", "pool"], sort=True):
        rows.append(
            {
                "target": target,
                "pool": pool,
                "pool_language": cell["pool_language"].iloc[0],
                "dialogues": len(cell),
                "turns": int(cell["turns"].sum()),
                "reply_language_share": float(cell["reply_language_share"].mean()),
                "user_language_share": float(cell["user_language_share"].mean()),
                "dialogues_switched": int(cell["first_switch_turn"].notna().sum()),
            }
        )
    return pd.DataFrame(rows, columns=CELL_COLUMNS)
