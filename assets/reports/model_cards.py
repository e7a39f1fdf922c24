"""model_cards: one row per model id across EYT-Bench and SpeechEQ (docs/reports.md).

It depends on both benchmarks' tables but reads them itself (empty when never materialised) instead of through
asset inputs, so that a slate running one benchmark only still gets its cards, with the other half NULL.
"""

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, MetadataValue, Output, asset

from assets._output import explorer_link, now_utc, table_output
from eyt_dagster.core import explorer_links
from eyt_dagster.core.baseline_text import REFERENCE_POINTS
from eyt_dagster.core.storage_types import conform
from eyt_dagster.reporting.model_card_plots import model_cards_png
from eyt_dagster.reporting.model_cards import MODEL_CARD_COLUMNS, build_model_cards
from eyt_dagster.reporting.plots import png_markdown
from resources.models.model_access import ReportAccess, SlateAccess
from resources.storage.report_reads import CARD_READS, card_inputs

# 2: the spoken EYT-Bench's half (voice_* columns, has_eyt_voice); 3: the Chinese pool's columns (eyt_cped_*), each
# pool's language and its share of replies in that language
LOGIC_VERSION = "4"  # 4: eyt_cut_replies, adaptations, sampling_adapted
BASELINE_NOTE = f"is_baseline rows are embedded rule-based baselines: {REFERENCE_POINTS}."


@asset(
    key_prefix=["reports"],
    group_name="reports",
    code_version=LOGIC_VERSION,
    deps=[AssetKey(name.split(".")) for name in CARD_READS],
)
def model_cards(context: AssetExecutionContext, slate: SlateAccess, reports: ReportAccess) -> Output[pd.DataFrame]:
    """One row per model id over both benchmarks: EYT-Bench headline metrics per pool and pooled, SpeechEQ
    Acc1 / Acc2 / Acc_traj / SEQ with the cohort, 95% intervals, cost and latency per benchmark, the model
    fingerprint and prompt hashes. A benchmark the model did not run leaves its columns NULL."""
    cards = build_model_cards(slate.slate, **card_inputs(reports.warehouse))
    cards["created_at"] = now_utc()
    cards = conform(cards, MODEL_CARD_COLUMNS, "reports.model_cards")
    both = int((cards["has_eyt_bench"] & cards["has_speech_eq"]).sum())
    context.log.info(f"{len(cards)} model cards, {both} with both benchmarks")
    plot = png_markdown(model_cards_png(cards), "Model cards") if len(cards) else "_no models yet_"
    return table_output(
        cards,
        baselines=BASELINE_NOTE,
        plot=MetadataValue.md(plot),
        both_benchmarks=both,
        slate=slate.slate.name,
        **explorer_link(explorer_links.leaderboard_path()),
    )
