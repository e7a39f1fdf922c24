"""`eyt refresh`: evaluate the assets' automation conditions once, without a daemon, through Dagster's public
`evaluate_automation_conditions` (the same conditions `dagster dev`'s daemon evaluates, eyt_dagster/automation.py),
add what lies downstream of the requested partitions in other jobs, plan the runs (eyt_dagster/ops/refresh_plan.py) and
launch them here or submit them as one backfill for the daemon. See docs/refresh.md."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from eyt_dagster.automation import nothing_to_read, outside_slate
from eyt_dagster.automation import slate_keys as slate_keys  # part of this module's API
from eyt_dagster.ops.launch import execute_runs

if TYPE_CHECKING:
    from dagster import DagsterInstance, Definitions, PartitionsDefinition

    from eyt_dagster.ops.refresh_plan import AssetPartition, Finding, PlannedRun
    from eyt_dagster.slate import Slate

REQUESTED = "requested by its automation condition"


def _cause_text(cause: dict[str, Any], asset: str, partition: str | None) -> str:
    """A stale cause as text, naming the upstream asset partition when the cause is not the asset's own."""
    subject = "/".join(cause["key"]["path"])
    if (subject, cause.get("partitionKey")) == (asset, partition):
        text = cause["reason"]
    else:
        where = f"[{cause['partitionKey']}]" if cause.get("partitionKey") else ""
        text = f"{subject}{where} {cause['reason']}"
    dependency = cause.get("dependency")
    if dependency:
        part = f"[{cause['dependencyPartitionKey']}]" if cause.get("dependencyPartitionKey") else ""
        text += f" ({'/'.join(dependency['path'])}{part})"
    return text


class AssetState:
    """What `eyt refresh` knows about the graph: per asset partition status and causes (eyt_dagster/staleness.py),
    what the automation conditions request, the parents and job of every asset, the job order, each job's
    partitions definition and the partition-level children of every asset partition.

    `include` says which assets to consider; `keys` (slate_keys) maps "pool" and each dynamic target set
    ("targets", "speech_targets") to the slate's keys: partitions of a pool or target not in the slate are left
    alone (a target dropped from the slate keeps its history) and, when they hold results, listed in `left_alone`. Source assets (the
    slate's settings) are inputs, not results: they are not listed. With `slate`, causes that come from changed
    slate settings name them (eyt_dagster/settings_sources.py)."""

    def __init__(
        self,
        defs: Definitions,
        instance: DagsterInstance,
        include: Callable[[str], bool],
        keys: dict[str, set[str]],
        slate: Slate | None = None,
    ) -> None:
        from dagster import (
            AssetKey,
            AssetsDefinition,
            AssetSelection,
            evaluate_automation_conditions,
            partition_loading_context,
        )
        from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

        from eyt_dagster import staleness
        from eyt_dagster.ops import refresh_plan as ops
        from eyt_dagster.settings_sources import SettingsHistory

        graph = defs.resolve_asset_graph()
        nodes = [n for n in graph.asset_nodes if n.is_materializable and include(n.key.to_user_string())]
        history = slate and SettingsHistory(instance, slate, {n.key.to_user_string(): n.code_version for n in nodes})

        def why(cause: dict[str, Any], asset: str, partition: str | None) -> str:
            return (history and history.explain(asset, partition, cause)) or _cause_text(cause, asset, partition)

        self.statuses: dict[AssetPartition, str] = {}
        self.causes: dict[AssetPartition, list[str]] = {}
        self.parents: dict[str, list[str]] = {}
        self.left_alone: set[str] = set()
        latest = staleness.Latest(instance, slate.attempts_per_day if slate is not None else None)
        with partition_loading_context(dynamic_partitions_store=instance):
            for node in nodes:
                asset = node.key.to_user_string()
                self.parents[asset] = [p.to_user_string() for p in node.parent_keys]
                partitions = [None] if node.partitions_def is None else node.partitions_def.get_partition_keys()
                empty = nothing_to_read([graph.get(p).partitions_def for p in node.parent_keys], keys)
                if node.partitions_def is None and empty:  # a report of targets the slate has none of
                    self.left_alone.add(f"{asset} (no {' or '.join(empty)} in the slate)")
                    continue
                for partition in partitions:
                    outside = (
                        partition is not None
                        and node.partitions_def is not None  # always, when a partition is
                        and outside_slate(node.partitions_def, partition, keys)
                    )
                    if outside:
                        # named only when it holds results: a pool no slate ever played is nothing to leave alone
                        if latest.get(node.key, partition) is not None:
                            self.left_alone.update(outside)
                        continue
                    found = staleness.state(graph, latest, node.key, partition)
                    self.statuses[(asset, partition)] = found.status
                    self.causes[(asset, partition)] = [why(c, asset, partition) for c in found.causes]
            scope = [n.key for n in nodes]
            evaluated = evaluate_automation_conditions(defs, instance, asset_selection=AssetSelection.assets(*scope))
            self.requested = {
                (key.to_user_string(), partition)
                for key in scope
                for partition in evaluated.get_requested_partitions(key)
            }
            self._children = {}
            for asset, partition in self.statuses:
                children = graph.get_children_partitions(AssetKey.from_user_string(asset), partition)
                self._children[(asset, partition)] = [(c.asset_key.to_user_string(), c.partition_key) for c in children]
        in_scope = {n.key for n in nodes}
        self.together = {
            a.to_user_string(): [b.to_user_string() for b in assets.keys if b != a]
            for assets in defs.assets or ()
            if isinstance(assets, AssetsDefinition)  # specs and source assets have one key
            and len(assets.keys) > 1
            and not assets.can_subset
            for a in assets.keys
            if a in in_scope
        }
        job_assets = {}
        for job in defs.jobs or ():
            assert isinstance(job, UnresolvedAssetJobDefinition)  # the location's jobs are asset jobs (jobs.py)
            selected = sorted(k.to_user_string() for k in job.selection.resolve(graph) if k in in_scope)
            if selected:
                job_assets[job.name] = selected
        self.order = ops.job_order(job_assets, self.parents)
        self.job_of = {a: job for job in reversed(self.order) for a in job_assets[job]}
        self.partitions_def = {
            self.job_of[a]: graph.get(AssetKey.from_user_string(a)).partitions_def for a in self.job_of
        }

    def children(self, key: AssetPartition) -> Sequence[AssetPartition]:
        return self._children.get(key, ())

    def held_back(self, findings: Mapping[AssetPartition, Finding]) -> list[AssetPartition]:
        """Asset partitions that are not fresh but that no condition requests and that lie below no requested one:
        a run of theirs or of a parent is in progress, or a parent is missing and not requested."""
        return sorted(
            (k for k, status in self.statuses.items() if status not in ("FRESH", "GAVE_UP") and k not in findings),
            key=lambda k: (k[0], k[1] or ""),
        )

    def gave_up(self) -> list[str]:
        """One line per asset partition whose runs kept failing and that is left alone today, with why."""
        return [
            f"  {asset if partition is None else f'{asset}[{partition}]'}: {'; '.join(self.causes[(asset, partition)])}"
            for (asset, partition), status in sorted(self.statuses.items(), key=lambda i: (i[0][0], i[0][1] or ""))
            if status == "GAVE_UP"
        ]

    def findings(self, extra: Mapping[AssetPartition, Finding] | None = None) -> dict[AssetPartition, Finding]:
        """What the automation conditions request (with the state and causes of each), `extra`, and every asset
        partition downstream of those, in any job. A partition that is out of date itself is listed with its own
        state and causes."""
        from eyt_dagster.ops import refresh_plan as ops

        direct = {
            key: ops.Finding(key[0], key[1], self.statuses[key], tuple(self.causes[key]))
            for key in sorted(self.requested, key=lambda k: (k[0], k[1] or ""))
            if self.statuses.get(key) in (ops.STALE, ops.MISSING)
        }
        # a partition whose latest attempt failed runs again now (the daemon spaces its retries over the day)
        direct.update(
            {
                key: ops.Finding(key[0], key[1], status, tuple(self.causes[key]))
                for key, status in sorted(self.statuses.items(), key=lambda item: (item[0][0], item[0][1] or ""))
                if status == ops.FAILED
            }
        )
        found = ops.propagate({**direct, **(extra or {})}, self.statuses, self.children, self.together)
        for key in self.requested:  # requested although fresh and not below another finding (a daemon-only cause)
            if key in self.statuses and key not in found:
                found[key] = ops.Finding(key[0], key[1], ops.STALE, (REQUESTED,))
        # a partition reached from upstream that is out of date itself (a cell that waited for its pool) keeps its
        # own state and causes
        return {
            key: finding
            if self.statuses[key] == ops.FRESH or key in direct
            else ops.Finding(key[0], key[1], self.statuses[key], tuple(self.causes[key]))
            for key, finding in found.items()
        }


def _definitions() -> Definitions:
    """The code location's definitions, imported in this process: `eyt refresh` is a fresh process, so a prompt
    or slate edited since the last run shows up as a new code version."""
    from eyt_dagster.definitions import defs

    return defs


def refresh(
    instance: DagsterInstance,
    include: Callable[[str], bool],
    keys: dict[str, set[str]],
    *,
    dry_run: bool = False,
    backfill: bool = False,
    forced: Collection[str] | None = frozenset(),
    reason: str = "",
    only_forced: bool = False,
    slate: Slate | None = None,
    defs: Definitions | None = None,
    parallel: int = 1,
    run_tags: Mapping[str, str] | None = None,
    before_runs: Callable[[Mapping[AssetPartition, Finding]], None] | None = None,
) -> int:
    """List the asset partitions to materialise and materialise them (or submit them as a backfill).
    `forced` names unpartitioned assets to recompute even if fresh (None: all of them), with `reason`;
    `only_forced` leaves out everything else (but what lies downstream of them). With `slate`, its per-target
    and per-pool settings are recorded first (settings_sources.record_settings), so a changed target shows as
    stale partitions, and causes name the settings that changed. `defs`: other definitions (tests; default the
    code location's). `parallel`: how many runs at once (eyt_dagster/ops/run_plan.py); `run_tags`: added to every
    run (a command's spend limit: eyt_dagster/ops/spend.py); `before_runs`: called with the findings once they are
    known and runs will be launched or submitted (not on a dry run; `eyt refresh` keeps its estimate there)."""
    from eyt_dagster.ops import refresh_plan as ops

    started = time.monotonic()
    if slate is not None:
        from eyt_dagster.settings_sources import record_settings

        record_settings(instance, slate)
    state = AssetState(defs or _definitions(), instance, include, keys, slate)
    if state.left_alone:
        print(
            "left alone, not in the slate (`eyt remove-target ID` deletes a target): "
            + ", ".join(sorted(state.left_alone))
        )
    reports = {a for a, p in state.statuses if p is None}
    forced_findings: dict[ops.AssetPartition, ops.Finding] = {
        (a, None): ops.Finding(a, None, ops.STALE, (reason,))
        for a in sorted(reports if forced is None else reports & set(forced))
    }
    findings = (
        ops.propagate(forced_findings, state.statuses, state.children, state.together)
        if only_forced
        else state.findings(forced_findings)
    )
    fresh = sum(state.statuses[k] == ops.FRESH for k in state.statuses if k not in findings)
    print(ops.format_findings(findings, fresh))
    gave_up = state.gave_up()
    if gave_up:
        print("gave up for today (`eyt run` runs them now; attempts_per_day in the slate):\n" + "\n".join(gave_up))
    held = [] if only_forced else state.held_back(findings)
    if held:
        print(
            "held back (a run of theirs or of a parent is in progress, or a parent is missing): "
            + ", ".join(a if p is None else f"{a}[{p}]" for a, p in held)
        )
    jobless = sorted({a for a, _ in findings if a not in state.job_of})
    if jobless:
        print(f"eyt: no job materialises {jobless}; left out (materialise them from the UI)", file=sys.stderr)
        findings = {k: f for k, f in findings.items() if k[0] in state.job_of}
    if not findings:
        return 0
    runs = ops.plan_runs(findings, state.job_of, state.order, state.children)
    verb = "would launch" if dry_run else "submitting, as one backfill," if backfill else "launching"
    print(f"\n{verb} {len(runs)} run(s) (status read in {time.monotonic() - started:.1f} s):\n{ops.format_plan(runs)}")
    if dry_run:
        return 0
    if before_runs is not None:
        before_runs(findings)
    if backfill:
        from eyt_dagster.ops.backfill import submit_backfill

        return submit_backfill(instance, findings, run_tags or {})
    return _execute_plan(instance, runs, state.partitions_def, parallel, run_tags or {})


def _execute_plan(
    instance: DagsterInstance,
    runs: Sequence[PlannedRun],
    partitions_def: Mapping[str, PartitionsDefinition | None],
    parallel: int = 1,
    run_tags: Mapping[str, str] | None = None,
) -> int:
    from dagster import partition_loading_context

    from eyt_dagster.ops.run_plan import Run

    planned = []
    for run in runs:
        tags = {"eyt/command": "refresh", **(run_tags or {})}
        if run.partition is not None:
            pdef = partitions_def[run.job]
            assert pdef is not None  # a partitioned run's job is partitioned
            with partition_loading_context(dynamic_partitions_store=instance):
                tags.update(pdef.get_tags_for_partition_key(run.partition))
        planned.append(
            Run(
                run.job,
                tags,
                run.label,
                tuple(run.assets),
                tuple(run.after),
                needs_all_inputs=run.partition is not None,
            )
        )
    return 0 if execute_runs(instance, planned, parallel) else 1


def asset_parents() -> dict[str, list[str]]:
    from eyt_dagster.definitions import defs

    graph = defs.resolve_asset_graph()
    return {n.key.to_user_string(): [p.to_user_string() for p in n.parent_keys] for n in graph.asset_nodes}
