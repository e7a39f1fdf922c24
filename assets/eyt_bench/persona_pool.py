"""persona_pool: a deduplicated, seeded sample of one public persona corpus (paper §3.2)."""

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, Output, asset

from assets._output import now_utc, table_of, table_output
from assets.eyt_bench.partitions import pool_partitions
from eyt_dagster.eyt_bench.persona_pool import sample_pool
from eyt_dagster.eyt_bench.table_contracts import PersonaPoolFrame, conform_table
from resources.datasets.persona_sources import load_pool_records
from resources.models.model_access import EmbeddingAccess, SlateAccess
from resources.text.embeddings import embed_with_stats

LOGIC_VERSION = "1"


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=pool_partitions,
    dagster_type=PersonaPoolFrame,
    metadata={"partition_expr": "pool"},
    code_version=LOGIC_VERSION,
)
def persona_pool(
    context: AssetExecutionContext, slate: SlateAccess, embeddings: EmbeddingAccess
) -> Output[pd.DataFrame]:
    """Personas of one pool: near-duplicates (cosine >= threshold) removed, up to `pool_size` sampled with
    the seed (Pool A stratified by occupation group x age bucket), in a seeded evaluation order."""
    current, pool = slate.slate, context.partition_key
    records, where = load_pool_records(pool, current.pools[pool])
    model = current.pool_embedding_model(pool)

    def embed(texts: list[str]) -> np.ndarray:
        vectors, stats = embed_with_stats(texts, model, cache=embeddings.embedding_cache)
        context.log.info(f"embeddings: {stats}")
        return vectors

    sample = sample_pool(
        records,
        pool,
        pool_size=current.pool_size,
        seed=current.seed,
        dedup_threshold=current.pool_calibration(pool).dedup_threshold,
        embed=embed,
    )
    df = sample.rows
    df["created_at"] = now_utc()
    dropped = len(sample.dedup.duplicate_of)
    context.log.info(f"{pool}: read {len(records)} from {where}, {dropped} near-duplicates dropped, {len(df)} sampled")
    return table_output(
        conform_table(df, table_of(context)),
        source=where,
        read=len(records),
        near_duplicates_dropped=dropped,
        sampled=len(df),
        embedding_model=model,
    )
