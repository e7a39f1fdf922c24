"""The SpeechEQ builder's per-subscale summary (docs/method.md#building-items). Pure logic over speech tables."""

from __future__ import annotations

import pandas as pd

from eyt_dagster.speech_eq.table_contracts import SPEECH_BUILD_REPORT_COLUMNS

GAP_COLUMNS = ("gap_pitch", "gap_rate", "gap_centroid", "gap_rms", "gap_mfcc", "gap_duration")


def build_summary(
    scenarios: pd.DataFrame, tones: pd.DataFrame, contrasts: pd.DataFrame, items: pd.DataFrame
) -> pd.DataFrame:
    """One row per subscale: scenarios, items, bland rejections, regenerated and discarded pairs, and the
    mean total and feature gaps of the pairs that passed."""
    rows = []
    for slug, group in scenarios.groupby("subscale"):
        ids = set(group["scenario_id"])
        pairs = contrasts[contrasts["scenario_id"].isin(ids)]
        last = pairs.sort_values("attempt").groupby(["scenario_id", "turn"]).tail(1)
        passed = last[last["passed"]]
        rejected = tones[tones["scenario_id"].isin(ids) & ~tones["accepted"]]
        row = {
            "subscale": slug,
            "scenarios": len(ids),
            "items": int(items["dataset_id"].isin(ids).sum()) if len(items) else 0,
            "tones_rejected_bland": int(rejected["rejection_reason"].astype(str).str.startswith("bland").sum()),
            "pairs_regenerated": int((pairs.groupby(["scenario_id", "turn"])["attempt"].max() > 0).sum()),
            "pairs_discarded": int((~last["passed"]).sum()),
            "mean_total_passed": float(passed["total"].mean()) if len(passed) else float("nan"),
        }
        row.update(
            {f"mean_{c}": float(passed[c].mean()) if len(passed) and c in passed else float("nan") for c in GAP_COLUMNS}
        )
        rows.append(row)
    columns = [c for c in SPEECH_BUILD_REPORT_COLUMNS if c != "discarded"]
    out = pd.DataFrame(rows, columns=columns)  # no subscale built yet: the same columns, no row
    out["discarded"] = (out["scenarios"] - out["items"]).astype("int64")
    return out
