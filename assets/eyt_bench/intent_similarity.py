"""intent_similarity: cosine similarities of intent descriptions per turn, the inputs of intent drift
(Eq. 1) and directional alignment (docs/eyt-metrics.md), computed once per partition with sentence-transformers."""

from functools import partial

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, table_of, table_output
from assets._progress import step_progress
from assets.eyt_bench.partitions import by_pool, target_pool_partitions
from eyt_dagster.eyt_bench.intent_similarity import intent_similarities, intent_texts
from eyt_dagster.eyt_bench.table_contracts import IntentSimilarityFrame, conform_table
from resources.models.model_access import EmbeddingAccess, SlateAccess
from resources.text.onnx_encoder import text_encoder

LOGIC_VERSION = "3"  # 3: each dialogue's texts encoded as one batch (each text encoded alone: vectors differ from 2 in the last bits)


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
    context: AssetExecutionContext,
    slate: SlateAccess,
    embeddings: EmbeddingAccess,
    dialogue_turns: pd.DataFrame,
    chat_seeds: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Per turn: cos(gold, predicted intent description) and cos(predicted, the ChatSEED's final intent)."""
    model = slate.slate.pool_embedding_model(context.partition_key.keys_by_dimension["pool"])
    # the distinct texts are counted before the encoder is asked for them
    progress = step_progress(
        context,
        embeddings.data_dir,
        "texts embedded",
        lambda done, total: f"intent texts: {done} of {total} embedded",
        every=100,
        total=len(intent_texts(dialogue_turns, chat_seeds)),
    )
    with progress as on_done:
        # each text encoded alone, most of them while dialogue_turns ran (resources/text/embedding_queue.py)
        encoder = embeddings.early_embeddings(model)
        df, stats = intent_similarities(dialogue_turns, chat_seeds, partial(encoder.embed, on_done=on_done))
    # the queue keeps the utterances for simulator_audit, which runs next and then drops what is left
    if stats is not None:
        context.log.info(f"embeddings: {stats}")
    df["embedding_model"] = model
    df["created_at"] = now_utc()
    context.log.info(f"embedded {len(df)} turns with {model}")
    early: dict[str, object] = {} if stats is None else {"texts_ready": stats.ready, "texts_under_way": stats.under_way}
    if stats is not None and stats.texts > stats.cached:  # the encoder was built: say which (onnx_encoder.py)
        early["embedding_backend"] = text_encoder(model).backend
    return table_output(
        conform_table(df, table_of(context)),
        embedding_model=model,
        texts=0 if stats is None else stats.texts,
        texts_encoded_on_request=0 if stats is None else stats.encoded_on_request,
        **early,
    )
