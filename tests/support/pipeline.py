"""Materialise the EYT graph in process, the way the jobs do, for tests."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance, materialize

from assets.eyt_bench.partitions import TARGETS_PARTITION, target_pool_key
from assets.speech_eq.partitions import SPEECH_TARGETS_PARTITION
from eyt_dagster.definitions import Warehouse, assets_for
from eyt_dagster.jobs import (
    CARD_ASSETS,
    DIALOGUE_ASSETS,
    POOL_ASSETS,
    REPORT_ASSETS,
    SEQ_REPORT_ASSETS,
    SPEECH_BUILD_ASSETS,
    SPEECH_EVAL_ASSETS,
    SPEECH_REPORT_ASSETS,
)
from eyt_dagster.settings_sources import TrackedSlate
from eyt_dagster.slate import load_slate
from resources.models.model_access import EmbeddingAccess, ModelAccess, ReportAccess
from resources.storage.warehouse import WAREHOUSE_FILE


def resources_for(slate_path: Path, data_dir: Path) -> dict:
    return {
        "slate": TrackedSlate(slate_path=str(slate_path)),
        "models": ModelAccess(data_dir=str(data_dir)),
        "embeddings": EmbeddingAccess(data_dir=str(data_dir)),
        "reports": ReportAccess(data_dir=str(data_dir)),
        "io_manager": Warehouse(database=str(data_dir / WAREHOUSE_FILE)),
    }


def slate_assets(slate_path: Path) -> list:
    """The code location's assets for a slate: partitioned by the cells it plays (its pools only), as `eyt run` and
    the UI load them."""
    return assets_for(load_slate(slate_path))


def materialize_all(slate_path: Path, data_dir: Path, instance: DagsterInstance | None = None) -> DagsterInstance:
    """Pools, then every target x pool cell, then the reports; raises if any run fails."""
    instance = materialize_dialogues(slate_path, data_dir, instance)
    materialize_reports(slate_path, data_dir, instance)
    return instance


def materialize_dialogues(slate_path: Path, data_dir: Path, instance: DagsterInstance | None = None) -> DagsterInstance:
    """Pools, then every target x pool cell (no reports); raises if any run fails."""
    instance = instance or DagsterInstance.ephemeral()
    slate = load_slate(slate_path)
    known = set(instance.get_dynamic_partitions(TARGETS_PARTITION))
    instance.add_dynamic_partitions(TARGETS_PARTITION, [t.id for t in slate.eyt_targets if t.id not in known])
    resources, assets = resources_for(slate_path, data_dir), slate_assets(slate_path)
    for pool in slate.pools:
        materialize(assets, selection=POOL_ASSETS, partition_key=pool, resources=resources, instance=instance)
    for target in slate.eyt_targets:
        for pool in slate.pools:
            materialize(
                assets,
                selection=DIALOGUE_ASSETS,
                partition_key=str(target_pool_key(target.id, pool)),
                resources=resources,
                instance=instance,
            )
    return instance


def materialize_reports(slate_path: Path, data_dir: Path, instance: DagsterInstance) -> None:
    assets = slate_assets(slate_path)
    materialize(assets, selection=REPORT_ASSETS, resources=resources_for(slate_path, data_dir), instance=instance)


def materialize_speech(slate_path: Path, data_dir: Path, instance: DagsterInstance, subscales: list[str]) -> None:
    """SpeechEQ items of the given subscales, every speech target's choices, then the SEQ reports."""
    slate = load_slate(slate_path)
    resources, assets = resources_for(slate_path, data_dir), slate_assets(slate_path)
    for slug in subscales:
        materialize(assets, selection=SPEECH_BUILD_ASSETS, partition_key=slug, resources=resources, instance=instance)
    known = set(instance.get_dynamic_partitions(SPEECH_TARGETS_PARTITION))
    instance.add_dynamic_partitions(SPEECH_TARGETS_PARTITION, [t.id for t in slate.speech_targets if t.id not in known])
    for target in slate.speech_targets:
        materialize(
            assets, selection=SPEECH_EVAL_ASSETS, partition_key=target.id, resources=resources, instance=instance
        )
    materialize(assets, selection=SEQ_REPORT_ASSETS, resources=resources, instance=instance)


def materialize_unified(slate_path: Path, data_dir: Path, instance: DagsterInstance) -> None:
    """The SpeechEQ build report, then the model cards and paper tables over whatever both benchmarks have."""
    resources, assets = resources_for(slate_path, data_dir), slate_assets(slate_path)
    materialize(assets, selection=SPEECH_REPORT_ASSETS, resources=resources, instance=instance)
    materialize(assets, selection=CARD_ASSETS, resources=resources, instance=instance)
