"""What the code location tells the warehouse about its tables (the warehouse itself knows no benchmark): each
table's column contract, and, for moving an older warehouse's tables into Parquet files, each partitioned
table's partition columns. eyt_dagster/table_registry.py gathers the contracts; eyt_dagster/definitions.py reads
the partition columns from its asset graph."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from eyt_dagster.core.storage_types import Columns

Layouts = Callable[[], Mapping[str, list[str]]]  # "schema.table" -> its partition columns, asked for when needed


@dataclass(frozen=True)
class Catalog:
    tables: Mapping[str, Columns] = field(default_factory=dict)
    layouts: Layouts | None = None  # None: an older warehouse is left for a process that knows them

    def declared(self, table: str) -> Columns | None:
        """The table's column contract, or None for a table without one (typed from its frame)."""
        return self.tables.get(table)


NO_CONTRACTS = Catalog()  # tables typed from their frames, views only over what is stored
