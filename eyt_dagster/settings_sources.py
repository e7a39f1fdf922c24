"""The slate as tracked inputs of the asset graph (the plain mapping is eyt_dagster.slate_settings.py; the
decisions are in docs/operations.md).

* Slate-wide settings: each asset's code version gets `+settings.<hash>` of the settings it reads, and its
  definition metadata `eyt/settings` holds their values; the warehouse IO manager copies that into every
  materialisation, so a later change can be named.
* Per-partition settings (a target's model settings, a pool's source): three observable source assets,
  partitioned by target or pool, whose per-partition data version is a hash of the partition's settings.
  `dialogue/target_settings` (by target) feeds each target x pool cell of `dialogue/dialogue_turns`,
  `dialogue/pool_settings` feeds `dialogue/persona_pool`, `speech/target_settings` feeds `speech/slm_choices`.
  `record_settings` records an observation for every partition whose settings changed; the `slate` resource
  (`TrackedSlate`) calls it when any run starts (before a step reads its inputs' versions), `eyt refresh` before it reads the statuses,
  and the UI's "Observe" does the same. So Dagster's per-partition staleness, in the UI too, follows a target's
  settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from dagster import (
    AssetDep,
    AssetKey,
    AssetObservation,
    AssetRecordsFilter,
    AssetsDefinition,
    AssetSpec,
    DagsterInstance,
    DataVersionsByPartition,
    EventLogRecord,
    InitResourceContext,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    OpExecutionContext,
    PartitionMapping,
    PartitionsDefinition,
    SourceAsset,
    map_asset_specs,
    observable_source_asset,
)

from assets.eyt_bench.partitions import pool_partitions, target_partitions
from assets.eyt_voice.partitions import voice_targets
from assets.speech_eq.partitions import speech_target_partitions
from eyt_dagster import slate_settings as ss
from eyt_dagster.core.storage_types import SETTINGS_KEY
from eyt_dagster.slate import Slate
from eyt_dagster.staleness import CODE_VERSION_TAG, DATA_VERSION_TAG
from resources.models.model_access import SlateAccess

CODE_VERSION_MARK = "+settings."


@dataclass(frozen=True)
class PartitionSettings:
    """One observable source of per-partition settings: its key, partitions, the asset that reads it, what a
    partition is called in a reason ('target', 'pool') and the settings of every partition the slate has."""

    key: AssetKey
    partitions_def: PartitionsDefinition
    reader: AssetKey
    kind: str
    of_slate: Callable[[Slate], dict[str, dict[str, Any]]]  # partition key -> its settings
    description: str
    mapping: PartitionMapping | None = None  # from the reader's partitions to the source's (None: the same)
    also_read_by: tuple[AssetKey, ...] = ()  # other assets of the reader's partitions that read the settings


SOURCES = (
    PartitionSettings(
        AssetKey(["dialogue", "target_settings"]),
        target_partitions,
        AssetKey(["dialogue", "dialogue_turns"]),
        "target",
        lambda slate: {t.id: ss.eyt_target_settings(t) for t in slate.eyt_targets},
        "The slate settings of each EYT-Bench target that decide its replies (model, endpoint, temperature, "
        "max_tokens, thinking, reasoning effort, extra body, parse retries, structured output, prices). Its data "
        "version per partition is a hash of them, so changing a target makes exactly its dialogue partitions stale.",
        MultiToSingleDimensionPartitionMapping(partition_dimension_name="target"),
    ),
    PartitionSettings(
        AssetKey(["dialogue", "pool_settings"]),
        pool_partitions,
        AssetKey(["dialogue", "persona_pool"]),
        "pool",
        lambda slate: {pool: ss.pool_settings(src) for pool, src in slate.pools.items()},
        "Where each persona pool comes from (source, path, revision); its data version is a hash of that.",
    ),
    PartitionSettings(
        AssetKey(["speech", "target_settings"]),
        speech_target_partitions,
        AssetKey(["speech", "slm_choices"]),
        "speech target",
        lambda slate: {t.id: ss.speech_target_settings(t) for t in slate.speech_targets},
        "The slate settings of each SpeechEQ target that decide its choices (model settings, speech input, "
        "cascade, audio format); its data version per partition is a hash of them.",
    ),
    PartitionSettings(
        AssetKey(["voice", "target_settings"]),
        voice_targets,
        AssetKey(["voice", "voiced_turns"]),
        "voice target",
        lambda slate: {t.id: ss.voice_target_settings(t) for t in slate.voice_targets},
        "The slate settings of each spoken EYT-Bench target that decide what it hears and says (model settings, "
        "speech input, cascade, audio format); its data version per partition is a hash of them.",
        MultiToSingleDimensionPartitionMapping(partition_dimension_name="target"),
        also_read_by=(AssetKey(["voice", "text_turns"]), AssetKey(["voice", "prosody_probe"])),
    ),
)
SOURCE_BY_KEY = {s.key: s for s in SOURCES}
SOURCE_OF_READER = {reader: s for s in SOURCES for reader in (s.reader, *s.also_read_by)}


def observation(source: PartitionSettings, partition: str, settings: dict[str, Any]) -> AssetObservation:
    """An observation of one partition's settings: data version = their hash, metadata = the values."""
    return AssetObservation(
        asset_key=source.key,
        partition=partition,
        tags={DATA_VERSION_TAG: ss.fingerprint(settings)},
        metadata={SETTINGS_KEY: MetadataValue.json(settings)},
    )


def _observable(source: PartitionSettings) -> SourceAsset:
    @observable_source_asset(
        key=source.key,
        partitions_def=source.partitions_def,
        description=source.description,
        group_name=source.reader.path[0],
        required_resource_keys={"slate"},  # the slate resource (resources/models/model_access.py)
    )
    def observe(context: OpExecutionContext) -> DataVersionsByPartition:
        current = source.of_slate(context.resources.slate.slate)
        wanted = [str(context.partition_key)] if context.has_partition_key else sorted(current)
        for partition in wanted:
            if partition in current:  # a partition the slate no longer has is left as it was
                context.log_event(observation(source, partition, current[partition]))
        return DataVersionsByPartition({})  # logged above, with the settings as metadata

    return observe


def settings_assets(
    partitions: Callable[[PartitionsDefinition[Any]], PartitionsDefinition[Any] | None] = lambda pdef: pdef,
) -> list[SourceAsset]:
    """The settings sources, each with `partitions` of its partitions definition (the slate's pools, say:
    eyt_dagster/partitions.py), so a source has the partitions of the asset that reads it."""
    return [
        _observable(
            dataclasses.replace(source, partitions_def=partitions(source.partitions_def) or source.partitions_def)
        )
        for source in SOURCES
    ]


def track_settings(assets: Sequence[AssetsDefinition], slate: Slate) -> list[AssetsDefinition]:
    """The assets with the slate as a tracked input: code version and `eyt/settings` metadata from the
    slate-wide settings each reads, and a dependency on the per-partition settings source it reads."""

    def track(spec: AssetSpec) -> AssetSpec:
        asset = spec.key.to_user_string()
        if asset in ss.ASSET_SETTINGS:
            values = ss.asset_settings(asset, slate)
            spec = spec.replace_attributes(
                code_version=f"{spec.code_version or ''}{CODE_VERSION_MARK}{ss.fingerprint(values)}"
            ).merge_attributes(metadata={SETTINGS_KEY: MetadataValue.json(values)})
        if spec.key in SOURCE_OF_READER:
            source = SOURCE_OF_READER[spec.key]
            spec = spec.merge_attributes(deps=[AssetDep(source.key, partition_mapping=source.mapping)])
        return spec

    return list(map_asset_specs(track, assets))


def _latest(records: Iterable[EventLogRecord]) -> EventLogRecord | None:
    return next(iter(records), None)


@dataclass(frozen=True)
class SettingsChange:
    """One partition whose settings in the slate differ from the last ones recorded (or that has none recorded)."""

    source: PartitionSettings
    partition: str
    settings: dict[str, Any]
    recorded: dict[str, Any] | None  # the settings of the last observation, None when there is none

    def text(self) -> str:
        """What changed, as a stale cause names it."""
        return ss.partition_change_text(self.source.kind, self.partition, self.recorded, self.settings)


def changed_settings(instance: DagsterInstance, slate: Slate) -> list[SettingsChange]:
    """The partitions of the slate whose settings' hash differs from the last one recorded (or that have none);
    reads the instance only."""
    changes = []
    for source in SOURCES:
        for partition, settings in sorted(source.of_slate(slate).items()):
            last = _latest(
                instance.fetch_observations(
                    AssetRecordsFilter(asset_key=source.key, asset_partitions=[partition]), limit=1
                ).records
            )
            version = (last.event_log_entry.tags or {}).get(DATA_VERSION_TAG) if last else None
            if version != ss.fingerprint(settings):
                changes.append(SettingsChange(source, partition, settings, _settings_of(last)))
    return changes


def record_settings(instance: DagsterInstance, slate: Slate) -> list[str]:
    """Record, as runless observations, the settings of every partition the slate has whose hash differs from
    the last one recorded (or that has none); return 'kind name' of each partition recorded."""
    recorded = []
    for change in changed_settings(instance, slate):
        instance.report_runless_asset_event(observation(change.source, change.partition, change.settings))
        recorded.append(f"{change.source.kind} {change.partition}")
    return recorded


class TrackedSlate(SlateAccess):
    """The slate resource of the code location: when a run starts (before any step reads its inputs'
    versions) it also records the slate's per-target and per-pool settings that changed, so the partitions this
    run writes name the settings they were computed with (docs/operations.md)."""

    def setup_for_execution(self, context: InitResourceContext) -> None:
        super().setup_for_execution(context)
        if context.instance is not None:
            record_settings(context.instance, self.slate)


def _settings_of(record: EventLogRecord | None) -> dict[str, Any] | None:
    event = record.asset_materialization or record.asset_observation if record else None
    value = event.metadata.get(SETTINGS_KEY) if event else None
    return cast(dict[str, Any], value.value) if value is not None else None  # a MetadataValue.json of a dict


class SettingsHistory:
    """Names the settings behind Dagster's stale causes: for a new code version, the slate-wide settings that
    changed since the materialisation (its `eyt/settings` metadata against the slate); for a new data version of
    a settings source, the target's or pool's fields that changed since the observation the materialisation read.
    `code_versions` maps an asset to its current code version."""

    def __init__(self, instance: DagsterInstance, slate: Slate, code_versions: dict[str, str | None]) -> None:
        self.instance, self.slate, self.code_versions = instance, slate, code_versions

    def _materialization(self, asset: str, partition: str | None) -> EventLogRecord | None:
        return _latest(
            self.instance.fetch_materializations(
                AssetRecordsFilter(
                    asset_key=AssetKey.from_user_string(asset), asset_partitions=[partition] if partition else None
                ),
                limit=1,
            ).records
        )

    def explain(self, asset: str, partition: str | None, cause: dict[str, Any]) -> str | None:
        """A reason naming the changed settings, or None to keep Dagster's."""
        subject = AssetKey(cause["key"]["path"])
        own = subject.to_user_string() == asset and cause.get("partitionKey") == partition
        if own and cause.get("category") == "CODE" and asset in ss.ASSET_SETTINGS:
            return self._code_change(asset, partition)
        if subject in SOURCE_BY_KEY and cause.get("partitionKey"):  # Dagster names the source as the root cause
            return self._partition_change(asset, partition, SOURCE_BY_KEY[subject], cause["partitionKey"])
        return None

    def _code_change(self, asset: str, partition: str | None) -> str | None:
        record = self._materialization(asset, partition)
        old = _settings_of(record)
        if old is None:  # materialised before settings were tracked
            return None
        assert record is not None and record.asset_materialization is not None  # `old` was read from it
        text = ss.change_text(old, ss.asset_settings(asset, self.slate))
        old_code = (record.asset_materialization.tags or {}).get(CODE_VERSION_TAG, "")
        new_code = self.code_versions.get(asset) or ""
        if old_code.split(CODE_VERSION_MARK)[0] != new_code.split(CODE_VERSION_MARK)[0]:
            text = "; ".join(filter(None, ["has a new code version (code or prompts)", text]))
        return text or None

    def _partition_change(self, asset: str, partition: str | None, source: PartitionSettings, key: str) -> str:
        record = self._materialization(asset, partition)
        seen = _latest(
            self.instance.fetch_observations(
                AssetRecordsFilter(
                    asset_key=source.key,
                    asset_partitions=[key],
                    before_storage_id=record.storage_id if record else None,
                ),
                limit=1,
            ).records
        )
        return ss.partition_change_text(source.kind, key, _settings_of(seen), source.of_slate(self.slate).get(key))
