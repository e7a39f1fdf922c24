"""intent_similarity: cosine similarities of intent descriptions per turn, the inputs of intent drift
(Eq. 1) and directional alignment (docs/eyt-metrics.md), computed once per partition with sentence-transformers."""

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, table_output
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.table_contracts import IntentSimilarityFrame, conform_table
from eyt_dagster.partitions import by_pool, target_pool_partitions
from resources.benchmark import BenchmarkResource
from resources.embeddings import embed_with_stats

LOGIC_VERSION = "2"
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
    turns = answered_turns(dialogue_turns).copy()  # finished dialogues only
    finals = chat_seeds.set_index("seed_id")["final_intent"]
    turns["final_intent"] = turns["seed_id"].map(finals)
    df = turns[["target", "pool", "seed_id", "turn"]].copy()
    if len(turns):
        texts = pd.unique(
            pd.concat(
                [turns["gold_intent_description"], turns["pred_intent_description"], turns["final_intent"]]
            ).astype(str)
        )
        matrix, stats = embed_with_stats(list(texts), model, cache=eyt.embedding_cache)
        vectors = dict(zip(texts, matrix))
        context.log.info(f"embeddings: {stats}")
        df["cos_gold_pred"] = _cosines(vectors, turns["gold_intent_description"], turns["pred_intent_description"])
        df["cos_pred_final"] = _cosines(vectors, turns["pred_intent_description"], turns["final_intent"])
    else:
        df = pd.DataFrame(columns=COLUMNS)
    df["embedding_model"] = model
    df["created_at"] = now_utc()
    context.log.info(f"embedded {len(turns)} turns with {model}")
    return table_output(conform_table(df, "dialogue.intent_similarity"), embedding_model=model)


def _cosines(vectors: dict[str, np.ndarray], left: pd.Series, right: pd.Series) -> list[float]:
    """Cosine of normalised embeddings (a dot product)."""
    return [float(np.dot(vectors[str(a)], vectors[str(b)])) for a, b in zip(left, right)]
