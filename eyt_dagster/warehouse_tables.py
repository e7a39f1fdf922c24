"""Which warehouse tables declare their columns: table name ("schema.table") -> column dtypes. The warehouse
IO manager creates and casts these tables from their contract (types mapped in eyt_dagster/storage_types.py);
a table not listed here is typed from the frame, with an all-missing column stored as text."""

from __future__ import annotations

from eyt_dagster.speech.tables import SLM_CHOICE_COLUMNS
from eyt_dagster.storage_types import Columns
from eyt_dagster.tables import DIALOGUE_TABLES

TABLE_COLUMNS: dict[str, Columns] = {**DIALOGUE_TABLES, "speech.slm_choices": SLM_CHOICE_COLUMNS}


def declared_columns(table: str) -> Columns | None:
    return TABLE_COLUMNS.get(table)
