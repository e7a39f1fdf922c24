"""How many dialogues of a target x pool cell finished, why the others did not, and whether that is few enough
for the slate's `max_unfinished_fraction` (the asset check on dialogue_turns and the leaderboard read this).
Pure logic over dialogue_turns rows."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from eyt_dagster.core.errors import budget_stops, failures_line


@dataclass(frozen=True)
class CellCompletion:
    """The dialogues of one cell: how many it has, how many finished, how many a spend cap stopped (not a failure:
    `stopped_by_budget`), the failed ones' failures as one line ("simulator: 2 timeouts, 2 refused: context
    length")."""

    dialogues: int
    finished: int
    failures: str
    stopped_by_budget: int = 0

    @property
    def played(self) -> int:
        """The dialogues that were not stopped by a spend cap."""
        return self.dialogues - self.stopped_by_budget

    @property
    def unfinished(self) -> int:
        """The played dialogues that did not finish (a failed call)."""
        return self.played - self.finished


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
    stopped = errors[budget_stops(errors)]
    failed = errors.drop(stopped.index)
    return CellCompletion(
        dialogues,
        dialogues - int(errors["seed_id"].nunique()),
        failures_line(failed),
        int(stopped["seed_id"].nunique()),
    )


def allowed_unfinished(dialogues: int, max_fraction: float) -> int:
    """How many of `dialogues` may stay unfinished: max_fraction of them, rounded down."""
    return math.floor(dialogues * max_fraction + 1e-9)


def enough_finished(completion: CellCompletion, max_fraction: float) -> bool:
    """At most `max_fraction` of the cell's played dialogues unfinished, and at least one finished (a cell with no
    finished dialogue has no metric at all, whatever the fraction). Dialogues a spend cap stopped were not played:
    a cell whose every dialogue a cap stopped has not failed."""
    if completion.played == 0:
        return completion.stopped_by_budget > 0
    return completion.finished > 0 and completion.unfinished <= allowed_unfinished(completion.played, max_fraction)
