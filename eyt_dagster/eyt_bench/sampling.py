"""Deduplication and seeded (stratified) sampling of persona pools (paper §3.2, docs/method.md). Pure logic."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from eyt_dagster.eyt_bench.personas import OTHER_GROUP
from eyt_dagster.eyt_bench.types import PersonaRecord


@dataclass(frozen=True)
class DedupResult:
    """Records kept (sorted by persona_id) and, for each dropped one, the kept id it duplicates."""

    kept: list[PersonaRecord]
    duplicate_of: dict[str, str] = field(default_factory=dict)


def deduplicate(records: Sequence[PersonaRecord], embeddings: np.ndarray, threshold: float) -> DedupResult:
    """Greedy near-duplicate removal (paper App. B: cosine >= threshold on all-MiniLM-L6-v2).

    Records are visited in persona_id order, so the result does not depend on file order; a record is
    kept unless its cosine to an already-kept record is >= threshold. Row i of `embeddings` is record i.
    """
    if len(records) != len(embeddings):
        raise ValueError(f"{len(records)} records but {len(embeddings)} embeddings")
    vectors = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0.0, 1.0, norms)
    kept_idx: list[int] = []
    duplicate_of: dict[str, str] = {}
    for i in sorted(range(len(records)), key=lambda k: records[k].persona_id):
        if kept_idx:
            sims = vectors[kept_idx] @ vectors[i]
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                duplicate_of[records[i].persona_id] = records[kept_idx[best]].persona_id
                continue
        kept_idx.append(i)
    return DedupResult(kept=[records[i] for i in kept_idx], duplicate_of=duplicate_of)


def occupation_age_stratum(record: PersonaRecord) -> str:
    """Pool A's stratum (paper App. B): occupation_group x age_bucket."""
    return f"{record.attributes.get('occupation_group', OTHER_GROUP)}|{record.attributes.get('age_bucket', 'unknown')}"


def sex_age_stratum(record: PersonaRecord) -> str:
    """CPED's stratum: the speaker's gender x age bucket."""
    return f"{record.attributes.get('sex', 'unknown')}|{record.attributes.get('age_bucket', 'unknown')}"


# The stratum functions by the names taxonomy.STRATIFIED_POOLS gives them.
STRATA: dict[str, Callable[[PersonaRecord], str]] = {
    "occupation_age": occupation_age_stratum,
    "sex_age": sex_age_stratum,
}


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of n over strata, largest-remainder rounding (ties by stratum name)."""
    total = sum(sizes.values())
    if total == 0 or n <= 0:
        return {s: 0 for s in sizes}
    exact = {s: n * size / total for s, size in sizes.items()}
    quota = {s: int(q) for s, q in exact.items()}
    by_remainder = sorted(sizes, key=lambda s: (-(exact[s] - quota[s]), s))
    for s in by_remainder[: n - sum(quota.values())]:
        quota[s] += 1
    return quota


def stratified_sample(
    records: Sequence[PersonaRecord], n: int, seed: int, strata_key: Callable[[PersonaRecord], str]
) -> list[PersonaRecord]:
    """Seeded stratified sample of up to n records, sorted by persona_id.

    Each stratum gets its proportional share (`allocate`) and is sampled with its own RNG seeded by
    (seed, stratum), so one stratum's draw does not depend on the others. n >= len(records) returns all.
    """
    ordered = sorted(records, key=lambda r: r.persona_id)
    if n >= len(ordered):
        return ordered
    strata: dict[str, list[PersonaRecord]] = {}
    for record in ordered:
        strata.setdefault(strata_key(record), []).append(record)
    quota = allocate({s: len(members) for s, members in strata.items()}, n)
    chosen = [
        record
        for stratum, members in strata.items()
        for record in random.Random(f"{seed}:{stratum}").sample(members, quota[stratum])
    ]
    return sorted(chosen, key=lambda r: r.persona_id)


def sample(records: Sequence[PersonaRecord], n: int, seed: int) -> list[PersonaRecord]:
    """Seeded simple random sample of up to n records (Pool B), sorted by persona_id."""
    return stratified_sample(records, n, seed, lambda _record: "all")


# Candidates drawn before embedding: a full release (1M Nemotron rows) is too large to embed whole on
# a CPU, and pool_size x this factor leaves room for the near-duplicates that deduplication drops.
OVERSAMPLE = 3


def draw_pool(
    records: Sequence[PersonaRecord],
    pool_size: int,
    seed: int,
    threshold: float,
    *,
    embed: Callable[[list[str]], np.ndarray],
    stratified: bool | str,
) -> tuple[list[PersonaRecord], DedupResult]:
    """Draw candidates, drop near-duplicates (cosine >= threshold), then sample pool_size with the seed;
    stratified by the stratum named in STRATA (True: occupation group x age bucket, Pool A's), else simple."""
    if stratified is True:
        stratified = "occupation_age"
    strata = STRATA[stratified] if stratified else (lambda _record: "all")
    candidates = stratified_sample(records, pool_size * OVERSAMPLE, seed, strata)
    dedup = deduplicate(candidates, embed([r.persona_text for r in candidates]), threshold)
    return stratified_sample(dedup.kept, pool_size, seed, strata), dedup


def evaluation_order(count: int, seed: int, pool: str) -> list[int]:
    """A seeded random rank for each of `count` sampled personas. The first `dialogues_per_pool` by this rank
    get ChatSEEDs, so the evaluation subset is a random draw from the sample rather than the lowest persona ids."""
    ranks = list(range(count))
    random.Random(f"{seed}:{pool}:order").shuffle(ranks)
    return ranks
