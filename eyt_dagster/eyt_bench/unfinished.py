"""How many dialogues of a target x pool cell finished, why the others did not, and whether that is few enough
for the slate's `max_unfinished_fraction` (the asset check on dialogue_turns and the leaderboard read this).
Pure logic over dialogue_turns rows."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from eyt_dagster.core.errors import failures_line


@dataclass(frozen=True)
class CellCompletion:
    """The dialogues of one cell: how many were played, how many finished, the unfinished ones' failures as one
    line ("simulator: 2 timeouts, 2 refused: context length")."""

    dialogues: int
    finished: int
    failures: str

    @property
    def unfinished(self) -> int:
        return self.dialogues - self.finished


def error_rows(turns: pd.DataFrame) -> pd.DataFrame:
    """The error rows of dialogue_turns: one per unfinished dialogue (turn 0, `error` set)."""
    if turns.empty or "error" not in turns.columns:
        return turns.iloc[0:0]
    return turns[turns["error"].notna()]


def cell_completion(turns: pd.DataFrame) -> CellCompletion:
    """The completion of the cell whose dialogue_turns rows these are."""
    if turns.empty:
        return CellCompletion(0, 0, "")
    errors = error_rows(turns)
    dialogues = int(turns["seed_id"].nunique())
    return CellCompletion(dialogues, dialogues - int(errors["seed_id"].nunique()), failures_line(errors))


def allowed_unfinished(dialogues: int, max_fraction: float) -> int:
    """How many of `dialogues` may stay unfinished: max_fraction of them, rounded down."""
    return math.floor(dialogues * max_fraction + 1e-9)


def enough_finished(completion: CellCompletion, max_fraction: float) -> bool:
    """At most `max_fraction` of the cell's dialogues unfinished, and at least one finished (a cell with no
    finished dialogue has no metric at all, whatever the fraction)."""
    return completion.finished > 0 and completion.unfinished <= allowed_unfinished(completion.dialogues, max_fraction)
