"""The partitions of a slate: which dynamic partition set holds each benchmark's targets (for the code that
registers and removes slate targets), and the pool dimension each asset gets when the code location loads a slate.

Each benchmark's partitions are written with its assets (assets/eyt_bench/partitions.py, assets/speech_eq/partitions.py,
assets/eyt_voice/partitions.py) over every pool the project knows. The code location narrows them to the slate
(`SlatePartitions`): a pool the slate does not play is no partition of the location, so the UI never counts it as
missing (docs/refresh.md#what-the-ui-counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from dagster import (
    AssetChecksDefinition,
    AssetsDefinition,
    AssetSpec,
    DynamicPartitionsDefinition,
    MultiPartitionsDefinition,
    PartitionsDefinition,
    StaticPartitionsDefinition,
    map_asset_specs,
)

from assets.eyt_bench.partitions import TARGETS_PARTITION, pool_partitions
from assets.eyt_voice.partitions import VOICE_TARGETS_PARTITION
from assets.eyt_voice.partitions import voice_target_pool_partitions as voice_cells
from assets.speech_eq.partitions import SPEECH_TARGETS_PARTITION
from eyt_dagster.slate import Slate

# benchmark -> the dynamic partitions set of its targets
TARGET_PARTITION_SETS: dict[Literal["eyt_bench", "speech_eq", "eyt_voice"], str] = {
    "eyt_bench": TARGETS_PARTITION,
    "speech_eq": SPEECH_TARGETS_PARTITION,
    "eyt_voice": VOICE_TARGETS_PARTITION,
}
POOL_DIMENSION = "pool"


def voice_pools(slate: Slate) -> list[str]:
    """The pools of the spoken EYT-Bench's cells: those some voice target of the slate hears (Slate.voice_pools_of),
    in slate order; every slate pool when the slate has no voice target."""
    heard = {pool for target in slate.voice_targets for pool in slate.voice_pools_of(target.id)}
    return [pool for pool in slate.pools if pool in heard] if slate.voice_targets else list(slate.pools)


def unheard_cells(slate: Slate) -> list[tuple[str, str]]:
    """(voice target, pool) of the voice cells inside the location's partitions that the slate does not play: a
    cascade whose recogniser writes English only, on a pool another voice target hears in another language."""
    pools = voice_pools(slate)
    return [
        (target.id, pool)
        for target in slate.voice_targets
        for pool in pools
        if pool not in slate.voice_pools_of(target.id)
    ]


class SlatePartitions:
    """The asset partitions of one slate: every partitions definition keyed by pool (alone, or as the `pool`
    dimension beside a target set) is narrowed to the pools the slate plays: its `pools` for EYT-Bench, and for
    the spoken EYT-Bench the pools some voice target hears. Target sets are dynamic and already the slate's
    (registered from it); other definitions (subscales) are kept as written."""

    def __init__(self, slate: Slate) -> None:
        self.pools = StaticPartitionsDefinition(list(slate.pools))
        self.voice_pools = StaticPartitionsDefinition(voice_pools(slate))
        self._done: dict[int, PartitionsDefinition[Any]] = {}

    def of(self, pdef: PartitionsDefinition[Any] | None) -> PartitionsDefinition[Any] | None:
        """The slate's version of a partitions definition (the same object for the same input)."""
        if pdef is None:
            return None
        if id(pdef) not in self._done:
            self._done[id(pdef)] = self._narrowed(pdef)
        return self._done[id(pdef)]

    def _narrowed(self, pdef: PartitionsDefinition[Any]) -> PartitionsDefinition[Any]:
        if pdef == pool_partitions:
            return self.pools
        if not isinstance(pdef, MultiPartitionsDefinition):
            return pdef
        dims = {d.name: d.partitions_def for d in pdef.partitions_defs}
        if dims.get(POOL_DIMENSION) != pool_partitions:
            return pdef
        sets = {d.name for d in dims.values() if isinstance(d, DynamicPartitionsDefinition)}
        pools = self.voice_pools if VOICE_TARGETS_PARTITION in sets else self.pools
        return MultiPartitionsDefinition({**dims, POOL_DIMENSION: pools})


def unplayed_note(cells: list[tuple[str, str]]) -> str:
    """The line a voice asset's description gets for the cells of its partitions that the slate does not play."""
    named = ", ".join(f"{pool}|{target}" for target, pool in cells)
    return (
        f"Not played by this slate, so shown as missing for good: {named} (a voice target whose recogniser writes "
        "English only, on a pool in another language; docs/spoken-eyt.md#in-chinese)."
    )


def for_slate(
    assets: Sequence[AssetsDefinition], checks: Sequence[AssetChecksDefinition], slate: Slate
) -> tuple[list[AssetsDefinition], list[AssetChecksDefinition]]:
    """The assets and their checks with the slate's partitions (SlatePartitions); a voice asset whose partitions hold
    cells the slate does not play says which in its description."""
    parts = SlatePartitions(slate)
    unheard = unheard_cells(slate)

    def narrow(spec: AssetSpec) -> AssetSpec:
        narrowed = spec.replace_attributes(partitions_def=parts.of(spec.partitions_def))
        if unheard and narrowed.partitions_def is not None and narrowed.partitions_def is parts.of(voice_cells):
            narrowed = narrowed.replace_attributes(
                description="\n\n".join(filter(None, [spec.description, unplayed_note(unheard)]))
            )
        return narrowed

    narrowed_checks = [
        AssetChecksDefinition.create(
            keys_by_input_name=check.keys_by_input_name,
            node_def=check.op,
            check_specs_by_output_name={
                name: spec._replace(partitions_def=parts.of(spec.partitions_def))
                for name, spec in check.check_specs_by_output_name.items()
            },
            can_subset=check.can_subset,
            resource_defs=check.resource_defs,
        )
        for check in checks
    ]
    return list(map_asset_specs(narrow, assets)), narrowed_checks
