"""Contracts the asset checks guard (docs/method.md), pure functions over a table's rows: each says whether it
holds and a few facts for the UI. Dagster wiring is in assets/checks.py."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from eyt_dagster.eyt_bench.unfinished import allowed_unfinished, cell_completion, enough_finished

SHOW = 5  # how many offending ids a failed check names


@dataclass(frozen=True)
class Verdict:
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)  # Dagster metadata values


def dialogues_within_t_max(turns: pd.DataFrame, t_max: int) -> Verdict:
    """No dialogue runs beyond T_max turns (Algorithm 1's hard stop)."""
    over = turns[turns["turn"] > t_max] if len(turns) else turns
    ids = sorted(over["seed_id"].unique())[:SHOW] if len(over) else []
    longest = int(turns["turn"].max()) if len(turns) else 0
    return Verdict(
        over.empty,
        f"longest dialogue: {longest} turn(s); T_max = {t_max}",
        {"longest": longest, "t_max": t_max, "over_t_max": ", ".join(ids)},
    )


def enough_finished_dialogues(turns: pd.DataFrame, max_fraction: float) -> Verdict:
    """At least one dialogue of the cell finished and at most `max_fraction` of them (the slate's
    max_unfinished_fraction) did not; the description names the unfinished ones' failures by role and kind."""
    done = cell_completion(turns)
    allowed = allowed_unfinished(done.dialogues, max_fraction)
    text = f"{done.finished} of {done.dialogues} dialogues finished"
    if done.dialogues == 0:
        text += " (no usable ChatSEED: see dialogue.chat_seeds.error)"
    text += f"; at most {allowed} may be unfinished (max_unfinished_fraction {max_fraction:g})"
    if done.failures:
        text += f"; unfinished: {done.failures}"
    passed = enough_finished(done, max_fraction)
    if not passed and done.dialogues:
        text += (
            "; see dialogue.dialogue_turns.error, fix the cause and rerun the partition (finished calls come "
            "from the call cache)"
        )
    return Verdict(
        passed,
        text,
        {
            "dialogues": done.dialogues,
            "finished": done.finished,
            "unfinished": done.unfinished,
            "allowed_unfinished": allowed,
            "failures": done.failures,
        },
    )


def subscores_in_scale(verdicts: pd.DataFrame, scale: Iterable[float]) -> Verdict:
    """Every judge sub-score is a value of the judge scale (missing only on error rows)."""
    allowed = sorted(set(scale))
    columns = [c for c in SUBSCORE_COLUMNS if c in verdicts.columns]
    scored = verdicts[verdicts["error"].isna()] if "error" in verdicts.columns else verdicts
    bad = {c: int((~scored[c].isin(allowed)).sum()) for c in columns}
    bad = {c: n for c, n in bad.items() if n}
    return Verdict(
        not bad,
        f"sub-scores outside {allowed}: {sum(bad.values())}",
        {"allowed": str(allowed), "columns_with_bad_values": ", ".join(sorted(bad))},
    )


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


def no_error_rows(df: pd.DataFrame, id_column: str) -> Verdict:
    """Rows whose call failed are listed, so none goes unreported; rerun the partition to retry them (finished
    calls come from the call cache)."""
    errors = df[df["error"].notna()] if "error" in df.columns and len(df) else df.iloc[0:0]
    ids = [str(x) for x in errors[id_column].unique()[:SHOW]] if len(errors) else []
    first = str(errors["error"].iloc[0])[:300] if len(errors) else ""
    return Verdict(
        errors.empty,
        f"{len(errors)} error row(s)" + (f"; first: {first}" if first else ""),
        {"error_rows": len(errors), "ids": ", ".join(ids)},
    )
