"""The column contract of every warehouse table, gathered from each benchmark and the reports: table name
("schema.table") -> column dtypes. The code location hands them to the warehouse (resources/storage/warehouse_catalog.py),
which creates and casts each table from its contract (types mapped in eyt_dagster/core/storage_types.py); a table
not listed here (none in the code location; a test checks that) would be typed from the frame, with an
all-missing column stored as text."""

from __future__ import annotations

from collections.abc import Iterable

from dagster import MultiPartitionsDefinition
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetNode

from eyt_dagster.core.cost_actual import RUN_COSTS_COLUMNS
from eyt_dagster.core.storage_types import Columns
from eyt_dagster.eyt_bench.table_contracts import DIALOGUE_TABLES
from eyt_dagster.eyt_voice.table_contracts import VOICE_TABLES
from eyt_dagster.reporting.model_cards import MODEL_CARD_COLUMNS
from eyt_dagster.reporting.paper_tables import EXPORT_INDEX_COLUMNS
from eyt_dagster.speech_eq.table_contracts import SPEECH_TABLES
from resources.storage.warehouse_catalog import Catalog, Layouts

TABLE_COLUMNS: dict[str, Columns] = {
    **DIALOGUE_TABLES,
    **SPEECH_TABLES,
    **VOICE_TABLES,
    "reports.model_cards": MODEL_CARD_COLUMNS,
    "reports.paper_tables": EXPORT_INDEX_COLUMNS,
    "reports.run_costs": RUN_COSTS_COLUMNS,
}


def catalog(layouts: Layouts | None = None) -> Catalog:
    """What the warehouse is told about its tables: their contracts and, when given, the partition layouts an
    older warehouse is migrated with (eyt_dagster/definitions.py reads them from the asset graph)."""
    return Catalog(TABLE_COLUMNS, layouts)


def partition_columns(asset_nodes: Iterable[BaseAssetNode]) -> dict[str, list[str]]:
    """ "schema.table" -> the columns its partition dimensions are stored in (by dimension name), for every
    partitioned asset among `asset_nodes` (the code location's asset graph): how an older warehouse's tables
    are split into partition files."""
    found = {}
    for node in asset_nodes:
        if node.partitions_def is None or len(node.key.path) != 2:
            continue
        expr = (node.metadata or {}).get("partition_expr")
        if isinstance(node.partitions_def, MultiPartitionsDefinition):
            dims = sorted(d.name for d in node.partitions_def.partitions_defs)
            found[".".join(node.key.path)] = [(expr or {}).get(d, d) for d in dims]
        elif isinstance(expr, str):
            found[".".join(node.key.path)] = [expr]
    return found
