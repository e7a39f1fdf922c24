"""Where a run of `eyt run` or `eyt refresh` is among its steps: the steps it executes, the ones running now and
the ones ended, read from the Dagster instance's event log. The live table and the plain lines show it for a run
whose running step counts nothing (or that is between two steps), where no heartbeat says more
(eyt_dagster/ops/progress_display.py; docs/operations.md, "Watching a run").

The run is found by the launch tag its launcher gave it (`eyt/launch=<token>:<index>`). Its plan's steps are read
once; after that each look reads only the step events written since the last one (a cursor), so looking every
second costs a small query. Reading never waits on the run beyond the query itself, and a failed read says
nothing (the display then shows the run as running)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from resources.runs.progress_files import LAUNCH_TAG

if TYPE_CHECKING:  # dagster is imported where it is used: `eyt`'s commands that run nothing start without it
    from dagster import DagsterInstance


@dataclass(frozen=True)
class RunSteps:
    """A run among its steps: the steps running now (their keys, in start order), how many ended (succeeded,
    failed or skipped) and how many it executes."""

    running: tuple[str, ...]
    done: int
    total: int


@dataclass
class _Seen:
    run_id: str
    total: int
    cursor: str | None = None
    running: dict[str, None] = field(default_factory=dict)  # started, not ended: an ordered set
    ended: set[str] = field(default_factory=set)


class InstanceSteps:
    """`steps(tag)`: the RunSteps of the run with this launch tag, or None while the instance holds no such run
    (its worker has not created it yet). Not thread-safe: one display reads it."""

    def __init__(self, instance: DagsterInstance) -> None:
        self.instance = instance
        self._runs: dict[str, _Seen] = {}

    def __call__(self, tag: str) -> RunSteps | None:
        from dagster import DagsterEventType

        seen = self._runs.get(tag) or self._find(tag)
        if seen is None:
            return None
        started = {DagsterEventType.STEP_START, DagsterEventType.STEP_RESTARTED}
        ended = {DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE, DagsterEventType.STEP_SKIPPED}
        waiting = {DagsterEventType.STEP_UP_FOR_RETRY}  # ended for now, started again later
        found = self.instance.get_records_for_run(seen.run_id, cursor=seen.cursor, of_type=started | ended | waiting)
        for record in found.records:
            entry = record.event_log_entry
            kind, key = entry.dagster_event_type, entry.step_key
            if key is None:
                continue
            if kind in started:
                seen.running[key] = None
            else:
                seen.running.pop(key, None)
                if kind in ended:
                    seen.ended.add(key)
        seen.cursor = found.cursor
        return RunSteps(running=tuple(seen.running), done=len(seen.ended), total=seen.total)

    def _find(self, tag: str) -> _Seen | None:
        from dagster import RunsFilter

        runs = self.instance.get_runs(filters=RunsFilter(tags={LAUNCH_TAG: tag}), limit=1)
        if not runs:
            return None
        run = runs[0]
        plan = (
            self.instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
            if run.execution_plan_snapshot_id
            else None
        )
        keys = (plan.step_keys_to_execute or [s.key for s in plan.steps]) if plan is not None else []
        self._runs[tag] = _Seen(run.run_id, len(keys))
        return self._runs[tag]
