"""speech_build_report: what the SpeechEQ builder did per subscale (docs/method.md#building-items)."""

import pandas as pd
from dagster import AssetIn, MetadataValue, Output, asset

from assets._output import explorer_link, now_utc, table_output
from eyt_dagster.core import explorer_links
from eyt_dagster.reporting.plots import distribution_png, png_markdown
from eyt_dagster.speech_eq.build_summary import build_summary

LOGIC_VERSION = "2"  # 2: imported subscales, source, pairs_below_threshold, skipped_folders
GAP_UNITS = {
    "pitch": "semitones",
    "rate": "relative ZCR",
    "centroid": "relative",
    "rms": "dB",
    "mfcc": "L2",
    "duration": "relative",
}


@asset(
    key_prefix=["speech"],
    group_name="reports",
    code_version=LOGIC_VERSION,
    ins={
        name: AssetIn(key=["speech", name])
        for name in ("scenarios", "tone_instructions", "contrast_scores", "eq_items", "import_skips")
    },
)
def speech_build_report(
    scenarios: pd.DataFrame,
    tone_instructions: pd.DataFrame,
    contrast_scores: pd.DataFrame,
    eq_items: pd.DataFrame,
    import_skips: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Per subscale: scenarios, items built, tone instructions rejected as bland, pairs regenerated and
    discarded, and the mean contrast total and feature gaps of the accepted pairs."""
    df = build_summary(scenarios, tone_instructions, contrast_scores, eq_items, import_skips)
    df["created_at"] = now_utc()
    panels = [("total", "Contrast score (0-8), every attempt")] + [
        (f"gap_{name}", f"{name} gap ({unit})") for name, unit in GAP_UNITS.items()
    ]
    plots = [
        png_markdown(distribution_png(contrast_scores, column, "subscale", title=title), title)
        for column, title in panels
        if column in contrast_scores.columns
    ]
    generators = sorted(scenarios["generator"].dropna().unique()) if "generator" in scenarios else []
    return table_output(
        df,
        plot=MetadataValue.md("\n\n".join(plots)),
        items=int(df["items"].sum()),
        discarded=int(df["discarded"].sum()),
        generators=", ".join(generators),
        **explorer_link(explorer_links.speech_build_path()),
    )
