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

An asset partition that is up to date by those rules is FAILED when its latest attempt did not finish its work:
  * the latest run that planned it failed or was interrupted, with no materialisation since;
  * its latest materialisation holds error rows (a failed call: the `error_rows` metadata of assets/_output.py);
    when every one of them was stopped by a spend cap (`budget_rows`), it is run again whatever attempts_per_day says;
  * an ERROR-severity check of its latest materialisation failed.
A FAILED partition is run again, up to `attempts_per_day` runs of it in any 24 hours (the slate's setting; every run
that planned it counts, the one that failed first included); after that it is GAVE_UP, and left alone until a day has passed, its code or inputs change, or
a user runs it (`eyt run`). A run still in progress is neither.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from dagster import AssetCheckKey, AssetKey, AssetRecordsFilter, DagsterInstance, EventLogRecord
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph

# an asset graph of any node type: the code location's (Definitions.resolve_asset_graph()) or an automation context's
AssetGraph = BaseAssetGraph[Any]

# Event tags Dagster writes on every materialisation and observation. They are part of the stored event format
# (every instance's history holds them), but Dagster exports no constant for them at the top level.
CODE_VERSION_TAG = "dagster/code_version"
DATA_VERSION_TAG = "dagster/data_version"
# The tag of the marker `eyt remove-target` records where the instance cannot wipe a partition's history
# (eyt_dagster/ops/target_removal.py): the partition's rows are gone, so it reads as missing.
REMOVED_TAG = "eyt/removed"

FRESH, STALE, MISSING = "FRESH", "STALE", "MISSING"
FAILED, GAVE_UP = "FAILED", "GAVE_UP"
DAY_S = 24 * 3600.0
# a run in one of these states planned the partition and will not finish it
_ENDED_BADLY = ("FAILURE", "CANCELED", "CANCELING")
_UNFINISHED = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "MANAGED")


# How many records one query reads when collecting the latest record of every partition of an asset.
_PAGE = 1000


@dataclass(frozen=True)
class Record:
    """The latest materialisation (or observation, for a source asset) of one asset partition: its event, tags, run,
    time, and what its metadata says of failed work (error rows and their failures line)."""

    storage_id: int
    tags: dict[str, str] = field(default_factory=dict)
    run_id: str = ""
    timestamp: float = 0.0
    error_rows: int = 0
    failures: str = ""
    finished: str = ""  # "F of D dialogues finished", where the metadata counts dialogues
    budget_rows: int = 0  # error rows of items a spend cap stopped (error_kind budget)


@dataclass(frozen=True)
class Failure:
    """Why the latest attempt at an asset partition did not finish its work, how many runs planned it in the last 24
    hours, and when the latest of them started (epoch seconds)."""

    reason: str
    attempts_today: int
    last_attempt: float
    budget: bool = False  # every unfinished item was stopped by a spend cap: not a failure, never given up on


@dataclass(frozen=True)
class State:
    """FRESH, STALE or MISSING, with the causes of STALE as dicts shaped like Dagster's stale causes."""

    status: str
    causes: tuple[dict[str, Any], ...] = ()


def cause(subject: AssetKey, partition: str | None, category: str, reason: str) -> dict[str, Any]:
    return {
        "key": {"path": list(subject.path)},
        "partitionKey": partition,
        "category": category,
        "reason": reason,
        "dependency": None,
    }


class Latest:
    """The latest record of each asset partition, read from the instance once per asset and kept."""

    def __init__(self, instance: DagsterInstance, attempts_per_day: int | None = None) -> None:
        self.instance = instance
        # None: failed partitions count as up to date (the state as it was before failures were retried)
        self.attempts_per_day = attempts_per_day
        self._by_asset: dict[tuple[AssetKey, bool], dict[str | None, Record]] = {}
        self._runs: dict[str, str] = {}
        # (key, partition) -> its failure: one evaluation asks several conditions about the same partition
        self._failures: dict[tuple[AssetKey, str | None], Failure | None] = {}

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
                    found[record.partition_key] = _record(record, observed)
            if not result.has_more:
                return found
            cursor = result.cursor

    def failure(self, key: AssetKey, partition: str | None, check_keys: Iterable[AssetCheckKey] = ()) -> Failure | None:
        """Why the latest attempt at (key, partition) left work unfinished, or None (it finished, it never ran, or
        a run of it is still going). Read once per partition, like the records."""
        if (key, partition) not in self._failures:
            self._failures[(key, partition)] = self._failure(key, partition, check_keys)
        return self._failures[(key, partition)]

    def _failure(self, key: AssetKey, partition: str | None, check_keys: Iterable[AssetCheckKey]) -> Failure | None:
        mine = self.get(key, partition)
        planned = self.instance.get_latest_planned_materialization_info(key, partition)
        reason = ""
        if planned is not None and (mine is None or planned.storage_id > mine.storage_id):
            status = self._run_status(planned.run_id)
            if status in _UNFINISHED:
                return None
            if status in _ENDED_BADLY:
                reason = f"its run {planned.run_id[:8]} {'failed' if status == 'FAILURE' else 'was interrupted'}"
        if not reason and mine is not None and mine.error_rows and mine.budget_rows == mine.error_rows:
            reason = f"stopped by budget: {mine.error_rows} item(s) not played; a run under a higher cap carries on"
            reason = f"{mine.finished}, {reason}" if mine.finished else reason
            attempts, last = self._attempts_today(key, partition)  # the daemon spaces its retries (RetryDue)
            return Failure(reason, attempts, last, budget=True)
        if not reason and mine is not None and mine.error_rows:
            reason = f"{mine.error_rows} error row(s)" + (f": {mine.failures}" if mine.failures else "")
            reason = f"{mine.finished}, {reason}" if mine.finished else reason
        if not reason and mine is not None:
            reason = self._failed_check(key, partition, mine, check_keys)
        if not reason:
            return None
        attempts, last = self._attempts_today(key, partition)
        return Failure(reason, attempts, last)

    def _run_status(self, run_id: str) -> str:
        if run_id not in self._runs:
            run = self.instance.get_run_by_id(run_id)
            self._runs[run_id] = run.status.value if run is not None else "FAILURE"  # a deleted run finished nothing
        return self._runs[run_id]

    def _failed_check(
        self, key: AssetKey, partition: str | None, mine: Record, check_keys: Iterable[AssetCheckKey]
    ) -> str:
        """'check NAME failed: description' for an ERROR check that failed on the latest materialisation, or ''."""
        from dagster import AssetCheckSeverity
        from dagster._core.event_api import PartitionKeyFilter
        from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

        storage = self.instance.event_log_storage
        for check in sorted(check_keys, key=lambda c: c.name):
            found = storage.get_asset_check_execution_history(
                check,
                limit=1,
                status={AssetCheckExecutionRecordStatus.FAILED},
                partition_filter=PartitionKeyFilter(key=partition) if partition is not None else None,
            )
            evaluation = found[0].evaluation if found else None
            target = evaluation.target_materialization_data if evaluation else None
            if evaluation is None or evaluation.severity != AssetCheckSeverity.ERROR:
                continue
            if target is not None and target.storage_id != mine.storage_id:
                continue  # it failed on an earlier materialisation
            if target is None and found[0].run_id != mine.run_id:
                continue
            return f"check {check.name} failed" + (f": {evaluation.description}" if evaluation.description else "")
        return ""

    def _attempts_today(self, key: AssetKey, partition: str | None) -> tuple[int, float]:
        """How many runs planned (key, partition) in the last 24 hours, and when the latest did."""
        since = time.time() - DAY_S
        result = self.instance.fetch_planned_materializations(
            AssetRecordsFilter(
                asset_key=key, asset_partitions=[partition] if partition is not None else None, after_timestamp=since
            ),
            limit=_PAGE,
        )
        records = [r for r in result.records if r.partition_key == partition]
        return len(records), max((r.timestamp for r in records), default=0.0)


def _tags(record: EventLogRecord, observed: bool) -> dict[str, str]:
    event = record.asset_observation if observed else record.asset_materialization
    return dict(event.tags or {}) if event else {}


def _record(record: EventLogRecord, observed: bool) -> Record:
    event = record.asset_observation if observed else record.asset_materialization
    metadata = dict(event.metadata or {}) if event is not None and not observed else {}
    errors = metadata.get("error_rows")
    failures = metadata.get("failures")
    dialogues, finished = metadata.get("dialogues"), metadata.get("finished_dialogues")
    return Record(
        record.storage_id,
        _tags(record, observed),
        record.run_id,
        record.timestamp,
        int(cast(int, errors.value)) if errors is not None and errors.value else 0,  # an int (assets/_output.py)
        str(failures.value) if failures is not None else "",
        f"{finished.value} of {dialogues.value} dialogues finished" if dialogues and finished else "",
        _count(metadata.get("budget_rows")),
    )


def _count(value: Any) -> int:
    """An int metadata value (assets/_output.py), 0 when absent."""
    return int(cast(int, value.value)) if value is not None and value.value else 0


def state(graph: AssetGraph, latest: Latest, key: AssetKey, partition: str | None) -> State:
    """The state of one asset partition of a materialisable asset in `graph` (Definitions.resolve_asset_graph(),
    or an automation context's asset graph). Partitioned graph calls need a partition loading context with the
    instance as dynamic partitions store (Dagster's evaluation sets one)."""
    mine = latest.get(key, partition)
    if mine is None or mine.tags.get(REMOVED_TAG):  # never materialised, or its rows deleted since
        return _gave_up_on(graph, latest, key, partition) or State(MISSING)
    causes: list[dict[str, Any]] = []
    node = graph.get(key)
    if node.code_version is not None and mine.tags.get(CODE_VERSION_TAG) not in (None, node.code_version):
        causes.append(cause(key, partition, "CODE", "has a new code version"))
    parents: dict[AssetKey, list[str | None]] = {}
    for parent_partition in graph.get_parents_partitions(key, partition).parent_partitions:
        parents.setdefault(parent_partition.asset_key, []).append(parent_partition.partition_key)
    for parent, partitions in sorted(parents.items(), key=lambda item: item[0].to_user_string()):
        if not graph.has(parent):
            continue
        observed = not graph.get(parent).is_materializable
        causes += _input_causes(latest, mine, parent, sorted(partitions, key=lambda p: p or ""), observed)
    if causes:
        return State(STALE, tuple(causes))
    if latest.attempts_per_day is None:
        return State(FRESH)
    failure = latest.failure(key, partition, graph.get(key).check_keys)
    if failure is None:
        return State(FRESH)
    if failure.budget:  # stopped by a spend cap: run again (a run under a higher cap carries on), never given up on
        return State(FAILED, (cause(key, partition, "FAILED", failure.reason),))
    budget = latest.attempts_per_day
    if failure.attempts_today >= budget:
        reason = f"{failure.reason}; gave up after {failure.attempts_today} runs in 24 h (attempts_per_day: {budget})"
        return State(GAVE_UP, (cause(key, partition, "FAILED", reason),))
    return State(FAILED, (cause(key, partition, "FAILED", f"failed: {failure.reason}"),))


def _gave_up_on(graph: AssetGraph, latest: Latest, key: AssetKey, partition: str | None) -> State | None:
    """GAVE_UP for a missing partition whose runs kept failing (attempts_per_day runs in 24 hours), else None."""
    if latest.attempts_per_day is None:
        return None
    failure = latest.failure(key, partition, graph.get(key).check_keys)
    if failure is None or failure.attempts_today < latest.attempts_per_day:
        return None
    reason = (
        f"never materialised: {failure.reason}; gave up after {failure.attempts_today} runs in 24 h "
        f"(attempts_per_day: {latest.attempts_per_day})"
    )
    return State(GAVE_UP, (cause(key, partition, "FAILED", reason),))


def _input_causes(
    latest: Latest, mine: Record, parent: AssetKey, partitions: list[str | None], observed: bool
) -> list[dict[str, Any]]:
    """A cause when a partition of `parent` that `mine` reads was recorded again after `mine` with another data
    version than it had before `mine` (the version `mine` read)."""
    changed = [p for p in partitions if latest.changed_since(parent, p, observed, mine.storage_id)]
    if not changed:
        return []
    return [cause(parent, changed[0] if len(partitions) == 1 else None, "DATA", "has a new data version")]


def states(
    graph: AssetGraph, latest: Latest, keys: Iterable[tuple[AssetKey, str | None]]
) -> dict[tuple[AssetKey, str | None], State]:
    """(key, partition) -> State for each asset partition given."""
    return {(key, partition): state(graph, latest, key, partition) for key, partition in keys}
