"""What an asset check returns, and the check every benchmark's tables share (no error rows). Each benchmark's
own contracts are pure functions beside it (eyt_bench/table_checks.py, speech_eq/table_checks.py); the Dagster
wiring is in each benchmark's assets package (checks.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

SHOW = 5  # how many offending ids a failed check names


@dataclass(frozen=True)
class Verdict:
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)  # Dagster metadata values


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
