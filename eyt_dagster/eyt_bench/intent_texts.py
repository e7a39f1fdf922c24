"""The texts whose sentence embeddings intent similarity needs (intent drift, Eq. 1, and directional alignment;
docs/eyt-metrics.md): per answered turn the simulator's intent description and the target's perceived one, and
per dialogue the ChatSEED's final intent.

One place for this rule, because two steps apply it: `dialogue_turns` hands each turn's texts to the background
encoder as the turn ends (`turn_intent_texts`), and `intent_similarity` asks for them later, from the stored
table (`table_intent_texts`). Each text is encoded alone, so its vector is the same bits whichever step asks first
(docs/throughput.md#intent-embeddings-while-the-dialogues-run).
"""

from __future__ import annotations

import pandas as pd

from eyt_dagster.eyt_bench.dialogue_loop import Turn
from eyt_dagster.eyt_bench.types import ChatSeed


def turn_intent_texts(seed: ChatSeed, turn: Turn) -> list[str]:
    """The texts of one turn as it ends: gold and perceived intent descriptions (and at turn 1 the final intent)."""
    texts = [turn.gold.intent_description, turn.predicted.intent_description]
    return [*texts, seed.final_intent] if turn.turn == 1 else texts


def table_intent_texts(turns: pd.DataFrame, finals: pd.Series) -> list[str]:
    """The distinct texts of `turns` (answered turns of finished dialogues) and of their dialogues' final intents
    (`finals`: seed id -> final intent), in order of first appearance."""
    columns = [turns["gold_intent_description"], turns["pred_intent_description"], turns["seed_id"].map(finals)]
    return list(dict.fromkeys(str(text) for column in columns for text in column))
