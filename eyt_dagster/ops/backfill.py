"""`eyt refresh --backfill`: submit the asset partitions to materialise as one Dagster asset backfill, which the
daemon (`dagster dev`, `dagster-daemon run`) launches in dependency order.

This is the one part of `eyt refresh` that still needs Dagster's private modules: no public Python API submits
an asset backfill (the public GraphQL client, dagster_graphql.DagsterGraphQLClient, needs a running webserver and
has no backfill call), so the location is loaded into an in-process workspace and the webserver's own GraphQL
mutation is executed against it. See docs/refresh.md.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from eyt_dagster.core.env_settings import dagster_home
from eyt_dagster.ops.instance import PROJECT_ROOT

if TYPE_CHECKING:  # dagster is imported where it is used
    from dagster import DagsterInstance
    from dagster._core.workspace.context import WorkspaceProcessContext

    from eyt_dagster.ops.refresh_plan import AssetPartition

_BACKFILL_MUTATION = """mutation EytBackfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}"""


def _location() -> tuple[str, str]:
    """(module, location name) of the code location in the repo's workspace.yaml."""
    import yaml

    entry = yaml.safe_load((PROJECT_ROOT / "workspace.yaml").read_text())["load_from"][0]["python_module"]
    return entry["module_name"], entry.get("location_name") or entry["module_name"]


def _workspace(instance: DagsterInstance) -> WorkspaceProcessContext:
    """A workspace holding the code location loaded in this process (no webserver, no code server)."""
    # no public API builds a workspace (what the GraphQL schema runs against) without a webserver
    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget

    module, name = _location()
    target = LoadableTargetOrigin(module_name=module, working_directory=str(PROJECT_ROOT))
    origin = InProcessCodeLocationOrigin(target, location_name=name)
    return WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin))


def submit_backfill(
    instance: DagsterInstance, findings: Collection[AssetPartition], run_tags: Mapping[str, str] | None = None
) -> int:
    """Submit the asset partitions as one asset backfill, its runs tagged with `run_tags` too; 0 when Dagster accepted
    it, 1 otherwise."""
    import asyncio

    from dagster import partition_loading_context
    from dagster_graphql.schema import create_schema

    by_asset: dict[str, list[str]] = {}
    for asset, partition in sorted(findings, key=lambda k: (k[0], k[1] or "")):
        by_asset.setdefault(asset, [])
        if partition is not None:
            by_asset[asset].append(partition)
    selectors = [
        {
            "assetKey": {"path": asset.split("/")},
            **({"partitions": {"ranges": [{"start": k, "end": k} for k in keys]}} if keys else {}),
        }
        for asset, keys in by_asset.items()
    ]
    params = {
        "partitionsByAssets": selectors,
        "title": "eyt refresh",
        "tags": [{"key": k, "value": v} for k, v in {"eyt/command": "refresh", **(run_tags or {})}.items()],
    }
    with _workspace(instance) as context, partition_loading_context(dynamic_partitions_store=instance):
        result = asyncio.run(
            create_schema().execute_async(
                _BACKFILL_MUTATION, context_value=context.create_request_context(), variable_values={"params": params}
            )
        )
    if result.errors:
        raise RuntimeError(f"GraphQL query failed: {result.errors[0]}")
    result = result.data["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        print(f"eyt: the backfill was refused: {result['__typename']}: {result.get('message', '')}", file=sys.stderr)
        return 1
    print(
        f"submitted backfill {result['backfillId']} ({len(findings)} asset partition(s)); the Dagster daemon "
        f"launches its runs: keep `eyt dev` (dagster dev) or `dagster-daemon run -w workspace.yaml` running "
        f"with DAGSTER_HOME={dagster_home()}"
    )
    return 0
