"""The EYT-Bench leaderboard as `eyt run` prints it in a terminal: the headline columns, missing numbers as '-',
and for every cell with unfinished dialogues a line saying how many finished and why the others did not. Also
readable when the table has no row yet. Pure formatting of dialogue.leaderboard rows."""

from __future__ import annotations

import pandas as pd

from eyt_dagster.core.baseline_flags import BASELINE_KIND
from eyt_dagster.core.baseline_text import REFERENCE_POINT

# dialogue.leaderboard column -> terminal heading, rounding (None: as stored)
COLUMNS: dict[str, tuple[str, int | None]] = {
    "pool": ("pool", None),
    "language": ("lang", None),
    "target": ("target", None),
    "is_baseline": ("is_baseline", None),
    "n_dialogues": ("n_dialogues", None),
    "n_errors": ("unfinished", None),
    "explicit_acc": ("explicit_acc", 3),
    "emotion_acc": ("emotion_acc", 3),
    "drift": ("drift", 3),
    "ficr": ("ficr", 3),
    "satisfaction": ("sat", 1),
    "empathy": ("empathy", 1),
    "persona": ("persona", 1),
    "anthropomorphic": ("anthro", 1),
    "mean_turns": ("turns", 2),
    "reply_language_share": ("in_lang", 2),  # share of the target's replies in the pool's language
}
MISSING = "-"


def leaderboard_text(board: pd.DataFrame) -> str:
    """The leaderboard rows (dialogue.leaderboard) as terminal text."""
    if board.empty:
        return (
            "leaderboard: no target x pool cell has dialogues yet (every run of a cell failed, or none ran); "
            "see the runs above"
        )
    shown = pd.DataFrame(
        {
            heading: board[column].round(digits) if digits is not None else board[column]
            for column, (heading, digits) in COLUMNS.items()
            if column in board.columns
        }
    )
    lines = [shown.to_string(index=False, na_rep=MISSING)]
    unfinished = board[board["n_errors"] > 0] if "n_errors" in board.columns else board.iloc[0:0]
    if len(unfinished):
        lines.append("\ncells with unfinished dialogues (left out of every metric; '-' = no finished dialogue):")
        for row in unfinished.itertuples():
            total = int(row.n_dialogues) + int(row.n_errors)
            why = getattr(row, "failures", None)
            why_text = f": {why}" if isinstance(why, str) and why else ""
            lines.append(f"  {row.pool}|{row.target}: {int(row.n_dialogues)} of {total} finished{why_text}")
    if "is_baseline" in board.columns and board["is_baseline"].astype(bool).any():
        lines.append(f"\nis_baseline = True marks an {BASELINE_KIND}: {REFERENCE_POINT}.")
    return "\n".join(lines)
