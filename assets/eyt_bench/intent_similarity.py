"""intent_similarity: cosine similarities of intent descriptions per turn, the inputs of intent drift
(Eq. 1) and directional alignment (docs/eyt-metrics.md), computed once per partition with sentence-transformers."""

from collections.abc import Iterable

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, table_output
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.intent_texts import table_intent_groups
from eyt_dagster.eyt_bench.table_contracts import IntentSimilarityFrame, conform_table
from eyt_dagster.partitions import by_pool, target_pool_partitions
from resources.benchmark import BenchmarkResource
from resources.embedding_groups import embed_groups

LOGIC_VERSION = "3"  # 3: each dialogue's texts encoded as one batch (vectors differ from 2 in the last bits)
COLUMNS = ["target", "pool", "seed_id", "turn", "cos_gold_pred", "cos_pred_final"]


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins={
        "dialogue_turns": AssetIn(key=["dialogue", "dialogue_turns"]),
        "chat_seeds": AssetIn(key=["dialogue", "chat_seeds"], partition_mapping=by_pool),
    },
    dagster_type=IntentSimilarityFrame,
    metadata={"partition_expr": {"target": "target", "pool": "pool"}},
    code_version=LOGIC_VERSION,
)
def intent_similarity(
    context: AssetExecutionContext, eyt: BenchmarkResource, dialogue_turns: pd.DataFrame, chat_seeds: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Per turn: cos(gold, predicted intent description) and cos(predicted, the ChatSEED's final intent)."""
    model = eyt.slate.embedding_model
    turns = answered_turns(dialogue_turns)  # finished dialogues only
    finals = chat_seeds.set_index("seed_id")["final_intent"]
    dialogues = table_intent_groups(turns, finals)
    parts = []
    stats = None
    if dialogues:
        # each dialogue's texts as one batch, most of them encoded while dialogue_turns ran (resources/embedding_groups.py)
        matrices, stats = embed_groups([group for _, _, group in dialogues], model, cache=eyt.embedding_cache)
        context.log.info(f"embeddings: {stats}")
        for (seed_id, rows, group), matrix in zip(dialogues, matrices):
            vectors = dict(zip(group, matrix))
            part = rows[["target", "pool", "seed_id", "turn"]].copy()
            part["cos_gold_pred"] = _cosines(vectors, rows["gold_intent_description"], rows["pred_intent_description"])
            part["cos_pred_final"] = _cosines(vectors, rows["pred_intent_description"], [finals[seed_id]] * len(rows))
            parts.append(part)
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    df["embedding_model"] = model
    df["created_at"] = now_utc()
    context.log.info(f"embedded {len(turns)} turns with {model}")
    early = {} if stats is None else {"groups_ready": stats.ready, "groups_under_way": stats.under_way}
    return table_output(
        conform_table(df, "dialogue.intent_similarity"),
        embedding_model=model,
        dialogues=len(dialogues),
        groups_encoded_on_request=0 if stats is None else stats.encoded_on_request,
        **early,
    )


def _cosines(vectors: dict[str, np.ndarray], left: Iterable[object], right: Iterable[object]) -> list[float]:
    """Cosine of normalised embeddings (a dot product)."""
    return [float(np.dot(vectors[str(a)], vectors[str(b)])) for a, b in zip(left, right)]
