"""Planning for `eyt refresh`: from per-partition statuses to the list of runs that bring the graph up to date.

Pure functions over plain data, so they can be tested with hand-made maps; reading the statuses from the
instance, evaluating the automation conditions and launching the runs happen in `eyt_dagster.ops.refresh`
(docs/refresh.md).

Vocabulary: an *asset partition* is `(asset, partition)`, with `asset` the user string of the asset key
("dialogue/judge_verdicts") and `partition` the partition key string, or None for an unpartitioned asset.
A status is FRESH, STALE, MISSING, FAILED (its latest attempt left work unfinished) or GAVE_UP (it kept failing; left
alone for the day) (eyt_dagster/staleness.py).

A partition is STALE only for its own causes (new code version, new upstream data version); the partitions below
a stale one are not. Re-materialising a stale partition can change what its children read, so the plan also takes
every fresh asset partition downstream of one that will run (`propagate`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

FRESH, STALE, MISSING, FAILED = "FRESH", "STALE", "MISSING", "FAILED"

AssetPartition = tuple[str, str | None]


@dataclass(frozen=True)
class Finding:
    """One asset partition that needs materialising, and why."""

    asset: str
    partition: str | None
    status: str  # STALE, MISSING or FAILED
    causes: tuple[str, ...] = ()

    @property
    def key(self) -> AssetPartition:
        return (self.asset, self.partition)


@dataclass(frozen=True)
class PlannedRun:
    """One job run: a job, one partition key of it (None for an unpartitioned job), the assets it selects,
    and the indexes (in the plan) of earlier runs whose output it reads."""

    job: str
    partition: str | None
    assets: tuple[str, ...]
    after: tuple[int, ...] = field(default=())

    @property
    def label(self) -> str:
        return f"{self.job} [{self.partition}]" if self.partition is not None else self.job


def not_fresh(
    statuses: Mapping[AssetPartition, str], causes: Mapping[AssetPartition, Sequence[str]] | None = None
) -> dict[AssetPartition, Finding]:
    """The asset partitions reported STALE, MISSING or FAILED, with their causes."""
    causes = causes or {}
    return {
        key: Finding(key[0], key[1], status, tuple(causes.get(key, ())))
        for key, status in statuses.items()
        if status in (STALE, MISSING, FAILED)
    }


def propagate(
    findings: Mapping[AssetPartition, Finding],
    statuses: Mapping[AssetPartition, str],
    children: Callable[[AssetPartition], Iterable[AssetPartition]],
    together: Mapping[str, Sequence[str]] | None = None,
) -> dict[AssetPartition, Finding]:
    """Add every known asset partition downstream of a finding (transitively), as STALE with the upstream
    named, and the same partition of every asset computed by the same op (`together`: asset -> the other
    outputs of its op, which cannot run alone). Only asset partitions present in `statuses` are added (the
    rest are out of scope)."""
    together = together or {}
    result = dict(findings)
    queue = sorted(findings, key=_sort_key)
    while queue:
        parent = queue.pop(0)
        linked = [
            ((other, parent[1]), f"computed together with {_label(parent)}") for other in together.get(parent[0], ())
        ]
        linked += [
            (child, f"upstream {_label(parent)} will be re-materialised")
            for child in sorted(children(parent), key=_sort_key)
        ]
        for child, cause in linked:
            if child in statuses and child not in result:
                result[child] = Finding(child[0], child[1], STALE, (cause,))
                queue.append(child)
    return result


def descendants(assets: Iterable[str], parents: Mapping[str, Iterable[str]]) -> set[str]:
    """The given assets and every asset below them in the graph (`parents` maps an asset to its parents)."""
    children: dict[str, set[str]] = {}
    for child, ups in parents.items():
        for parent in ups:
            children.setdefault(parent, set()).add(child)
    found, queue = set(assets), list(assets)
    while queue:
        for child in children.get(queue.pop(), ()):
            if child not in found:
                found.add(child)
                queue.append(child)
    return found


def job_order(job_assets: Mapping[str, Iterable[str]], parents: Mapping[str, Iterable[str]]) -> list[str]:
    """Jobs in dependency order: a job comes after every job holding a parent of one of its assets. Ties are
    broken by name, so the order is stable. Raises ValueError on a cycle between jobs."""
    owner = {asset: job for job, assets in job_assets.items() for asset in assets}
    upstream = {
        job: {owner[p] for a in assets for p in parents.get(a, ()) if p in owner} - {job}
        for job, assets in job_assets.items()
    }
    order: list[str] = []
    while len(order) < len(upstream):
        ready = sorted(job for job, ups in upstream.items() if job not in order and ups <= set(order))
        if not ready:
            raise ValueError(f"jobs depend on each other in a cycle: {sorted(set(upstream) - set(order))}")
        order.append(ready[0])
    return order


def plan_runs(
    findings: Mapping[AssetPartition, Finding],
    job_of: Mapping[str, str],
    order: Sequence[str],
    children: Callable[[AssetPartition], Iterable[AssetPartition]],
) -> list[PlannedRun]:
    """Group the findings into runs: one run per (job, partition key) holding every asset of that job to
    materialise in that partition, ordered by job (`order`) then partition key. Each run lists the earlier
    runs that produce one of its inputs. An asset with no job in `job_of` raises KeyError."""
    grouped: dict[tuple[str, str | None], list[str]] = {}
    for asset, partition in findings:
        grouped.setdefault((job_of[asset], partition), []).append(asset)
    rank = {job: i for i, job in enumerate(order)}
    keys = sorted(grouped, key=lambda k: (rank[k[0]], k[1] or ""))
    produced = [{c for a in grouped[k] for c in children((a, k[1]))} for k in keys]
    runs = []
    for i, (job, partition) in enumerate(keys):
        assets = tuple(sorted(grouped[(job, partition)]))
        after = tuple(j for j in range(i) if produced[j] & {(a, partition) for a in assets})
        runs.append(PlannedRun(job, partition, assets, after))
    return runs


def skipped_by_failure(runs: Sequence[PlannedRun], failed: set[int], index: int) -> bool:
    """Whether run `index` must be skipped: a partitioned run whose inputs come from a failed run. Unpartitioned
    runs (the reports) still run, over the partitions that exist, as `eyt run` does."""
    run = runs[index]
    return run.partition is not None and any(j in failed for j in run.after)


def format_findings(findings: Mapping[AssetPartition, Finding], fresh_count: int) -> str:
    """A table of the asset partitions to materialise, grouped by asset, then a one-line summary."""
    if not findings:
        return f"nothing to do: all {fresh_count} asset partition(s) are fresh"
    rows = [
        (f.asset, f.partition or "-", f.status, "; ".join(f.causes) or "-")
        for f in sorted(findings.values(), key=lambda f: _sort_key(f.key))
    ]
    widths = [max(len(r[i]) for r in [*rows, ("asset", "partition", "status", "causes")]) for i in range(3)]
    lines = [f"{'asset':<{widths[0]}}  {'partition':<{widths[1]}}  {'status':<{widths[2]}}  causes"]
    previous = None
    for asset, partition, status, causes in rows:
        shown = asset if asset != previous else ""
        lines.append(f"{shown:<{widths[0]}}  {partition:<{widths[1]}}  {status:<{widths[2]}}  {causes}")
        previous = asset
    missing = sum(f.status == MISSING for f in findings.values())
    failed = sum(f.status == FAILED for f in findings.values())
    lines.append(
        f"{len(findings)} asset partition(s) to materialise ({missing} missing, "
        f"{len(findings) - missing - failed} stale, {failed} failed); {fresh_count} fresh"
    )
    return "\n".join(lines)


def format_plan(runs: Sequence[PlannedRun]) -> str:
    """One line per run: the job, its partition and the assets it selects."""
    return "\n".join(
        f"  {i + 1:>3}. {run.label:<56} {', '.join(a.split('/')[-1] for a in run.assets)}" for i, run in enumerate(runs)
    )


def _label(key: AssetPartition) -> str:
    return key[0] if key[1] is None else f"{key[0]}[{key[1]}]"


def _sort_key(key: AssetPartition) -> tuple[str, str]:
    return (key[0], key[1] or "")
