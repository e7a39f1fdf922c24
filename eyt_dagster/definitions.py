"""The code location `eyt_dagster`: the one Definitions object (assets, jobs, resources), and the composition
root: the only module that sees both benchmarks' assets, the resources, and the warehouse's table layouts.

Settings come from the environment when the location loads: `EYT_DATA_DIR` (default ./data) holds the
warehouse `eyt.duckdb` and the call cache; `EYT_SLATE` names the slate (default: the packaged one). The slate is
read here too: each asset's code version includes a hash of the slate settings it reads, and the per-target
and per-pool settings are observable source assets (eyt_dagster/settings_sources.py, docs/operations.md).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from dagster import (
    AssetChecksDefinition,
    AssetsDefinition,
    Definitions,
    SourceAsset,
    in_process_executor,
    load_asset_checks_from_package_module,
    load_assets_from_package_module,
)

import assets.eyt_bench
import assets.eyt_voice
import assets.reports
import assets.speech_eq
from eyt_dagster import table_registry
from eyt_dagster.automation import automation_sensor, outside_slate, slate_keys, with_automation
from eyt_dagster.core.env_settings import data_dir
from eyt_dagster.jobs import JOBS
from eyt_dagster.partitions import SlatePartitions, for_slate
from eyt_dagster.settings_sources import TrackedSlate, settings_assets, track_settings
from eyt_dagster.slate import Slate, load_slate, slate_path_from_env
from resources.models.model_access import EmbeddingAccess, ModelAccess, ReportAccess
from resources.storage.warehouse import WarehouseIOManager, warehouse_path
from resources.storage.warehouse_catalog import Catalog

# Each benchmark's package of assets (assets/<package>/: one module per stage, its partitions and checks), and
# the reports over both last; `assets_for(slate)` and `checks_for(slate)` give the asset functions as written the
# slate's partitions (its pools only: eyt_dagster/partitions.py) and settings.
PACKAGES = (assets.eyt_bench, assets.speech_eq, assets.eyt_voice, assets.reports)


def package_assets(package: ModuleType) -> list[AssetsDefinition]:
    """The asset definitions of one asset package, in Dagster's order (by module, then by name)."""
    found = load_assets_from_package_module(package)
    other = [a for a in found if not isinstance(a, AssetsDefinition)]
    if other:
        raise TypeError(f"{package.__name__} defines {other}: its stages must be @asset functions")
    return [a for a in found if isinstance(a, AssetsDefinition)]


BASE_ASSETS = [a for package in PACKAGES for a in package_assets(package)]
BASE_CHECKS = [c for package in PACKAGES for c in load_asset_checks_from_package_module(package)]


class Warehouse(WarehouseIOManager):
    """The warehouse IO manager of this code location: it hands the warehouse every table's contract and each
    partitioned table's partition columns (read from the asset graph below, for migrating an older warehouse)."""

    slate_path: str = ""

    def catalog(self) -> Catalog:
        return warehouse_catalog()

    def partitions_kept(self) -> Callable[[Any, Any], bool] | None:
        """A report reads the partitions of the slate's targets and pools only: a target or pool dropped from the
        slate keeps its partitions (until `eyt remove-target`) but leaves the leaderboards and summaries."""
        if not self.slate_path:
            return None
        keys = slate_keys(load_slate(self.slate_path))
        return lambda pdef, key: pdef is None or not outside_slate(pdef, str(key), keys)


def warehouse_catalog() -> Catalog:
    """This code location's tables, as the warehouse needs them (resources/storage/warehouse_catalog.py)."""
    return table_registry.catalog(lambda: table_registry.partition_columns(defs.resolve_asset_graph().asset_nodes))


def assets_for(slate: Slate) -> list[AssetsDefinition | SourceAsset]:
    """Every asset, partitioned by the cells the slate plays, with the slate's settings as tracked inputs and the
    automation condition that keeps the slate's partitions up to date (docs/refresh.md), and the settings source
    assets."""
    narrowed, _ = for_slate(BASE_ASSETS, [], slate)
    return [
        *settings_assets(SlatePartitions(slate).of),
        *with_automation(track_settings(narrowed, slate), slate_keys(slate), slate.attempts_per_day),
    ]


def checks_for(slate: Slate) -> list[AssetChecksDefinition]:
    """Every asset check, partitioned as the asset it checks is for the slate (assets_for)."""
    return for_slate([], BASE_CHECKS, slate)[1]


def build_resources(slate_path: str | None = None) -> dict[str, object]:
    """Each asset takes the resources it touches (resources/models/model_access.py): the slate, the models, the
    embeddings, the reports' cache and files; the warehouse is the IO manager."""
    path, data = str(slate_path or slate_path_from_env()), str(data_dir())
    return {
        "slate": TrackedSlate(slate_path=path),
        "models": ModelAccess(data_dir=data),
        "embeddings": EmbeddingAccess(data_dir=data),
        "reports": ReportAccess(data_dir=data),
        "io_manager": Warehouse(database=str(warehouse_path()), slate_path=path),
    }


def build_defs(slate_path: str | None = None) -> Definitions:
    """The code location for a slate file (default: EYT_SLATE); a slate that does not validate fails here."""
    path = str(slate_path or slate_path_from_env())
    slate = load_slate(path)
    return Definitions(
        assets=assets_for(slate),
        asset_checks=checks_for(slate),
        jobs=JOBS,
        sensors=[automation_sensor()],
        resources=build_resources(path),
        executor=in_process_executor,
    )


defs = build_defs()
ASSETS = list(defs.assets or [])  # for the slate of EYT_SLATE when the module was imported (tests: the default)
CHECKS = list(defs.asset_checks or [])
