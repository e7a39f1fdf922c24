"""The persona_pool table of one pool (paper §3.2): a deduplicated, seeded sample of the pool's records in a
seeded evaluation order. Pure logic: the records and the embedding function are handed in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from eyt_dagster.eyt_bench.sampling import DedupResult, draw_pool, evaluation_order
from eyt_dagster.eyt_bench.table_rows import persona_rows
from eyt_dagster.eyt_bench.taxonomy import STRATIFIED_POOLS
from eyt_dagster.eyt_bench.types import PersonaRecord


@dataclass(frozen=True)
class PoolSample:
    rows: pd.DataFrame  # one row per sampled persona, in evaluation order
    dedup: DedupResult


def sample_pool(
    records: Sequence[PersonaRecord],
    pool: str,
    *,
    pool_size: int,
    seed: int,
    dedup_threshold: float,
    embed: Callable[[list[str]], np.ndarray],
) -> PoolSample:
    """Near-duplicates (cosine >= threshold) removed, up to `pool_size` sampled with the seed (stratified as
    STRATIFIED_POOLS says for the pools it names), ranked in a seeded evaluation order."""
    chosen, dedup = draw_pool(
        records, pool_size, seed, dedup_threshold, embed=embed, stratified=STRATIFIED_POOLS.get(pool, False)
    )
    df = persona_rows(chosen)
    df["sample_rank"] = evaluation_order(len(df), seed, pool)
    return PoolSample(df.sort_values("sample_rank").reset_index(drop=True), dedup)
