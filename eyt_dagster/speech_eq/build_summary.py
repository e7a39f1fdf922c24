"""The SpeechEQ builder's per-subscale summary (docs/method.md#building-items). Pure logic over speech tables."""

from __future__ import annotations

from pathlib import PurePath

import pandas as pd

from eyt_dagster.speech_eq.table_contracts import SPEECH_BUILD_REPORT_COLUMNS

GAP_COLUMNS = ("gap_pitch", "gap_rate", "gap_centroid", "gap_rms", "gap_mfcc", "gap_duration")


def build_summary(
    scenarios: pd.DataFrame,
    tones: pd.DataFrame,
    contrasts: pd.DataFrame,
    items: pd.DataFrame,
    skips: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per subscale, built or imported: where its items came from (`source`: generated, or imported and the
    folder), scenarios, items, bland rejections, regenerated and discarded pairs, the published pairs below the
    contrast filter's threshold (imported items are scored, never dropped), and the mean total and feature gaps of
    the pairs that passed; with `skips` (speech.import_skips), the item folders an import skipped."""
    built = set(scenarios["subscale"]) if len(scenarios) else set()
    skipped = skips.groupby("subscale").size() if skips is not None and len(skips) else pd.Series(dtype="int64")
    imported_items = _imported(items)
    rows = []
    for slug in sorted(built | set(imported_items["subscale"]) | set(skipped.index)):
        group = scenarios[scenarios["subscale"] == slug] if len(scenarios) else scenarios
        generated = set(group["scenario_id"]) if len(group) else set()
        mine = imported_items[imported_items["subscale"] == slug]
        ids = generated | set(mine["dataset_id"])
        pairs = contrasts[contrasts["scenario_id"].isin(ids)] if len(contrasts) else contrasts
        last = pairs.sort_values("attempt").groupby(["scenario_id", "turn"]).tail(1) if len(pairs) else pairs
        passed = last[last["passed"].astype(bool)] if len(last) else last
        published = last[last["scenario_id"].isin(set(mine["dataset_id"]))] if len(last) else last
        rejected = tones[tones["scenario_id"].isin(ids) & ~tones["accepted"]] if len(tones) else tones
        folders = sorted(set(mine["source"].astype(str)))
        source = "generated" if not len(mine) else "imported from " + ", ".join(sorted({_root(f) for f in folders}))
        if len(mine) and len(group):
            source = "generated + " + source
        row = {
            "subscale": slug,
            "source": source,
            "scenarios": len(generated),
            "items": int(items["dataset_id"].isin(ids).sum()) if len(items) else 0,
            "tones_rejected_bland": int(rejected["rejection_reason"].astype(str).str.startswith("bland").sum())
            if len(rejected)
            else 0,
            "pairs_regenerated": int((pairs.groupby(["scenario_id", "turn"])["attempt"].max() > 0).sum())
            if len(pairs)
            else 0,
            "pairs_discarded": int((~last["passed"].astype(bool)).sum()) - _count_failed(published) if len(last) else 0,
            "pairs_below_threshold": _count_failed(published),
            "skipped_folders": int(skipped.get(slug, 0)),
            "mean_total_passed": float(passed["total"].mean()) if len(passed) else float("nan"),
            # generated scenarios that did not become an item (an imported item is its own scenario)
            "discarded": len(generated) - int(items["dataset_id"].isin(generated).sum())
            if len(items)
            else len(generated),
        }
        row.update(
            {f"mean_{c}": float(passed[c].mean()) if len(passed) and c in passed else float("nan") for c in GAP_COLUMNS}
        )
        rows.append(row)
    out = pd.DataFrame(rows, columns=list(SPEECH_BUILD_REPORT_COLUMNS))  # nothing built yet: the columns, no row
    out["discarded"] = out["discarded"].astype("int64")
    return out


def _imported(items: pd.DataFrame) -> pd.DataFrame:
    """The rows of items imported from released data (their `source` is the folder, not 'generated')."""
    if not len(items) or "source" not in items.columns:
        return pd.DataFrame(columns=["subscale", "dataset_id", "source"])
    return items[items["source"].astype(str) != "generated"][["subscale", "dataset_id", "source"]]


def _count_failed(pairs: pd.DataFrame) -> int:
    return int((~pairs["passed"].astype(bool)).sum()) if len(pairs) else 0


def _root(folder: str) -> str:
    """The released data's root of an item folder (<root>/<subscale>/<id>)."""
    return str(PurePath(folder).parent.parent)
