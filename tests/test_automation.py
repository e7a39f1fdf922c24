"""The automation conditions on their own (eyt_dagster/automation.py), evaluated through Dagster's public
`evaluate_automation_conditions` and through the sensor the daemon runs, against a real instance in a temporary
directory; and the code location's definitions carry them (every asset a condition, the sensor on all assets).

The graph is a miniature of the project's with its partitions: a pool asset, two target x pool assets (the second
reads the first; the first also reads a per-target settings source, observed like dialogue/target_settings) and an
unpartitioned report, with the slate choosing one pool and two of three registered targets."""

from pathlib import Path

import pytest
from dagster import (
    AssetDep,
    AssetIn,
    AssetKey,
    AssetObservation,
    AssetSpec,
    AutomationConditionSensorDefinition,
    DagsterInstance,
    DefaultSensorStatus,
    Definitions,
    MultiToSingleDimensionPartitionMapping,
    asset,
    build_sensor_context,
    evaluate_automation_conditions,
    materialize,
)

from assets.eyt_bench.partitions import (
    TARGETS_PARTITION,
    by_pool,
    pool_partitions,
    target_partitions,
    target_pool_key,
    target_pool_partitions,
)
from eyt_dagster.automation import SENSOR_NAME, automation_sensor, with_automation
from eyt_dagster.staleness import DATA_VERSION_TAG

POOL = "nemotron_usa"
SLATE = {"pool": {POOL}, "targets": {"a", "b"}}  # target "c" is registered but not in the slate
SEEDS, TURNS, VERDICTS, BOARD = (AssetKey(["t", name]) for name in ("seeds", "turns", "verdicts", "board"))
SETTINGS = AssetKey(["t", "settings"])


def graph(verdicts_version: str) -> list:
    """The miniature graph; `verdicts_version` is the code version of t/verdicts (a prompt edit changes it)."""

    @asset(key=SEEDS, partitions_def=pool_partitions, code_version="1")
    def seeds(context):
        return context.partition_key

    settings = AssetSpec(SETTINGS, partitions_def=target_partitions)  # observed, never computed

    @asset(
        key=TURNS,
        partitions_def=target_pool_partitions,
        code_version="1",
        ins={"seeds": AssetIn(key=SEEDS, partition_mapping=by_pool)},
        deps=[AssetDep(SETTINGS, partition_mapping=MultiToSingleDimensionPartitionMapping("target"))],
    )
    def turns(seeds):
        return seeds

    @asset(key=VERDICTS, partitions_def=target_pool_partitions, code_version=verdicts_version, deps=[TURNS])
    def verdicts() -> int:
        return 1

    @asset(key=BOARD, code_version="1", deps=[AssetDep(VERDICTS)])
    def board() -> int:
        return 1

    return [settings, *with_automation([seeds, turns, verdicts, board], SLATE)]


def requested(result) -> set:
    return {
        (key.path[-1], partition)
        for key in (SEEDS, TURNS, VERDICTS, BOARD)
        for partition in result.get_requested_partitions(key)
    }


def cell(target: str) -> str:
    return str(target_pool_key(target, POOL))


def observe(instance, target: str, version: str) -> None:
    """What record_settings does when a target's settings change: an observation whose data version is their hash."""
    instance.report_runless_asset_event(AssetObservation(SETTINGS, partition=target, tags={DATA_VERSION_TAG: version}))


@pytest.fixture
def instance(tmp_path):
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with DagsterInstance.from_config(str(tmp_path)) as instance:  # on disk, as `eyt` and the daemon use it
        instance.add_dynamic_partitions(TARGETS_PARTITION, ["a", "b", "c"])
        yield instance


@pytest.mark.materialisation
def test_conditions_request_missing_then_exactly_the_partitions_a_code_change_makes_stale(instance):
    v1 = graph("1")
    for target in "abc":
        observe(instance, target, "s1")
    # nothing materialised: only the slate's pool; its cells wait for it (other pools, target c: not the slate's)
    assert requested(evaluate_automation_conditions(v1, instance)) == {("seeds", POOL)}

    materialize(v1, selection=[SEEDS], partition_key=POOL, instance=instance)
    # the pool exists: both slate cells, with t/verdicts in the same run as t/turns; the report waits for them
    assert requested(evaluate_automation_conditions(v1, instance)) == {
        (name, cell(t)) for name in ("turns", "verdicts") for t in "ab"
    }

    for target in "ab":
        materialize(v1, selection=[TURNS, VERDICTS], partition_key=cell(target), instance=instance)
    assert requested(evaluate_automation_conditions(v1, instance)) == {("board", None)}
    materialize(v1, selection=[BOARD], instance=instance)
    assert requested(evaluate_automation_conditions(v1, instance)) == set()

    # target a's settings change (b's are recorded again unchanged): a's cell only. Redone, its outputs have the
    # same data versions as before (these assets' versions do not depend on the settings), so the report is not
    # out of date and nothing more is requested
    observe(instance, "b", "s1")
    observe(instance, "a", "s2")
    assert requested(evaluate_automation_conditions(v1, instance)) == {("turns", cell("a")), ("verdicts", cell("a"))}
    materialize(v1, selection=[TURNS, VERDICTS], partition_key=cell("a"), instance=instance)
    assert requested(evaluate_automation_conditions(v1, instance)) == set()

    # a new code version of t/verdicts (what a judge prompt edit does): exactly its slate partitions, not the turns
    # and not target c; the report follows in a later evaluation, once they are rematerialised
    v2 = graph("2")
    first = evaluate_automation_conditions(v2, instance)
    assert requested(first) == {("verdicts", cell("a")), ("verdicts", cell("b"))}
    # the daemon's next tick (with the cursor): already requested, so not requested again
    assert requested(evaluate_automation_conditions(v2, instance, cursor=first.cursor)) == set()

    materialize(v2, selection=[VERDICTS], partition_key=cell("a"), instance=instance)
    # the report is now older than the new t/verdicts[a], but waits while cell b is still out of date
    assert requested(evaluate_automation_conditions(v2, instance)) == {("verdicts", cell("b"))}
    materialize(v2, selection=[VERDICTS], partition_key=cell("b"), instance=instance)
    assert requested(evaluate_automation_conditions(v2, instance)) == {("board", None)}


@pytest.mark.materialisation
def test_the_sensor_the_daemon_runs_requests_the_same_partitions(instance):
    v1 = graph("1")
    materialize(v1, selection=[SEEDS], partition_key=POOL, instance=instance)
    for target in "ab":
        materialize(v1, selection=[TURNS, VERDICTS], partition_key=cell(target), instance=instance)
    materialize(v1, selection=[BOARD], instance=instance)
    defs = Definitions(assets=graph("2"), sensors=[automation_sensor(running=True)])
    sensor = defs.get_sensor_def(SENSOR_NAME)
    result = sensor(build_sensor_context(instance=instance, definitions=defs))
    subsets = [request.asset_graph_subset for request in result.run_requests]
    asked = {
        (key.path[-1], p)
        for subset in subsets
        for key in subset.asset_keys
        for p in (
            subset.partitions_subsets_by_asset_key[key].get_partition_keys()
            if key in subset.partitions_subsets_by_asset_key
            else [None]
        )
    }
    assert asked == {("verdicts", cell("a")), ("verdicts", cell("b"))}
    assert all(request.tags["eyt/command"] == "automation" for request in result.run_requests)


@pytest.mark.unit
def test_the_code_location_puts_a_condition_on_every_asset_and_the_sensor_on_all_of_them(monkeypatch):
    from eyt_dagster.definitions import build_defs

    defs = build_defs()
    graph_ = defs.resolve_asset_graph()
    materialisable = [n for n in graph_.asset_nodes if n.is_materializable]
    assert materialisable and all(n.automation_condition is not None for n in materialisable)
    assert {n.automation_condition.get_label() for n in materialisable} == {"eyt_refresh"}
    sensor = defs.get_sensor_def(SENSOR_NAME)
    assert isinstance(sensor, AutomationConditionSensorDefinition)
    targeted = sensor.asset_selection.resolve(graph_)
    assert {n.key for n in materialisable} <= targeted
    assert sensor.default_status == DefaultSensorStatus.STOPPED  # every run it starts calls the models
    monkeypatch.setenv("EYT_AUTOMATION", "on")  # what `eyt dev --automation` sets for `dagster dev`
    assert build_defs().get_sensor_def(SENSOR_NAME).default_status == DefaultSensorStatus.RUNNING


@pytest.mark.unit
def test_workspace_loads_the_module_that_holds_the_sensor():
    """`dagster dev -w workspace.yaml` (what `eyt dev` runs) loads the module whose definitions hold the sensor."""
    import yaml

    entry = yaml.safe_load((Path(__file__).resolve().parents[1] / "workspace.yaml").read_text())["load_from"][0]
    assert entry["python_module"]["module_name"] == "eyt_dagster.definitions"


@pytest.mark.materialisation
def test_a_report_over_many_partitions_is_out_of_date_only_when_one_has_new_data(instance):
    """Dagster stops comparing data versions from 100 upstream partitions on; staleness.py compares them anyway: a
    re-recorded partition with the same data version changes nothing, one with new data makes the report stale."""
    from dagster import AssetMaterialization, StaticPartitionsDefinition, partition_loading_context

    from eyt_dagster import staleness

    parts = StaticPartitionsDefinition([f"p{i:03d}" for i in range(120)])
    cells, report = AssetKey(["m", "cells"]), AssetKey(["m", "report"])

    @asset(key=cells, partitions_def=parts, code_version="1")
    def many() -> int:
        return 1

    @asset(key=report, code_version="1", deps=[cells])
    def over_all() -> int:
        return 1

    def record(key, partition, version, code="1"):
        instance.report_runless_asset_event(
            AssetMaterialization(
                key, partition=partition, tags={staleness.DATA_VERSION_TAG: version, staleness.CODE_VERSION_TAG: code}
            )
        )

    def state():
        graph_ = Definitions(assets=[many, over_all]).resolve_asset_graph()
        with partition_loading_context(dynamic_partitions_store=instance):
            return staleness.state(graph_, staleness.Latest(instance), report, None)

    assert state().status == staleness.MISSING
    for key in parts.get_partition_keys():
        record(cells, key, "v1")
    record(report, None, "r1")
    assert state() == staleness.State(staleness.FRESH)
    record(cells, "p042", "v1")  # rebuilt with identical contents
    assert state() == staleness.State(staleness.FRESH)
    record(cells, "p117", "v2")  # new contents in one partition of 120
    assert state() == staleness.State(
        staleness.STALE, (staleness.cause(cells, None, "DATA", "has a new data version"),)
    )
    record(report, None, "r2", code="0")  # recomputed, but by other code than the definition's
    assert state() == staleness.State(
        staleness.STALE, (staleness.cause(report, None, "CODE", "has a new code version"),)
    )


@pytest.mark.unit
def test_a_report_of_targets_the_slate_has_none_of_is_outside_the_slate():
    """A text-only slate: the SEQ reports read only SpeechEQ targets, so neither the daemon nor `eyt refresh`
    asks for them (they would fail every time with nothing to read); the model cards, which read both
    benchmarks, and the EYT-Bench reports stay in the slate. And the same the other way round."""
    from eyt_dagster.automation import nothing_to_read
    from eyt_dagster.definitions import defs

    graph = defs.resolve_asset_graph()

    def reads_nothing(asset: str, keys: dict) -> list[str]:
        node = graph.get(AssetKey.from_user_string(asset))
        return nothing_to_read([graph.get(p).partitions_def for p in node.parent_keys], keys)

    text_only = {"pool": {"nemotron_usa"}, "targets": {"reflective-baseline"}, "speech_targets": set()}
    assert reads_nothing("speech/seq_leaderboard", text_only) == ["speech_targets"]
    assert reads_nothing("speech/seq_breakdown", text_only) == ["speech_targets"]
    assert reads_nothing("dialogue/leaderboard", text_only) == []
    assert reads_nothing("reports/model_cards", text_only) == []
    speech_only = {"pool": {"nemotron_usa"}, "targets": set(), "speech_targets": {"random-chooser-baseline"}}
    assert reads_nothing("dialogue/leaderboard", speech_only) == ["targets"]
    assert reads_nothing("speech/seq_leaderboard", speech_only) == []
    assert reads_nothing("reports/model_cards", speech_only) == []


def failing_pool(state: dict, attempts_per_day: int) -> list:
    """One pool asset whose materialisation holds `state["errors"]` error rows (as assets/_output.py reports them)."""
    from dagster import Output

    @asset(key=SEEDS, partitions_def=pool_partitions, code_version="1")
    def seeds(context):
        return Output(1, metadata={"error_rows": state["errors"], "failures": "simulator: 2 timeouts"})

    return with_automation([seeds], SLATE, attempts_per_day)


@pytest.mark.materialisation
def test_the_daemon_retries_a_failed_partition_spaced_over_the_day(instance):
    import time

    from eyt_dagster.staleness import DAY_S

    state = {"errors": 2}
    per_day = 10_000  # a retry is due 8.6 s after the latest run started
    spacing = DAY_S / per_day
    assets = failing_pool(state, per_day)
    first = evaluate_automation_conditions(assets, instance)
    assert requested(first) == {("seeds", POOL)}
    started = time.monotonic()
    materialize(assets, partition_key=POOL, instance=instance)  # it ran, and two of its rows are errors
    tick = evaluate_automation_conditions(assets, instance, cursor=first.cursor)
    if time.monotonic() - started < spacing - 1:  # not yet due (a machine slower than that cannot tell)
        assert requested(tick) == set()
    time.sleep(max(0.0, spacing + 0.5 - (time.monotonic() - started)))
    due = evaluate_automation_conditions(assets, instance, cursor=tick.cursor)
    assert requested(due) == {("seeds", POOL)}  # failed: asked again once the spacing has passed
    state["errors"] = 0
    materialize(assets, partition_key=POOL, instance=instance)
    assert requested(evaluate_automation_conditions(assets, instance, cursor=due.cursor)) == set()  # healed


@pytest.mark.materialisation
def test_a_partition_that_keeps_failing_is_given_up_for_the_day(instance):
    from eyt_dagster import staleness

    state = {"errors": 3}
    assets = failing_pool(state, 2)
    graph = Definitions(assets=assets).resolve_asset_graph()
    materialize(assets, partition_key=POOL, instance=instance)
    found = staleness.state(graph, staleness.Latest(instance, 2), SEEDS, POOL)
    assert found.status == staleness.FAILED
    assert found.causes[0]["reason"] == "failed: 3 error row(s): simulator: 2 timeouts"
    materialize(assets, partition_key=POOL, instance=instance)  # the retry fails too: attempts_per_day 2 used up
    found = staleness.state(graph, staleness.Latest(instance, 2), SEEDS, POOL)
    assert found.status == staleness.GAVE_UP
    assert "gave up after 2 runs in 24 h (attempts_per_day: 2)" in found.causes[0]["reason"]
    assert requested(evaluate_automation_conditions(assets, instance)) == set()
    # without the setting (an older caller), a failed partition reads as up to date, as before
    assert staleness.state(graph, staleness.Latest(instance), SEEDS, POOL).status == staleness.FRESH
