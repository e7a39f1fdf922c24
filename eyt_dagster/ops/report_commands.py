"""`eyt report` and `eyt tables`: read the warehouse's report tables (both benchmarks) and write the HTML report
or the paper tables (docs/reports.md). Model cards come from reports.model_cards when it is materialised,
else they are built from the same tables on the spot, so the commands work before the unified_reports job."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from eyt_dagster.reporting import paper_tables as pt
from eyt_dagster.reporting import table_formats as tf
from eyt_dagster.reporting.model_cards import build_model_cards
from eyt_dagster.slate import Slate
from resources.storage.report_reads import card_inputs, code_version, read_table, read_tables

SPEECH_TABLES = (
    "speech.seq_leaderboard",
    "speech.seq_breakdown",
    "speech.seq_human_alignment",
    "speech.speech_build_report",
    "speech.contrast_scores",
)
VOICE_TABLES = ("voice.voice_gap", "voice.asr_errors", "voice.prosody_effect")
CARDS = "reports.model_cards"
SEQUENTIAL_TABLES = ("sequential_decisions", "sequential_savings")  # the "Stopped when settled" section's
RUN_COSTS = "reports.run_costs"  # the "Estimated against actual cost" section's


def model_cards(warehouse: Path, slate: Slate) -> pd.DataFrame:
    cards = read_table(warehouse, CARDS)
    return cards if len(cards) else build_model_cards(slate, **card_inputs(warehouse))


def report_html(
    warehouse: Path, slate: Slate, slate_yaml: str, prompt_hashes: dict[str, str], generated_at: str | None = None
) -> str:
    """The whole report: the model cards, the EYT-Bench sections, the spoken EYT-Bench's, then SpeechEQ's."""
    from eyt_dagster.core.baseline_flags import baseline_targets
    from eyt_dagster.eyt_bench import shown_figures
    from eyt_dagster.reporting.audit_section import audit_model_section
    from eyt_dagster.reporting.corrected_section import TABLES as CORRECTED_TABLES
    from eyt_dagster.reporting.cost_section import cost_section
    from eyt_dagster.reporting.html_report import render_report
    from eyt_dagster.reporting.report_sections import REPORT_TABLES, build_sections
    from eyt_dagster.reporting.sequential_section import sequential_section
    from eyt_dagster.reporting.speech_sections import card_section, speech_sections
    from eyt_dagster.reporting.voice_sections import voice_sections

    dialogue = {}
    for name in [n for n, *_ in REPORT_TABLES] + ["leaderboard_intervals", *CORRECTED_TABLES]:
        df = read_table(warehouse, f"dialogue.{name}")
        if len(df.columns):
            dialogue[name] = df
    speech = read_tables(warehouse, SPEECH_TABLES)
    cards = model_cards(warehouse, slate)
    listed = set(baseline_targets(slate))
    named = set(cards["target"]) if len(cards) else set()
    board = speech["speech.seq_leaderboard"]
    chance = set(board.loc[board["target"] == "chance", "target"]) if len(board) else set()
    audit = audit_model_section(read_table(warehouse, "dialogue.simulator_audit"))
    settled = sequential_section(*(read_table(warehouse, f"dialogue.{t}") for t in SEQUENTIAL_TABLES))
    costs = cost_section(read_table(warehouse, RUN_COSTS))
    figures = shown_figures.figures(dialogue.get("judge_corrected"))
    sections = [
        card_section(cards, figures),
        *build_sections(dialogue),
        *([audit] if audit else []),
        *([settled] if settled else []),
        *([costs] if costs else []),
        *voice_sections(read_tables(warehouse, VOICE_TABLES)),
        *speech_sections(speech),
    ]
    return render_report(
        sections,
        title="EYT-Bench and SpeechEQ report",
        generated_at=generated_at or time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        slate_yaml=slate_yaml,
        prompt_hashes=prompt_hashes,
        baseline_targets=sorted((named & listed) | chance),
    )


def write_paper_tables(warehouse: Path, slate: Slate, out: Path, fmt: str) -> tf.Export:
    """Every paper table with rows in one format under `out`, and why each other one has none (see
    eyt_dagster/reporting/paper_tables.py)."""
    sources = read_tables(warehouse, [*(n for n in pt.SOURCE_TABLES if n != CARDS), pt.CORRECTED_SOURCE])
    sources[CARDS] = model_cards(warehouse, slate)
    footnote = pt.provenance(sources, slate=slate.name, seed=slate.seed, code_version=code_version(pt.TABLES_VERSION))
    return tf.export_tables(pt.build_tables(sources), sources, out, fmt, footnote)


# Where the commands write when not told, under the data directory (docs/reports.md#where-the-commands-write)
REPORT_FILE = Path("reports") / "eyt_report.html"
TABLES_DIR = Path("tables")  # then the format: tables/latex/, tables/markdown/, tables/csv/
SPEECH_EXPORT_DIR = Path("speecheq_items")


def default_output(data_dir: Path, relative: Path) -> Path:
    """A command's default output under the data directory, as an absolute path (printed as such)."""
    return (data_dir / relative).resolve()
