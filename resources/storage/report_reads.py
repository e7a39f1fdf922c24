"""Reading whole report tables from the warehouse's Parquet files (no lock on eyt.duckdb), for the reports that
span both benchmarks: a table never materialised reads as no rows, so one benchmark alone still reports."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import pandas as pd

from resources.storage.warehouse import read_partition


def read_table(warehouse: Path, table: str, columns: Iterable[str] | None = None) -> pd.DataFrame:
    """Every row of `schema.table` (only `columns` when given), or no rows when it has no file yet."""
    columns = list(columns) if columns else None
    df = read_partition(table, {}, warehouse)
    if not len(df.columns):  # no file yet
        return pd.DataFrame(columns=columns or [])
    return df[columns] if columns else df


# table -> the columns the model cards read (None: all)
CARD_READS: dict[str, tuple[str, ...] | None] = {
    "dialogue.leaderboard": None,
    "dialogue.leaderboard_intervals": ("target", "pool", "metric", "value", "ci_low", "ci_high"),
    "dialogue.dialogue_scores": None,
    "dialogue.dialogue_turns": (
        "target",
        "pool",
        "seed_id",
        "turn",
        "error",
        "complete",
        "gold_emotion",
        "pred_emotion",
        "target_latency_s",
        "prompt_hash",
    ),
    "dialogue.judge_verdicts": ("target", "prompt_hash"),
    "dialogue.final_intent_verdicts": ("target", "prompt_hash"),
    "speech.seq_leaderboard": None,
    "speech.slm_choices": ("target", "shared_call", "cost_usd", "prompt_hash"),
    "voice.dialogue_scores": None,
}


def card_inputs(warehouse: Path) -> dict[str, pd.DataFrame]:
    """The frames build_model_cards takes, read from the warehouse."""
    t = {name: read_table(warehouse, name, cols) for name, cols in CARD_READS.items()}
    return {
        "leaderboard": t["dialogue.leaderboard"],
        "intervals": t["dialogue.leaderboard_intervals"],
        "scores": t["dialogue.dialogue_scores"],
        "turns": t["dialogue.dialogue_turns"],
        "verdict_hashes": pd.concat([t["dialogue.judge_verdicts"], t["dialogue.final_intent_verdicts"]]),
        "seq_board": t["speech.seq_leaderboard"],
        "choices": t["speech.slm_choices"],
        "voice_scores": t["voice.dialogue_scores"],
    }


def read_tables(warehouse: Path, tables: Iterable[str]) -> dict[str, pd.DataFrame]:
    return {name: read_table(warehouse, name) for name in tables}


def code_version(tables_version: str) -> str:
    """The installed package version and the export layout version (no commit hash or time, so a rerun of the
    same code on the same warehouse writes the same bytes)."""
    try:
        package = metadata.version("eyt-dagster")
    except metadata.PackageNotFoundError:
        package = "unknown"
    return f"eyt-dagster {package}, tables v{tables_version}"
