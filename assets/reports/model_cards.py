"""model_cards: one row per model id across EYT-Bench and SpeechEQ (docs/reports.md).

It depends on both benchmarks' tables but reads them itself (empty when never materialised) instead of through
asset inputs, so that a slate running one benchmark only still gets its cards, with the other half NULL.
"""

from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, MetadataValue, Output, asset

from assets._output import now_utc, table_output
from eyt_dagster.model_card_plots import model_cards_png
from eyt_dagster.model_cards import MODEL_CARD_COLUMNS, build_model_cards
from eyt_dagster.plots import png_markdown
from eyt_dagster.storage_types import conform
from eyt_dagster.report_sources import read_table
from resources.models import BenchmarkResource

LOGIC_VERSION = "1"
# table -> the columns the cards read (None: all)
READS: dict[str, tuple[str, ...] | None] = {
    "dialogue.leaderboard": None,
    "dialogue.leaderboard_intervals": ("target", "pool", "metric", "value", "ci_low", "ci_high"),
    "dialogue.dialogue_scores": None,
    "dialogue.dialogue_turns": ("target", "pool", "seed_id", "turn", "error", "complete", "gold_emotion",
                                "pred_emotion", "target_latency_s", "prompt_hash"),
    "dialogue.judge_verdicts": ("target", "prompt_hash"),
    "dialogue.final_intent_verdicts": ("target", "prompt_hash"),
    "speech.seq_leaderboard": None,
    "speech.slm_choices": ("target", "shared_call", "cost_usd", "prompt_hash"),
}
BASELINE_NOTE = ("is_baseline rows are embedded rule-based baselines: reference points, not evaluations of a "
                 "language model.")


def card_inputs(warehouse: Path) -> dict[str, pd.DataFrame]:
    """The frames build_model_cards takes, read from the warehouse."""
    t = {name: read_table(warehouse, name, cols) for name, cols in READS.items()}
    return {"leaderboard": t["dialogue.leaderboard"], "intervals": t["dialogue.leaderboard_intervals"],
            "scores": t["dialogue.dialogue_scores"], "turns": t["dialogue.dialogue_turns"],
            "verdict_hashes": pd.concat([t["dialogue.judge_verdicts"], t["dialogue.final_intent_verdicts"]]),
            "seq_board": t["speech.seq_leaderboard"], "choices": t["speech.slm_choices"]}


@asset(key_prefix=["reports"], group_name="reports", code_version=LOGIC_VERSION,
       deps=[AssetKey(name.split(".")) for name in READS])
def model_cards(context: AssetExecutionContext, eyt: BenchmarkResource) -> Output[pd.DataFrame]:
    """One row per model id over both benchmarks: EYT-Bench headline metrics per pool and pooled, SpeechEQ
    Acc1 / Acc2 / Acc_traj / SEQ with the cohort, 95% intervals, cost and latency per benchmark, the model
    fingerprint and prompt hashes. A benchmark the model did not run leaves its columns NULL."""
    cards = build_model_cards(eyt.slate, **card_inputs(eyt.warehouse))
    cards["created_at"] = now_utc()
    cards = conform(cards, MODEL_CARD_COLUMNS, "reports.model_cards")
    both = int((cards["has_eyt_bench"] & cards["has_speech_eq"]).sum())
    context.log.info(f"{len(cards)} model cards, {both} with both benchmarks")
    plot = png_markdown(model_cards_png(cards), "Model cards") if len(cards) else "_no models yet_"
    return table_output(cards, baselines=BASELINE_NOTE, plot=MetadataValue.md(plot), both_benchmarks=both,
                        slate=eyt.slate.name)
