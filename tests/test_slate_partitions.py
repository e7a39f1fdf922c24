"""The code location's partitions are the cells its slate plays: a pool the slate does not list is no partition, so
after a run of every cell the instance (and the UI, which counts from it) reports nothing missing; the voice cells
a slate cannot play and that remain partitions are named in their assets' descriptions."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, Definitions, MultiPartitionsDefinition, StaticPartitionsDefinition

from assets.eyt_bench.partitions import TARGETS_PARTITION
from eyt_dagster.eyt_bench.taxonomy import POOLS
from eyt_dagster.eyt_voice.settings import PACKAGED_ASR
from eyt_dagster.jobs import DIALOGUE_ASSETS, POOL_ASSETS
from eyt_dagster.slate import default_slate_path, load_slate

from support.pipeline import materialize_dialogues
from support.slates import write_slate

TURNS = AssetKey(["dialogue", "dialogue_turns"])
VOICED = AssetKey(["voice", "voiced_turns"])


def _defs(slate: Path) -> Definitions:
    from eyt_dagster.definitions import build_defs

    return build_defs(str(slate))


def _pools(defs: Definitions, key: AssetKey) -> list[str] | None:
    """The pools an asset is partitioned by (alone or beside a target), None when it is not."""
    pdef = defs.resolve_asset_graph().get(key).partitions_def
    if isinstance(pdef, MultiPartitionsDefinition):
        [pdef] = [d.partitions_def for d in pdef.partitions_defs if d.name == "pool"] or [None]
    if not isinstance(pdef, StaticPartitionsDefinition) or not set(pdef.get_partition_keys()) <= set(POOLS):
        return None
    return pdef.get_partition_keys()


def _voice_target(target_id: str, asr: str | None) -> dict:
    return {
        "id": target_id,
        "provider": "embedded",
        "model": "reflective",
        "family": "eyt-baseline-target",
        "benchmarks": ["eyt_voice"],
        "speech_input": "cascaded",
        "cascade": {"cues": "emo_des", **({"asr_model_path": asr} if asr else {})},
    }


@pytest.mark.unit
def test_every_pool_partitioned_asset_check_and_source_has_the_slate_pools_only(monkeypatch):
    monkeypatch.delenv("EYT_SLATE", raising=False)
    defs = _defs(default_slate_path())
    slate_pools = list(load_slate(default_slate_path()).pools)
    assert slate_pools == ["nemotron_usa", "personamem_v2"] and set(slate_pools) < set(POOLS)
    graph = defs.resolve_asset_graph()
    keyed_by_pool = [node.key for node in graph.asset_nodes if _pools(defs, node.key) is not None]
    assert {"dialogue/persona_pool", "dialogue/pool_settings", "dialogue/dialogue_turns", "voice/voiced_turns"} <= {
        k.to_user_string() for k in keyed_by_pool
    }
    for key in keyed_by_pool:
        assert _pools(defs, key) == slate_pools, key
    # each partitioned check has its asset's partitions (Dagster refuses another definition)
    checks = [k for k in graph.asset_check_keys if graph.get(k.asset_key).partitions_def is not None]
    assert len(checks) >= 7
    for check_key in checks:
        assert graph.get_check_spec(check_key).partitions_def == graph.get(check_key.asset_key).partitions_def


@pytest.mark.unit
def test_the_voice_cells_are_the_pools_a_voice_target_hears(tmp_path):
    english_only = [_voice_target("hears-english", PACKAGED_ASR)]
    pools = {"nemotron_usa": {"source": "fixture"}, "cped": {"source": "fixture"}}
    (tmp_path / "a").mkdir()
    defs = _defs(write_slate(tmp_path / "a", pools=pools, targets=english_only))
    # no voice target hears Chinese: the Chinese pool has EYT-Bench cells, no voice cell
    assert _pools(defs, TURNS) == ["nemotron_usa", "cped"] and _pools(defs, VOICED) == ["nemotron_usa"]
    graph = defs.resolve_asset_graph()
    assert "Not played" not in (graph.get(VOICED).description or "")

    # one voice target hears Chinese: the other's Chinese cell is a partition it never plays, and the UI says so
    (tmp_path / "b").mkdir()
    both = [*english_only, _voice_target("hears-chinese", None)]
    defs = _defs(write_slate(tmp_path / "b", pools=pools, targets=both))
    assert _pools(defs, VOICED) == ["nemotron_usa", "cped"]
    graph = defs.resolve_asset_graph()
    voice_nodes = [n for n in graph.asset_nodes if n.key.path[0] == "voice" and _pools(defs, n.key) is not None]
    assert len(voice_nodes) > 3  # every asset of a voice cell
    for node in voice_nodes:
        assert "Not played by this slate, so shown as missing for good: cped|hears-english" in (node.description or "")
    assert "Not played" not in (graph.get(TURNS).description or "")


@pytest.mark.materialisation
def test_after_a_run_of_every_cell_the_instance_reports_no_missing_partition(tmp_path):
    # two targets on one pool: the other two known pools are not the slate's
    slate_yaml = write_slate(
        tmp_path,
        pools={"nemotron_usa": {"source": "fixture"}},
        targets=[
            t
            for t in load_slate(default_slate_path()).model_dump(mode="json", exclude_none=True)["targets"]
            if t["id"] in ("reflective-baseline", "terse-baseline")
        ],
        dialogues_per_pool=2,
        t_max=4,
    )
    data = tmp_path / "data"
    data.mkdir()
    instance = DagsterInstance.ephemeral()
    materialize_dialogues(slate_yaml, data, instance)
    defs = _defs(slate_yaml)
    graph = defs.resolve_asset_graph()
    played = {"nemotron_usa|reflective-baseline", "nemotron_usa|terse-baseline"}
    for selection, cells in ((POOL_ASSETS, {"nemotron_usa"}), (DIALOGUE_ASSETS, played)):
        for key in selection.resolve(graph):
            pdef = graph.get(key).partitions_def
            assert pdef is not None
            partitions = set(pdef.get_partition_keys(dynamic_partitions_store=instance))
            done = instance.get_materialized_partitions(key)
            assert partitions == cells and done == cells, (key, partitions, done)

    # the assets as written (every known pool) would count the cells of the two other pools as missing
    from eyt_dagster.definitions import BASE_ASSETS

    [written] = [a for a in BASE_ASSETS if TURNS in a.keys]
    keys = set(written.partitions_def.get_partition_keys(dynamic_partitions_store=instance))
    assert instance.get_dynamic_partitions(TARGETS_PARTITION) == ["reflective-baseline", "terse-baseline"]
    assert keys - instance.get_materialized_partitions(TURNS) == {
        f"{pool}|{target}"
        for pool in POOLS
        if pool != "nemotron_usa"
        for target in ("reflective-baseline", "terse-baseline")
    }
