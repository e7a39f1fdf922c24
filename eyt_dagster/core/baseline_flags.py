"""Embedded baselines in the reports, in one place: which slate targets are baselines, the columns every
target-level report carries (whether a row is an embedded baseline, and whether the target shares a family
with a judge: self-preference risk), and the note that says what a baseline row is."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import pandas as pd

from eyt_dagster.core.baseline_text import REFERENCE_POINTS
from eyt_dagster.core.model_ref import ModelRef


class Slate(Protocol):
    """What the flags read from a slate: its targets and whether one shares a family with a judge."""

    @property
    def targets(self) -> Sequence[ModelRef]: ...
    def self_preference_risk(self, target_id: str) -> bool: ...


# What an embedded baseline is, as written into dialogue.leaderboard.target_kind and every note below.
BASELINE_KIND = "embedded baseline (rule-based, not a language model)"


def is_baseline(slate: Slate, target_id: str) -> bool:
    """True for a slate target played by an embedded baseline; False for a model or a target not in the slate."""
    refs = {t.id: t for t in slate.targets}
    return bool(refs[target_id].is_baseline) if target_id in refs else False


def baseline_targets(slate: Slate) -> list[str]:
    """The ids of the slate's targets that are embedded baselines, sorted."""
    return sorted(t.id for t in slate.targets if is_baseline(slate, t.id))


def flag_targets(df: pd.DataFrame, slate: Slate, column: str = "target") -> pd.DataFrame:
    """Add is_baseline and self_preference_risk for the targets named in `column`."""
    refs = {t.id: t for t in slate.targets}
    out = df.copy()
    out["is_baseline"] = out[column].map(lambda t: is_baseline(slate, t)).astype(bool)
    out["self_preference_risk"] = out[column].map(lambda t: t in refs and slate.self_preference_risk(t)).astype(bool)
    return out


def baseline_note_for(names: Iterable[str]) -> str:
    """The note a table carries about its baseline rows."""
    names = sorted(set(names))
    return (
        f"Rows for {', '.join(names)} are {BASELINE_KIND}s: {REFERENCE_POINTS}."
        if names
        else "No embedded baselines in this table."
    )


def baseline_note(df: pd.DataFrame, column: str = "target") -> str:
    """The note for a table flagged by `flag_targets` (its is_baseline rows)."""
    names = df.loc[df["is_baseline"], column].unique() if "is_baseline" in df and len(df) else []
    return baseline_note_for(names)
