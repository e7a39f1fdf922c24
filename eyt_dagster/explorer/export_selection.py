"""What a static export holds: the targets and pools named (all when none is named), checked against the
warehouse, and a reader of the warehouse that sees only their rows. Every explorer query then answers about the
selection alone (the leaderboard's rows, the targets on the same ChatSEED, a SpeechEQ item's choices), through
the same views and queries as the server, so no page of the export names a target that was not chosen."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import pandas as pd

from eyt_dagster.explorer import queries
from eyt_dagster.explorer.reads import Partitions, Warehouse
from eyt_dagster.speech_eq.seq_tables import CHANCE_TARGET
from eyt_dagster.table_registry import catalog
from resources.models.cache_backend import CacheBackend


class SelectionError(ValueError):
    """A target or pool the warehouse does not have."""


@dataclass(frozen=True)
class Selection:
    targets: tuple[str, ...]  # in the order named (sorted when all), EYT-Bench and SpeechEQ targets alike
    pools: tuple[str, ...]
    all_targets: bool  # no target was named
    all_pools: bool

    @property
    def limits(self) -> dict[str, frozenset[str]]:
        """column -> the values a row must hold: only for what was named."""
        out: dict[str, frozenset[str]] = {}
        if not self.all_targets:
            out["target"] = frozenset(self.targets)
        if not self.all_pools:
            out["pool"] = frozenset(self.pools)
        return out


class KnownTargets(NamedTuple):
    """The warehouse's targets by benchmark, each sorted (a target may be in more than one)."""

    eyt: list[str]  # EYT-Bench targets with dialogue turns
    speech: list[str]  # SpeechEQ targets with choices
    voice: list[str]  # spoken EYT-Bench targets with voiced turns

    @property
    def every(self) -> list[str]:
        return sorted({*self.eyt, *self.speech, *self.voice})


def _values(wh: Warehouse, table: str, column: str) -> set[str]:
    """The values of a column of a table: from its partition folders' names when it has them, else a query."""
    found = wh.partition_values(table, column)
    if found is None:
        rows = wh.query([table], f"SELECT DISTINCT {column} FROM {table.split('.')[-1]}")
        found = set(map(str, rows[column]))
    return found


def known_targets(wh: Warehouse) -> KnownTargets:
    """The targets of each benchmark the warehouse has rows of."""
    return KnownTargets(
        sorted(queries.targets(wh)),
        sorted(_values(wh, "speech.slm_choices", "target")),
        sorted(_values(wh, "voice.voiced_turns", "target")),
    )


def known_pools(wh: Warehouse) -> list[str]:
    """The pools of the EYT-Bench's dialogues and of the spoken EYT-Bench's."""
    return sorted(_values(wh, "dialogue.dialogue_turns", "pool") | _values(wh, "voice.voiced_turns", "pool"))


def select(wh: Warehouse, targets: Iterable[str] = (), pools: Iterable[str] = ()) -> Selection:
    """The selection of the names given (repeats dropped); SelectionError naming an unknown one and listing the
    known ones."""
    every_target = known_targets(wh).every
    every_pool = known_pools(wh)
    named_targets = list(dict.fromkeys(targets))
    named_pools = list(dict.fromkeys(pools))
    for kind, named, known in (("target", named_targets, every_target), ("pool", named_pools, every_pool)):
        unknown = [n for n in named if n not in known]
        if unknown:
            listed = ", ".join(f"'{k}'" for k in known) or "none"
            raise SelectionError(
                f"unknown {kind}{'s' if len(unknown) > 1 else ''} {', '.join(repr(u) for u in unknown)}; "
                f"the warehouse's {kind}s are {listed}"
            )
    return Selection(
        targets=tuple(named_targets or every_target),
        pools=tuple(named_pools or every_pool),
        all_targets=not named_targets,
        all_pools=not named_pools,
    )


class SelectedWarehouse(Warehouse):
    """A Warehouse whose views hold only the selection's rows: a table with a `target` (or `pool`) column shows
    only the selected targets' (pools') rows, and only their partition folders are read."""

    def __init__(self, data_dir: Path, selection: Selection, call_backend: CacheBackend | None = None) -> None:
        super().__init__(data_dir, call_backend)
        self.selection = selection
        self.limits = selection.limits
        self._answers: dict[tuple[Any, ...], pd.DataFrame] = {}

    def files(self, table: str, partitions: Partitions | None = None) -> list[str]:
        wanted: dict[str, set[str]] = {c: {v} if isinstance(v, str) else set(v) for c, v in (partitions or {}).items()}
        for column, allowed in self.limits.items():
            wanted[column] = wanted[column] & allowed if column in wanted else set(allowed)
        return super().files(table, wanted)

    def hidden_targets(self) -> set[str]:
        """The warehouse's targets (EYT-Bench and SpeechEQ) that were not selected, read through an unfiltered
        reader: a page that lists models (the cost page) leaves out those whose id is one of them."""
        if self.selection.all_targets:
            return set()
        every = known_targets(Warehouse(self.data_dir, self.call_backend)).every
        return set(every) - set(self.selection.targets)

    def partition_values(self, table: str, column: str, partitions: Partitions | None = None) -> set[str] | None:
        found = super().partition_values(table, column, partitions)
        if found is None or column not in self.limits:
            return found
        return found & self.limits[column]

    def distinct(
        self, table: str, columns: tuple[str, ...], partitions: Partitions | None = None
    ) -> set[tuple[Any, ...]]:
        found = super().distinct(table, columns, partitions)  # of the selected partitions' files (files() above)
        checks = [(i, self.limits[c]) for i, c in enumerate(columns) if c in self.limits]
        return {row for row in found if all(str(row[i]) in allowed for i, allowed in checks)}

    @contextmanager
    def sql(self, tables: Iterable[str], partitions: Partitions | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        tables = list(tables)
        with super().sql(tables, partitions) as con:
            for table in tables:
                name = table.split(".")[-1]
                columns = self._columns(table, con)
                where = [
                    f"{column} IN ({', '.join(_literal(v) for v in sorted(values | _KEPT.get((table, column), set())))})"
                    for column, values in self.limits.items()
                    if column in columns
                ]
                if where:
                    con.execute(f"ALTER VIEW {name} RENAME TO {name}_all_rows")
                    con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM {name}_all_rows WHERE {' AND '.join(where)}")
            yield con

    def _columns(self, table: str, con: duckdb.DuckDBPyConnection) -> set[str]:
        declared = catalog().declared(table)
        if declared:
            return set(declared)
        return {row[0] for row in con.execute(f"DESCRIBE {table.split('.')[-1]}").fetchall()}

    def query(
        self, tables: Iterable[str], sql: str, params: list[Any] | None = None, partitions: Partitions | None = None
    ) -> pd.DataFrame:
        """As Warehouse.query, each distinct question asked once per export (the leaderboard's baseline flags are
        asked by every page): the export shows the warehouse as it was when it began."""
        key = (tuple(tables), sql, repr(params), repr(partitions))
        if key not in self._answers:
            self._answers[key] = super().query(key[0], sql, params, partitions)
        return self._answers[key].copy()


# Rows every selection keeps: the SEQ leaderboard's chance rows (a reference point, not a target; slm_choices may hold
# no target of that name).
_KEPT: dict[tuple[str, str], set[str]] = {("speech.seq_leaderboard", "target"): {CHANCE_TARGET}}


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
