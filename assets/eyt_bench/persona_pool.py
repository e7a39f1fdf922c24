"""persona_pool: a deduplicated, seeded sample of one public persona corpus (paper §3.2)."""

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, Output, asset

from assets._output import now_utc, table_output
from eyt_dagster.eyt_bench.sampling import draw_pool, evaluation_order
from eyt_dagster.eyt_bench.table_contracts import PersonaPoolFrame, conform_table
from eyt_dagster.eyt_bench.table_rows import persona_rows
from eyt_dagster.partitions import pool_partitions
from resources.benchmark import BenchmarkResource
from resources.embeddings import embed_with_stats
from resources.persona_sources import load_pool_records

LOGIC_VERSION = "1"


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=pool_partitions,
    dagster_type=PersonaPoolFrame,
    metadata={"partition_expr": "pool"},
    code_version=LOGIC_VERSION,
)
def persona_pool(context: AssetExecutionContext, eyt: BenchmarkResource) -> Output[pd.DataFrame]:
    """Personas of one pool: near-duplicates (cosine >= threshold) removed, up to `pool_size` sampled with
    the seed (Pool A stratified by occupation group x age bucket), in a seeded evaluation order."""
    slate, pool = eyt.slate, context.partition_key
    records, where = load_pool_records(pool, slate.pools[pool])

    def embed(texts: list[str]) -> np.ndarray:
        vectors, stats = embed_with_stats(texts, slate.embedding_model, cache=eyt.embedding_cache)
        context.log.info(f"embeddings: {stats}")
        return vectors

    chosen, dedup = draw_pool(
        records, slate.pool_size, slate.seed, slate.dedup_threshold, embed=embed, stratified=(pool == "nemotron_usa")
    )
    df = persona_rows(chosen)
    df["sample_rank"] = evaluation_order(len(df), slate.seed, pool)
    df = df.sort_values("sample_rank").reset_index(drop=True)
    df["created_at"] = now_utc()
    context.log.info(
        f"{pool}: read {len(records)} from {where}, {len(dedup.duplicate_of)} near-duplicates dropped, "
        f"{len(df)} sampled"
    )
    return table_output(
        conform_table(df, "dialogue.persona_pool"),
        source=where,
        read=len(records),
        near_duplicates_dropped=len(dedup.duplicate_of),
        sampled=len(df),
        embedding_model=slate.embedding_model,
    )
