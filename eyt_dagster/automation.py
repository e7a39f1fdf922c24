"""Declarative automation of the asset graph: one automation condition on every asset, saying "run this asset
partition when it is missing or out of date, or when a parent it is computed with will run", restricted to the
pools and targets of the slate. `dagster dev`'s daemon evaluates it through the sensor `eyt_automation`, and
`eyt refresh` evaluates the same conditions once, without a daemon (eyt_dagster/ops/refresh.py). See docs/refresh.md.

Missing and out of date are states, read from the instance's records (eyt_dagster/staleness.py), not events since
the previous tick: Dagster's built-in `code_version_changed` and `any_deps_updated` only see what changed between
two evaluations, so a one-shot `eyt refresh` (always a first evaluation) would never see an edit made since the
last run. The two state conditions are Python conditions (`AutomationCondition` subclasses), which is why the
sensor is evaluated in the code location's process (`use_user_code_server`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, cast

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    AssetSpec,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    AutomationContext,
    AutomationResult,
    BetaWarning,
    DefaultSensorStatus,
    DynamicPartitionsDefinition,
    MultiPartitionsDefinition,
    PartitionsDefinition,
    StaticPartitionsDefinition,
    map_asset_specs,
    partition_loading_context,
)

from eyt_dagster import staleness
from eyt_dagster.core import env_settings
from eyt_dagster.eyt_bench.taxonomy import POOLS
from eyt_dagster.partitions import TARGET_PARTITION_SETS
from eyt_dagster.slate import Slate

SENSOR_NAME = "eyt_automation"
# "on": the sensor starts running when `dagster dev` loads the location (`eyt dev --automation` sets it); otherwise
# it starts stopped and is switched on in the UI (Automation), since every run it launches calls the models.
AUTOMATION_ENV = env_settings.AUTOMATION.name


def slate_dimensions(pdef: PartitionsDefinition, key: str) -> list[tuple[str, str]]:
    """The (dimension, value) pairs of a partition key that a slate chooses: the dynamic target sets
    ("targets", "speech_targets") and "pool"."""

    def kind(name: str, dim: PartitionsDefinition) -> str | None:
        if isinstance(dim, DynamicPartitionsDefinition) and dim.name in TARGET_PARTITION_SETS.values():
            return dim.name
        if not isinstance(dim, StaticPartitionsDefinition):
            return None
        keys = set(dim.get_partition_keys())
        return "pool" if name == "pool" or (keys and keys <= set(POOLS)) else None  # every pool, or the slate's

    if isinstance(pdef, MultiPartitionsDefinition):
        values = pdef.get_partition_key_from_str(key).keys_by_dimension
        found = [(kind(d.name, d.partitions_def), values[d.name]) for d in pdef.partitions_defs]
    else:
        found = [(kind("", pdef), key)]
    return [(k, v) for k, v in found if k]


def target_sets(pdef: PartitionsDefinition | None) -> set[str]:
    """The slate's target sets ("targets", "speech_targets") a partitions definition is keyed by."""

    if pdef is None:
        return set()
    dims = [d.partitions_def for d in pdef.partitions_defs] if isinstance(pdef, MultiPartitionsDefinition) else [pdef]
    names = {d.name for d in dims if isinstance(d, DynamicPartitionsDefinition)}
    return {name for name in names if name is not None and name in TARGET_PARTITION_SETS.values()}


def nothing_to_read(
    parent_pdefs: Sequence[PartitionsDefinition | None], keys: Mapping[str, Collection[str]]
) -> list[str]:
    """For an unpartitioned asset (a report) whose partitioned parents are keyed only by target sets the slate
    leaves empty (the SEQ reports of a slate with no SpeechEQ target, say), those sets: such a report has nothing
    to read, so it is outside the slate like a dropped target's partitions. Empty when it is in the slate, also
    when it reads one benchmark the slate has targets for (the model cards of a text-only slate)."""
    names = {name for pdef in parent_pdefs for name in target_sets(pdef)}
    empty = sorted(name for name in names if not keys.get(name))
    return empty if names and len(empty) == len(names) else []


UNHEARD = "unheard_voice_cells"  # the slate_keys entry of the voice cells the slate cannot play


def outside_slate(pdef: PartitionsDefinition, key: str, keys: Mapping[str, Collection[str]]) -> list[str]:
    """'pool X' / 'target Y' for each value of the partition key the slate does not have, and a voice cell whose
    target cannot hear its pool's language (empty: in the slate)."""
    dimensions = slate_dimensions(pdef, key)
    outside = [f"{'pool' if k == 'pool' else 'target'} {v}" for k, v in dimensions if v not in keys.get(k, ())]
    values = dict(dimensions)
    voice_target, pool = values.get(TARGET_PARTITION_SETS["eyt_voice"]), values.get("pool")
    if not outside and voice_target is not None and f"{voice_target}|{pool}" in keys.get(UNHEARD, ()):
        outside.append(f"pool {pool} for voice target {voice_target} (its recogniser writes English only)")
    return outside


def slate_keys(slate: Slate) -> dict[str, set[str]]:
    """ "pool" -> the slate's pools, each dynamic target set -> the ids the slate lists for its benchmark, and
    UNHEARD -> the "target|pool" voice cells the slate cannot play (a cascade whose recogniser writes English only,
    on a pool in another language: Slate.voice_pools_of)."""
    heard = {t.id: set(slate.voice_pools_of(t.id)) for t in slate.voice_targets}
    return {
        "pool": set(slate.pools),
        **{name: {t.id for t in slate.targets_of(benchmark)} for benchmark, name in TARGET_PARTITION_SETS.items()},
        UNHEARD: {f"{t}|{p}" for t, pools in heard.items() for p in slate.pools if p not in pools},
    }


def _partitions_where(
    context: AutomationContext[AssetKey], keep: Callable[[str | None], bool]
) -> AutomationResult[AssetKey]:
    """The candidate partitions for which keep(partition key or None) holds."""
    subset = context.candidate_subset
    if context.partitions_def is None:
        return AutomationResult(context, subset if not subset.is_empty and keep(None) else context.get_empty_subset())
    kept = {p for p in subset.expensively_compute_partition_keys() if keep(p)}
    return AutomationResult(context, subset.compute_intersection_with_partition_keys(kept))


class InSlate(AutomationCondition[AssetKey]):
    """True for the partitions whose pool and target are in the slate (a target dropped from the slate keeps its
    history and is left alone); for an unpartitioned asset, unless it reads only targets the slate has none of."""

    def __init__(self, keys: Mapping[str, Collection[str]]) -> None:
        self.keys = {k: frozenset(v) for k, v in keys.items()}

    @property
    def name(self) -> str:
        return "in_slate"

    @property
    def description(self) -> str:
        return "The partition's pool and target are in the slate"

    def evaluate(self, context: AutomationContext[AssetKey]) -> AutomationResult[AssetKey]:
        pdef = context.partitions_def
        if pdef is None:
            graph = context.asset_graph
            parents = [graph.get(parent).partitions_def for parent in graph.get(context.key).parent_keys]
            return _partitions_where(context, lambda _: not nothing_to_read(parents, self.keys))
        # a partitioned asset's candidates are partition keys, never None
        return _partitions_where(context, lambda p: not outside_slate(pdef, cast(str, p), self.keys))


_LATEST: list[Any] = [
    None,
    None,
]  # (evaluation, staleness.Latest): the records read once per evaluation, for all assets


def _latest_for(context: AutomationContext[AssetKey], attempts_per_day: int | None) -> staleness.Latest:
    instance = context.asset_graph_view.instance
    evaluation = (context.evaluation_time, id(instance), attempts_per_day)
    if _LATEST[0] != evaluation:
        _LATEST[:] = [evaluation, staleness.Latest(instance, attempts_per_day)]
    return _LATEST[1]


class OutOfDate(AutomationCondition[AssetKey]):
    """True for the partitions that are missing, or whose code version or inputs changed since their latest
    materialisation, or whose latest attempt failed while the slate's attempts_per_day allows another run
    (eyt_dagster/staleness.py). Never for a source asset (the slate's settings): it is observed, not computed."""

    def __init__(self, attempts_per_day: int | None = None) -> None:
        self.attempts_per_day = attempts_per_day

    @property
    def name(self) -> str:
        return "out_of_date"

    @property
    def description(self) -> str:
        return "Missing, or a new code version or new input data since the latest materialization"

    def evaluate(self, context: AutomationContext[AssetKey]) -> AutomationResult[AssetKey]:
        if not context.asset_graph.get(context.key).is_materializable:  # a settings source: an input, never run
            return AutomationResult(context, context.get_empty_subset())
        latest = _latest_for(context, self.attempts_per_day)
        with partition_loading_context(dynamic_partitions_store=context.asset_graph_view.instance):
            return _partitions_where(
                context,
                lambda p: (
                    staleness.state(context.asset_graph, latest, context.key, p).status
                    not in (staleness.FRESH, staleness.GAVE_UP)
                ),
            )


class RetryDue(AutomationCondition[AssetKey]):
    """True for the partitions whose latest attempt failed (staleness.FAILED) and whose latest run started at least
    a day / attempts_per_day ago: the daemon spreads its retries of a partition that keeps failing over the day
    instead of spending them on consecutive ticks. (`eyt refresh` runs a failed partition at once.)"""

    def __init__(self, attempts_per_day: int) -> None:
        self.attempts_per_day = attempts_per_day

    @property
    def name(self) -> str:
        return "retry_due"

    @property
    def description(self) -> str:
        return f"The latest attempt failed, and its run started at least 24 h / {self.attempts_per_day} ago"

    def evaluate(self, context: AutomationContext[AssetKey]) -> AutomationResult[AssetKey]:
        if not context.asset_graph.get(context.key).is_materializable:
            return AutomationResult(context, context.get_empty_subset())
        latest = _latest_for(context, self.attempts_per_day)
        spacing = staleness.DAY_S / self.attempts_per_day
        now = context.evaluation_time.timestamp()

        def due(partition: str | None) -> bool:
            found = staleness.state(context.asset_graph, latest, context.key, partition)
            if found.status != staleness.FAILED:
                return False
            failure = latest.failure(context.key, partition, context.asset_graph.get(context.key).check_keys)
            return failure is not None and now - failure.last_attempt >= spacing

        with partition_loading_context(dynamic_partitions_store=context.asset_graph_view.instance):
            return _partitions_where(context, due)


def condition(keys: Mapping[str, Collection[str]], attempts_per_day: int = 4) -> AutomationCondition[AssetKey]:
    """The automation condition of every asset, for a slate's pools and targets (`keys`, from slate_keys) and its
    attempts_per_day."""
    out_of_date = OutOfDate(attempts_per_day)
    # newly out of date, or a new code version while still out of date (a failed partition is retried when the
    # code changes, not on every tick); remembered until the partition is requested or updated. Not
    # `since_last_handled()`: it also counts the first evaluation as handled, so a first evaluation (every
    # `eyt refresh`, or the daemon's first tick) would request nothing.
    handled = (AutomationCondition.newly_requested() | AutomationCondition.newly_updated()).with_label("handled")
    fires = (
        (out_of_date.newly_true() | AutomationCondition.code_version_changed()).since(handled) & out_of_date
    ).with_label("out_of_date_since_handled") | RetryDue(attempts_per_day)
    # a parent that runs in the same run (same partition) is requested: this partition is recomputed with it
    follows = AutomationCondition.any_deps_match(AutomationCondition.will_be_requested()).with_label(
        "any_deps_will_be_requested"
    )
    # a parent partition of the slate is missing or out of date and not requested with it: wait until it has been
    # (re)computed, rather than run now on old inputs and again afterwards (a cell waits for its pool, a report for
    # every cell of the slate; partitions outside the slate never hold anything up)
    deps_pending = AutomationCondition.any_deps_match(
        InSlate(keys) & OutOfDate(attempts_per_day) & ~AutomationCondition.will_be_requested()
    ).with_label("any_slate_deps_out_of_date")
    return (
        InSlate(keys)
        & (fires | follows)
        & ~AutomationCondition.in_progress()
        & ~AutomationCondition.any_deps_in_progress()
        & ~deps_pending
    ).with_label("eyt_refresh")


def with_automation(
    assets: Sequence[AssetsDefinition], keys: Mapping[str, Collection[str]], attempts_per_day: int = 4
) -> list[AssetsDefinition]:
    """The assets with the project's automation condition on every materialisable asset."""

    def add(spec: AssetSpec) -> AssetSpec:
        return spec.replace_attributes(automation_condition=condition(keys, attempts_per_day))

    return list(map_asset_specs(add, assets))


def automation_sensor(running: bool | None = None) -> AutomationConditionSensorDefinition:
    """The sensor through which the daemon evaluates the conditions (in the code location's process, since they
    are Python conditions). `running` None: from EYT_AUTOMATION."""
    if running is None:
        running = env_settings.AUTOMATION.get()
    with warnings.catch_warnings():  # use_user_code_server is a beta parameter: said once in docs/refresh.md
        warnings.simplefilter("ignore", BetaWarning)
        return AutomationConditionSensorDefinition(
            SENSOR_NAME,
            target=AssetSelection.all(),
            use_user_code_server=True,
            minimum_interval_seconds=60,
            default_status=DefaultSensorStatus.RUNNING if running else DefaultSensorStatus.STOPPED,
            run_tags={"eyt/command": "automation"},
            description="Keeps the slate's partitions up to date: requests every missing or out-of-date asset "
            "partition of the slate's pools and targets (docs/refresh.md).",
        )
