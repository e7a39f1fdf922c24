"""The intent_similarity table of one cell: per answered turn of a finished dialogue, cos(gold, predicted intent
description) and cos(predicted, the ChatSEED's final intent), the inputs of intent drift (Eq. 1) and directional
alignment (docs/eyt-metrics.md). Pure logic: the embedding function is handed in."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from eyt_dagster.core.bounds import cosine
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.intent_texts import table_intent_texts
from eyt_dagster.eyt_bench.table_contracts import INTENT_SIMILARITY_COLUMNS

# the table's columns as its contract (table_contracts.py) orders them, without what the asset adds
# (the embedding model, created_at)
COLUMNS = column_names(INTENT_SIMILARITY_COLUMNS, without=("embedding_model", "created_at"))
# texts -> (text -> its normalised vector, what the embedding cost: stats for the run log)
Embed = Callable[[list[str]], tuple[dict[str, np.ndarray], Any]]


def intent_similarities(
    dialogue_turns: pd.DataFrame, chat_seeds: pd.DataFrame, embed: Embed
) -> tuple[pd.DataFrame, Any]:
    """The table's rows, and the embedding's stats (None when no turn was answered)."""
    turns, finals = _answered(dialogue_turns, chat_seeds)
    if not len(turns):
        return pd.DataFrame(columns=COLUMNS), None
    df = turns[["target", "pool", "seed_id", "turn"]].copy()
    vectors, stats = embed(table_intent_texts(turns, finals))
    df["cos_gold_pred"] = _cosines(vectors, turns["gold_intent_description"], turns["pred_intent_description"])
    df["cos_pred_final"] = _cosines(vectors, turns["pred_intent_description"], turns["final_intent"])
    return df, stats


def intent_texts(dialogue_turns: pd.DataFrame, chat_seeds: pd.DataFrame) -> list[str]:
    """The distinct texts `intent_similarities` embeds (a step counts them before it builds its encoder)."""
    turns, finals = _answered(dialogue_turns, chat_seeds)
    return table_intent_texts(turns, finals) if len(turns) else []


def _answered(dialogue_turns: pd.DataFrame, chat_seeds: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """The answered turns of finished dialogues, each with its ChatSEED's final intent, and seed id -> that intent."""
    turns = answered_turns(dialogue_turns).copy()
    finals = chat_seeds.set_index("seed_id")["final_intent"]
    turns["final_intent"] = turns["seed_id"].map(finals)
    return turns, finals


def _cosines(vectors: dict[str, np.ndarray], left: Iterable[object], right: Iterable[object]) -> list[float]:
    """Cosine of normalised embeddings (a dot product), within [-1, 1] (core/bounds.py)."""
    return [cosine(vectors[str(a)], vectors[str(b)]) for a, b in zip(left, right)]
