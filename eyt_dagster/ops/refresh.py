"""`eyt refresh`: read every partition's status from the instance's GraphQL API (in process: no webserver, no
code server), plan the runs that clear what is missing or stale (eyt_dagster/ops/refresh_plan.py), and launch them here
or submit them as one backfill for the daemon."""

from __future__ import annotations

import os
import sys
import time

from eyt_dagster.ops.instance import PROJECT_ROOT
from eyt_dagster.ops.launch import Launcher

try:  # the number of upstream partitions from which Dagster stops comparing data versions along an edge
    from dagster._core.definitions.data_version import (
        SKIP_PARTITION_DATA_VERSION_DEPENDENCY_THRESHOLD as _SKIP_THRESHOLD,
    )
except ImportError:  # pragma: no cover - moved in another Dagster version
    _SKIP_THRESHOLD = 100
_CAUSE = "key { path } partitionKey category reason dependency { path } dependencyPartitionKey"
_NODES_QUERY = """query EytAssetNodes {
  assetNodes { assetKey { path } jobNames opName isPartitioned isMaterializable dependencyKeys { path }
               staleStatus staleCauses { %s } assetMaterializations(limit: 1) { timestamp } }
}""" % _CAUSE
_PARTITIONS_QUERY = """query EytPartitionStatus($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) { assetKey { path } partitionKeys staleStatusByPartition
                                 staleCausesByPartition { %s } }
}""" % _CAUSE
_BACKFILL_MUTATION = """mutation EytBackfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}"""


def _location():
    """(module, location name) of the code location in the repo's workspace.yaml."""
    import yaml

    entry = yaml.safe_load((PROJECT_ROOT / "workspace.yaml").read_text())["load_from"][0]["python_module"]
    return entry["module_name"], entry.get("location_name") or entry["module_name"]


def _workspace(instance, target=None):  # noqa: ANN001, ANN202
    """A workspace holding the code location loaded in this process (no webserver, no code server). The
    location's code versions are those of this process's import: `eyt refresh` is a fresh process, so a
    prompt or slate edited since the last run shows up as a new code version. `target` (a
    LoadableTargetOrigin) loads another definitions file instead of the workspace's module."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget

    module, name = _location()
    target = target or LoadableTargetOrigin(module_name=module, working_directory=str(PROJECT_ROOT))
    origin = InProcessCodeLocationOrigin(target, location_name=name)
    return WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin))


def _graphql(request_context, query: str, variables: dict | None = None) -> dict:  # noqa: ANN001
    import asyncio

    from dagster_graphql.schema import create_schema

    result = asyncio.run(create_schema().execute_async(query, context_value=request_context,
                                                       variable_values=variables))
    if result.errors:
        raise RuntimeError(f"GraphQL query failed: {result.errors[0]}")
    return result.data


def _cause_text(cause: dict, asset: str, partition: str | None) -> str:
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
    """What `eyt refresh` knows about the graph: per asset partition status and causes (Dagster's), last
    materialisation times, parents, the job of every asset, the job order, each job's partitions definition
    and the partition-level children of every asset partition.

    `include` says which assets to consider; `slate_keys` maps "pool" and each dynamic target set
    ("targets", "speech_targets") to the slate's keys: partitions of a pool or target not in the slate are left
    alone (a target dropped from the slate keeps its history) and listed in `left_alone`. Source assets (the
    slate's settings) are inputs, not results: they are not listed. With `slate`, causes that come from changed
    slate settings name them (eyt_dagster/settings_sources.py)."""

    def __init__(self, context, instance, include, slate_keys: dict[str, set[str]], slate=None) -> None:  # noqa: ANN001
        from dagster import AssetKey, partition_loading_context

        from eyt_dagster.settings_sources import SettingsHistory

        request = context.create_request_context()
        graph = request.asset_graph
        nodes = [n for n in _graphql(request, _NODES_QUERY)["assetNodes"]
                 if n["isMaterializable"] and include("/".join(n["assetKey"]["path"]))]
        history = slate and SettingsHistory(instance, slate, {
            "/".join(n["assetKey"]["path"]): graph.get(AssetKey(n["assetKey"]["path"])).code_version for n in nodes})

        def why(cause: dict, asset: str, partition: str | None) -> str:
            return (history and history.explain(asset, partition, cause)) or _cause_text(cause, asset, partition)

        self.statuses: dict = {}
        self.causes: dict = {}
        self.latest = {}
        self.parents = {}
        self.partition_counts: dict[str, int] = {}
        self.left_alone: set[str] = set()
        job_assets: dict[str, list[str]] = {}
        by_op: dict[str, list[str]] = {}
        for n in nodes:
            asset = "/".join(n["assetKey"]["path"])
            by_op.setdefault(n["opName"] or asset, []).append(asset)
            self.parents[asset] = ["/".join(d["path"]) for d in n["dependencyKeys"]]
            done = n["assetMaterializations"]
            self.latest[asset] = float(done[0]["timestamp"]) if done else None
            for job in n["jobNames"]:
                if not job.startswith("__"):
                    job_assets.setdefault(job, []).append(asset)
            if not n["isPartitioned"]:
                self.statuses[(asset, None)] = n["staleStatus"]
                self.causes[(asset, None)] = [why(c, asset, None) for c in n["staleCauses"]]
        partitioned = [{"path": n["assetKey"]["path"]} for n in nodes if n["isPartitioned"]]
        for n in _graphql(request, _PARTITIONS_QUERY, {"keys": partitioned})["assetNodes"] if partitioned else []:
            asset = "/".join(n["assetKey"]["path"])
            pdef = graph.get(AssetKey(n["assetKey"]["path"])).partitions_def
            self.partition_counts[asset] = len(n["partitionKeys"])
            for key, status, causes in zip(n["partitionKeys"], n["staleStatusByPartition"],
                                           n["staleCausesByPartition"] or [[]] * len(n["partitionKeys"])):
                outside = [f"{'pool' if k == 'pool' else 'target'} {v}" for k, v in _slate_dimensions(pdef, key)
                           if v not in slate_keys.get(k, set())]
                if outside:
                    self.left_alone.update(outside)
                    continue
                self.statuses[(asset, key)] = status
                self.causes[(asset, key)] = [why(c, asset, key) for c in causes or []]
        self.together = {a: [b for b in outs if b != a] for outs in by_op.values() if len(outs) > 1 for a in outs}
        from eyt_dagster.ops import refresh_plan as ops

        self.order = ops.job_order(job_assets, self.parents)
        self.job_of = {a: job for job in reversed(self.order) for a in job_assets[job]}
        self.partitions_def = {self.job_of[a]: graph.get(AssetKey.from_user_string(a)).partitions_def
                               for a in self.job_of}
        self._children = {}
        with partition_loading_context(dynamic_partitions_store=instance):
            for asset, partition in self.statuses:
                found = graph.get_children_partitions(AssetKey.from_user_string(asset), partition)
                self._children[(asset, partition)] = [(c.asset_key.to_user_string(), c.partition_key) for c in found]

    def children(self, key):  # noqa: ANN001, ANN201
        return self._children.get(key, ())

    def findings(self, extra: dict | None = None) -> dict:
        """Dagster's STALE / MISSING partitions, reports older than a parent Dagster does not compare, `extra`,
        and every asset partition downstream of those."""
        from eyt_dagster.ops import refresh_plan as ops

        unchecked = ops.unchecked_parents(self.parents, self.partition_counts, _SKIP_THRESHOLD)
        direct = {**(extra or {}), **ops.outdated_by_time(self.statuses, self.latest, unchecked),
                  **ops.not_fresh(self.statuses, self.causes)}
        return ops.propagate(direct, self.statuses, self.children, self.together)


def _slate_dimensions(pdef, key: str) -> list[tuple[str, str]]:  # noqa: ANN001
    """The (dimension, value) pairs of a partition key that a slate chooses: the dynamic target sets
    ("targets", "speech_targets") and "pool"."""
    from dagster import DynamicPartitionsDefinition, MultiPartitionsDefinition, StaticPartitionsDefinition

    from eyt_dagster.ops.instance import TARGET_PARTITION_SETS
    from eyt_dagster.eyt_bench.taxonomy import POOLS

    def kind(name: str, dim) -> str | None:  # noqa: ANN001
        if isinstance(dim, DynamicPartitionsDefinition) and dim.name in TARGET_PARTITION_SETS.values():
            return dim.name
        is_pool = name == "pool" or set(dim.get_partition_keys()) == set(POOLS)
        if isinstance(dim, StaticPartitionsDefinition) and is_pool:
            return "pool"
        return None

    if isinstance(pdef, MultiPartitionsDefinition):
        values = pdef.get_partition_key_from_str(key).keys_by_dimension
        found = [(kind(d.name, d.partitions_def), values[d.name]) for d in pdef.partitions_defs]
    else:
        found = [(kind("", pdef), key)]
    return [(k, v) for k, v in found if k]


def slate_keys(slate) -> dict[str, set[str]]:  # noqa: ANN001
    """"pool" -> the slate's pools, and each dynamic target set -> the ids the slate lists for its benchmark."""
    from eyt_dagster.ops.instance import TARGET_PARTITION_SETS

    return {"pool": set(slate.pools),
            **{name: {t.id for t in slate.targets_of(benchmark)} for benchmark, name in TARGET_PARTITION_SETS.items()}}


def refresh(instance, include, keys, *, dry_run: bool = False, backfill: bool = False,  # noqa: ANN001
             forced: frozenset[str] | set[str] | None = frozenset(), reason: str = "", only_forced: bool = False,
             slate=None, target=None, parallel: int = 1) -> int:  # noqa: ANN001
    """List the asset partitions to materialise and materialise them (or submit them as a backfill).
    `forced` names unpartitioned assets to recompute even if fresh (None: all of them), with `reason`;
    `only_forced` leaves out everything else (but what lies downstream of them). With `slate`, its per-target
    and per-pool settings are recorded first (settings_sources.record_settings), so a changed target shows as
    stale partitions, and causes name the settings that changed. `target` loads other definitions (tests).
    `parallel`: how many runs at once (eyt_dagster/ops/run_plan.py)."""
    from eyt_dagster.ops import refresh_plan as ops

    started = time.monotonic()
    if slate is not None:
        from eyt_dagster.settings_sources import record_settings

        record_settings(instance, slate)
    with _workspace(instance, target) as context:
        state = AssetState(context, instance, include, keys, slate)
        if state.left_alone:
            print("left alone, not in the slate (`eyt remove-target ID` deletes a target): "
                  + ", ".join(sorted(state.left_alone)))
        reports = {a for a, p in state.statuses if p is None}
        forced_findings: dict[ops.AssetPartition, ops.Finding] = {
            (a, None): ops.Finding(a, None, ops.STALE, (reason,))
            for a in sorted(reports if forced is None else reports & set(forced))}
        findings = (ops.propagate(forced_findings, state.statuses, state.children, state.together) if only_forced
                    else state.findings(forced_findings))
        fresh = sum(state.statuses[k] == ops.FRESH for k in state.statuses if k not in findings)
        print(ops.format_findings(findings, fresh))
        jobless = sorted({a for a, _ in findings if a not in state.job_of})
        if jobless:
            print(f"eyt: no job materialises {jobless}; left out (materialise them from the UI)", file=sys.stderr)
            findings = {k: f for k, f in findings.items() if k[0] in state.job_of}
        if not findings:
            return 0
        runs = ops.plan_runs(findings, state.job_of, state.order, state.children)
        verb = "would launch" if dry_run else "submitting, as one backfill," if backfill else "launching"
        print(f"\n{verb} {len(runs)} run(s) "
              f"(status read in {time.monotonic() - started:.1f} s):\n{ops.format_plan(runs)}")
        if dry_run:
            return 0
        if backfill:
            return _submit_backfill(context, instance, findings)
    return _execute_plan(instance, runs, state.partitions_def, parallel)


def _execute_plan(instance, runs, partitions_def, parallel: int = 1) -> int:  # noqa: ANN001
    from dagster import partition_loading_context

    from eyt_dagster.ops.run_plan import OK, SKIPPED, Run, run_all

    started = time.monotonic()
    planned = []
    for run in runs:
        tags = {"eyt/command": "refresh"}
        exclusive = None
        if run.partition is not None:
            with partition_loading_context(dynamic_partitions_store=instance):
                tags.update(partitions_def[run.job].get_tags_for_partition_key(run.partition))
            # the cells of one target call the same endpoint: one at a time (docs/operations.md)
            exclusive = tags.get("dagster/partition/target") or (run.partition if run.job == "speech_eval" else None)
        planned.append(Run(run.job, tags, run.label, tuple(run.assets), tuple(run.after),
                           f"target:{exclusive}" if exclusive else None, needs_all_inputs=run.partition is not None))
    with Launcher(instance, parallel) as launcher:
        outcome = run_all(planned, launcher.start, parallel, on_skip=lambda i, run: print(
            f"  skip   {run.label:<48} (an upstream run failed)", flush=True))
    skipped = sum(state == SKIPPED for state in outcome.values())
    failed = sum(state != OK for state in outcome.values()) - skipped
    ok = not failed and not skipped
    print(f"{'done' if ok else 'FAILED'} in {time.monotonic() - started:.1f} s: {len(runs) - failed - skipped} run(s) "
          f"succeeded, {failed} failed, {skipped} skipped")
    return 0 if ok else 1


def _submit_backfill(context, instance, findings) -> int:  # noqa: ANN001
    """Submit the asset partitions as one asset backfill; the daemon (`dagster dev` or `dagster-daemon run`)
    launches its runs in dependency order."""
    from dagster import partition_loading_context

    by_asset: dict[str, list[str]] = {}
    for asset, partition in sorted(findings, key=lambda k: (k[0], k[1] or "")):
        by_asset.setdefault(asset, [])
        if partition is not None:
            by_asset[asset].append(partition)
    selectors = [{"assetKey": {"path": asset.split("/")},
                  **({"partitions": {"ranges": [{"start": k, "end": k} for k in keys]}} if keys else {})}
                 for asset, keys in by_asset.items()]
    params = {"partitionsByAssets": selectors, "title": "eyt refresh",
              "tags": [{"key": "eyt/command", "value": "refresh"}]}
    with partition_loading_context(dynamic_partitions_store=instance):  # the dynamic `targets` keys (see warehouse.py)
        result = _graphql(context.create_request_context(), _BACKFILL_MUTATION, {"params": params})
    result = result["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        print(f"eyt: the backfill was refused: {result['__typename']}: {result.get('message', '')}", file=sys.stderr)
        return 1
    print(f"submitted backfill {result['backfillId']} ({len(findings)} asset partition(s)); the Dagster daemon "
          f"launches its runs: keep `eyt dev` (dagster dev) or `dagster-daemon run -w workspace.yaml` running "
          f"with DAGSTER_HOME={os.environ['DAGSTER_HOME']}")
    return 0


def asset_parents() -> dict[str, list[str]]:
    from eyt_dagster.definitions import defs

    graph = defs.resolve_asset_graph()
    return {n.key.to_user_string(): [p.to_user_string() for p in n.parent_keys] for n in graph.asset_nodes}
