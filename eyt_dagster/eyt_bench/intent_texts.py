"""The texts whose sentence embeddings one dialogue's intent similarities need (intent drift, Eq. 1, and
directional alignment; docs/eyt-metrics.md).

One place for this rule, because two steps apply it: `dialogue_turns` hands each finished dialogue's texts to
the background encoder as soon as the dialogue ends (`result_intent_texts`), and `intent_similarity` asks for
the same texts later, from the stored table (`table_intent_groups`). A dialogue's texts are encoded together
as one batch whichever step asks first, so its vectors (and the cosines) are the same bits either way
(docs/throughput.md#intent-embeddings-while-the-dialogues-run).
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from eyt_dagster.eyt_bench.dialogue_loop import DialogueResult

Group = tuple[str, ...]


def dialogue_intent_texts(gold: Iterable[object], predicted: Iterable[object], final_intent: object) -> Group:
    """The distinct texts of one finished dialogue, in a fixed order: the simulator's intent description of
    each turn, the target's perceived one of each turn (both in turn order), then the ChatSEED's final intent."""
    return tuple(dict.fromkeys(str(text) for text in [*gold, *predicted, final_intent]))


def result_intent_texts(result: DialogueResult) -> Group | None:
    """The texts of a dialogue that just ended; None when it did not finish (no metric reads it)."""
    if result.error is not None or not result.turns:
        return None
    gold = [t.gold.intent_description for t in result.turns]
    predicted = [t.predicted.intent_description for t in result.turns]
    return dialogue_intent_texts(gold, predicted, result.seed.final_intent)


def table_intent_groups(turns: pd.DataFrame, finals: pd.Series) -> list[tuple[str, pd.DataFrame, Group]]:
    """For each dialogue of `turns` (answered turns of finished dialogues), by seed id: its rows in turn order
    and its texts; `finals` maps a seed id to its ChatSEED's final intent."""
    ordered = turns.sort_values(["seed_id", "turn"], kind="stable")
    return [
        (
            str(seed_id),
            rows,
            dialogue_intent_texts(rows["gold_intent_description"], rows["pred_intent_description"], finals[seed_id]),
        )
        for seed_id, rows in ordered.groupby("seed_id", sort=False)
    ]
