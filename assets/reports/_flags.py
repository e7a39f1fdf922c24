"""Columns every target-level report carries: whether a row is an embedded baseline, and whether the target
shares a family with a judge (self-preference risk)."""

import pandas as pd

from eyt_dagster.core.slate import Slate


def flag_targets(df: pd.DataFrame, slate: Slate, column: str = "target") -> pd.DataFrame:
    """Add is_baseline and self_preference_risk for the targets named in `column`."""
    refs = {t.id: t for t in slate.targets}
    out = df.copy()
    out["is_baseline"] = out[column].map(lambda t: bool(refs[t].is_baseline) if t in refs else False).astype(bool)
    out["self_preference_risk"] = out[column].map(lambda t: t in refs and slate.self_preference_risk(t)).astype(bool)
    return out


def baseline_note(df: pd.DataFrame, column: str = "target") -> str:
    names = sorted(df.loc[df["is_baseline"], column].unique()) if "is_baseline" in df and len(df) else []
    return (f"{', '.join(names)}: embedded rule-based baselines, reference points only, not evaluations of a model"
            if names else "no embedded baselines in this table")
