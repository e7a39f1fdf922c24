"""intent_similarity: cosine similarities of intent descriptions per turn, the inputs of intent drift
(Eq. 1) and directional alignment (docs/eyt-metrics.md), computed once per partition with sentence-transformers."""

from collections.abc import Iterable

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, table_output
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.intent_texts import table_intent_texts
from eyt_dagster.eyt_bench.table_contracts import IntentSimilarityFrame, conform_table
from eyt_dagster.partitions import by_pool, target_pool_partitions
from resources.benchmark import BenchmarkResource
from resources.embedding_queue import QUEUE, embed_queued
from resources.onnx_encoder import text_encoder

LOGIC_VERSION = "3"  # 3: each dialogue's texts encoded as one batch (each text encoded alone: vectors differ from 2 in the last bits)
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
    # after the verdict steps of the run (Dagster runs the ready step of highest priority first): the background
    # encoder keeps working on the texts dialogue_turns handed over while the judges are asked
    op_tags={"dagster/priority": "-1"},
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
    stats = None
    if len(turns):
        # each text encoded alone, most of them while dialogue_turns ran (resources/embedding_queue.py)
        vectors, stats = embed_queued(table_intent_texts(turns, finals), model, cache=eyt.embedding_cache)
        context.log.info(f"embeddings: {stats}")
        df["cos_gold_pred"] = _cosines(vectors, turns["gold_intent_description"], turns["pred_intent_description"])
        df["cos_pred_final"] = _cosines(vectors, turns["pred_intent_description"], turns["final_intent"])
    else:
        df = pd.DataFrame(columns=COLUMNS)
    # what is still queued belongs to dialogues that did not finish (no metric reads them): not worth the CPU
    QUEUE.forget()
    df["embedding_model"] = model
    df["created_at"] = now_utc()
    context.log.info(f"embedded {len(turns)} turns with {model}")
    early: dict[str, object] = {} if stats is None else {"texts_ready": stats.ready, "texts_under_way": stats.under_way}
    if stats is not None and stats.texts > stats.cached:  # the encoder was built: say which (onnx_encoder.py)
        early["embedding_backend"] = text_encoder(model).backend
    return table_output(
        conform_table(df, "dialogue.intent_similarity"),
        embedding_model=model,
        texts=0 if stats is None else stats.texts,
        texts_encoded_on_request=0 if stats is None else stats.encoded_on_request,
        **early,
    )


def _cosines(vectors: dict[str, np.ndarray], left: Iterable[object], right: Iterable[object]) -> list[float]:
    """Cosine of normalised embeddings (a dot product)."""
    return [float(np.dot(vectors[str(a)], vectors[str(b)])) for a, b in zip(left, right)]
