"""The spoken EYT-Bench's partitions: `pool` as in EYT-Bench (static), `target` the slate's voice targets
(dynamic, set `voice_targets`); the cells are target x pool, keyed `pool|target` as EYT-Bench's."""

from __future__ import annotations

from dagster import DynamicPartitionsDefinition, MultiPartitionKey, MultiPartitionsDefinition

from assets._asset_args import AssetPlace
from assets.eyt_bench.partitions import pool_partitions

VOICE_TARGETS_PARTITION = "voice_targets"
VOICE_POOL = "eyt_voice"  # Dagster pool of the steps that play voiced dialogues (as EYT-Bench's simulator pool)

voice_targets = DynamicPartitionsDefinition(name=VOICE_TARGETS_PARTITION)
voice_target_pool_partitions = MultiPartitionsDefinition({"target": voice_targets, "pool": pool_partitions})


def voice_cell_key(target: str, pool: str) -> MultiPartitionKey:
    return MultiPartitionKey({"target": target, "pool": pool})


def voice_partition_tags(target: str, pool: str) -> dict[str, str]:
    """The tags `dagster job execute` (no partition flag) needs for a voice target x pool run."""
    return {
        "dagster/partition": str(voice_cell_key(target, pool)),
        "dagster/partition/pool": pool,
        "dagster/partition/target": target,
    }


# The decorator arguments every asset of a voice cell shares (its table's partition columns are target and pool).
VOICE_CELL: AssetPlace = {
    "key_prefix": ["voice"],
    "group_name": "voice",
    "partitions_def": voice_target_pool_partitions,
    "metadata": {"partition_expr": {"target": "target", "pool": "pool"}},
}
