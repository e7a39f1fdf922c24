"""Whether an asset partition is missing or out of date, read from the instance's event records through public
APIs only (`DagsterInstance.fetch_materializations` / `fetch_observations`), so that the automation condition
(eyt_dagster/automation.py) and `eyt refresh` give the same answer with or without a daemon. See docs/refresh.md.

An asset partition is out of date when, since its latest materialisation M:
  * its code version changed (M's code version tag against the definition's);
  * a partition of a parent it reads (a settings source's observation included) was recorded again after M with
    another data version than it had before M. Re-running a parent with identical output changes nothing, since
    the project's data versions hash the content. This holds however many parent partitions an asset reads
    (Dagster's own staleness stops comparing from 100 upstream partitions on).
Causes are returned in the shape Dagster's stale causes have (subject key, partition, category, reason), so
eyt_dagster/settings_sources.py can name the settings behind them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dagster import AssetKey, AssetRecordsFilter

# Event tags Dagster writes on every materialisation and observation. They are part of the stored event format
# (every instance's history holds them), but Dagster exports no constant for them at the top level.
CODE_VERSION_TAG = "dagster/code_version"
DATA_VERSION_TAG = "dagster/data_version"

FRESH, STALE, MISSING = "FRESH", "STALE", "MISSING"


# How many records one query reads when collecting the latest record of every partition of an asset.
_PAGE = 1000


@dataclass(frozen=True)
class Record:
    """The latest materialisation (or observation, for a source asset) of one asset partition."""

    storage_id: int
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class State:
    """FRESH, STALE or MISSING, with the causes of STALE as dicts shaped like Dagster's stale causes."""

    status: str
    causes: tuple[dict, ...] = ()


def cause(subject: AssetKey, partition: str | None, category: str, reason: str) -> dict:
    return {
        "key": {"path": list(subject.path)},
        "partitionKey": partition,
        "category": category,
        "reason": reason,
        "dependency": None,
    }


class Latest:
    """The latest record of each asset partition, read from the instance once per asset and kept."""

    def __init__(self, instance) -> None:
        self.instance = instance
        self._by_asset: dict[tuple[AssetKey, bool], dict[str | None, Record]] = {}

    def get(self, key: AssetKey, partition: str | None, observed: bool = False) -> Record | None:
        """The latest materialisation (`observed`: observation) of (key, partition); None if there is none."""
        if (key, observed) not in self._by_asset:
            self._by_asset[(key, observed)] = self._read(key, observed)
        return self._by_asset[(key, observed)].get(partition)

    def changed_since(self, key: AssetKey, partition: str | None, observed: bool, storage_id: int) -> bool:
        """Whether (key, partition) was recorded after event `storage_id` with a data version other than the one
        it had then (none then counts as changed)."""
        now = self.get(key, partition, observed)
        if now is None or now.storage_id <= storage_id:
            return False
        fetch = self.instance.fetch_observations if observed else self.instance.fetch_materializations
        before = fetch(
            AssetRecordsFilter(
                asset_key=key, asset_partitions=[partition] if partition else None, before_storage_id=storage_id
            ),
            limit=1,
        ).records
        then = _tags(before[0], observed).get(DATA_VERSION_TAG) if before else None
        return then is None or then != now.tags.get(DATA_VERSION_TAG)

    def _read(self, key: AssetKey, observed: bool) -> dict[str | None, Record]:
        fetch = self.instance.fetch_observations if observed else self.instance.fetch_materializations
        found: dict[str | None, Record] = {}
        cursor = None
        while True:  # newest first: the first record of a partition is its latest
            result = fetch(AssetRecordsFilter(asset_key=key), limit=_PAGE, cursor=cursor)
            for record in result.records:
                if record.partition_key not in found:
                    found[record.partition_key] = Record(record.storage_id, _tags(record, observed))
            if not result.has_more:
                return found
            cursor = result.cursor


def _tags(record, observed: bool) -> dict[str, str]:
    event = record.asset_observation if observed else record.asset_materialization
    return dict(event.tags or {}) if event else {}


def state(graph, latest: Latest, key: AssetKey, partition: str | None) -> State:
    """The state of one asset partition of a materialisable asset in `graph` (Definitions.resolve_asset_graph(),
    or an automation context's asset graph). Partitioned graph calls need a partition loading context with the
    instance as dynamic partitions store (Dagster's evaluation sets one)."""
    mine = latest.get(key, partition)
    if mine is None:
        return State(MISSING)
    causes = []
    node = graph.get(key)
    if node.code_version is not None and mine.tags.get(CODE_VERSION_TAG) not in (None, node.code_version):
        causes.append(cause(key, partition, "CODE", "has a new code version"))
    parents: dict[AssetKey, list[str | None]] = {}
    for parent in graph.get_parents_partitions(key, partition).parent_partitions:
        parents.setdefault(parent.asset_key, []).append(parent.partition_key)
    for parent, partitions in sorted(parents.items(), key=lambda item: item[0].to_user_string()):
        if not graph.has(parent):
            continue
        observed = not graph.get(parent).is_materializable
        causes += _input_causes(latest, mine, parent, sorted(partitions, key=lambda p: p or ""), observed)
    return State(STALE, tuple(causes)) if causes else State(FRESH)


def _input_causes(
    latest: Latest, mine: Record, parent: AssetKey, partitions: list[str | None], observed: bool
) -> list[dict]:
    """A cause when a partition of `parent` that `mine` reads was recorded again after `mine` with another data
    version than it had before `mine` (the version `mine` read)."""
    changed = [p for p in partitions if latest.changed_since(parent, p, observed, mine.storage_id)]
    if not changed:
        return []
    return [cause(parent, changed[0] if len(partitions) == 1 else None, "DATA", "has a new data version")]


def states(graph, latest: Latest, keys: Iterable[tuple[AssetKey, str | None]]) -> dict:
    """(key, partition) -> State for each asset partition given."""
    return {(key, partition): state(graph, latest, key, partition) for key, partition in keys}
