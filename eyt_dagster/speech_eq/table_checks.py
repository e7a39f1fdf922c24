"""SpeechEQ's table contracts, pure functions over a table's rows. Dagster wiring: assets/speech_eq/checks.py."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from eyt_dagster.core.table_checks import SHOW, Verdict


def one_resonant_candidate_per_test_turn(items: pd.DataFrame) -> Verdict:
    """Every item has, for turns 4 and 6, one resonant and one dissonant clip: two different files on disk."""
    problems = []
    for row in items.itertuples():
        for turn in (4, 6):
            resonant, dissonant = getattr(row, f"turn{turn}_resonant_path"), getattr(row, f"turn{turn}_dissonant_path")
            if not isinstance(resonant, str) or not isinstance(dissonant, str) or resonant == dissonant:
                problems.append(f"{row.dataset_id} turn {turn}: needs two distinct candidate clips")
            elif not Path(resonant).is_file() or not Path(dissonant).is_file():
                problems.append(f"{row.dataset_id} turn {turn}: a candidate clip is missing on disk")
    return Verdict(
        not problems,
        f"{len(items)} item(s), {len(problems)} problem(s)" + (f"; first: {problems[0]}" if problems else ""),
        {"items": len(items), "problems": "; ".join(problems[:SHOW])},
    )
