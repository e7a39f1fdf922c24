"""EYT-Bench's partitions (docs/method.md#partitions): `pool` is static, `target` is dynamic (one key per slate
target), and the cells are target x pool."""

from __future__ import annotations

from dagster import (
    DynamicPartitionsDefinition,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    MultiToSingleDimensionPartitionMapping,
    StaticPartitionsDefinition,
)

from eyt_dagster.eyt_bench.taxonomy import POOLS

TARGETS_PARTITION = "targets"

pool_partitions = StaticPartitionsDefinition(list(POOLS))
target_partitions = DynamicPartitionsDefinition(name=TARGETS_PARTITION)
target_pool_partitions = MultiPartitionsDefinition({"target": target_partitions, "pool": pool_partitions})

# A pool-partitioned upstream feeds each target x pool partition of the same pool.
by_pool = MultiToSingleDimensionPartitionMapping(partition_dimension_name="pool")


def target_pool_key(target: str, pool: str) -> MultiPartitionKey:
    return MultiPartitionKey({"target": target, "pool": pool})


def partition_tags(target: str, pool: str) -> dict[str, str]:
    """The tags `dagster job execute` (no partition flag) needs for a target x pool run (docs/operations.md)."""
    return {
        "dagster/partition": str(target_pool_key(target, pool)),
        "dagster/partition/pool": pool,
        "dagster/partition/target": target,
    }


# Dagster pools of the steps that call a model every target x pool cell shares: at most the pool's limit of such
# steps run at once across all runs of the instance. A cluster sets one (deploy/dagster.yaml), so the judge's and the
# simulator's `max_concurrency` is what their endpoints get in total across machines; one machine needs none, since
# its processes share each endpoint's budget through lock files (docs/endpoint-budgets.md).
JUDGE_POOL = "eyt_judge"
SIMULATOR_POOL = "eyt_simulator"
