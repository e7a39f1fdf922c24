"""Spend caps on a real run: remote models on the localhost server, a slate `budget` that stops a cell part-way
(no call past the cap but those in flight, the cell stopped by budget rather than failed), then a higher cap under
which a rerun finishes the cell from the cache; and `--max-cost`'s refusals at the command line."""

import pytest
from dagster import AssetKey, DagsterInstance, Definitions, materialize, partition_loading_context

from assets.eyt_bench.partitions import TARGETS_PARTITION, target_pool_key
from eyt_dagster import staleness
from eyt_dagster.definitions import ASSETS
from eyt_dagster.eyt_bench.table_checks import enough_finished_dialogues
from eyt_dagster.jobs import DIALOGUE_ASSETS, POOL_ASSETS
from eyt_dagster.ops import cli
from resources.models.cache_backend import CALL_CACHE_FILE
from resources.models.call_cache import CallCache
from resources.storage.warehouse import WAREHOUSE_FILE

from support.localhost_server import serve
from support.pipeline import resources_for
from support.role_play import RolePlay
from support.slates import KEY, STUB_ENDPOINT, remote, write_slate

pytestmark = pytest.mark.materialisation

POOL = "nemotron_usa"
PRICED = {**STUB_ENDPOINT, "price_in_per_mtok": 2.0, "price_out_per_mtok": 8.0}


def _slate(tmp_path, base_url, **extra):
    return write_slate(
        tmp_path,
        pools={POOL: {"source": "fixture"}},
        dialogues_per_pool=4,
        t_max=4,
        simulator=remote("sim-model", base_url, family="fam-sim", **PRICED),
        targets=[remote("model-a", base_url, family="fam-target", **PRICED)],
        judges=[remote("judge-model", base_url, family="fam-judge", **PRICED)],
        **extra,
    )


def _network_calls(data):
    with CallCache(data / CALL_CACHE_FILE) as cache:
        return [row for row in cache.ledger() if not row["cached"]]


def _turns(data):
    import duckdb

    with duckdb.connect(str(data / WAREHOUSE_FILE), read_only=True) as con:
        return con.execute("SELECT * FROM dialogue.dialogue_turns").df()


def test_a_slate_budget_stops_the_cell_and_a_higher_cap_finishes_it_from_the_cache(tmp_path, monkeypatch):
    with serve(RolePlay()) as server:
        monkeypatch.setenv("EYT_TEST_KEY", KEY)
        data = tmp_path / "data"
        data.mkdir()
        monkeypatch.setenv("EYT_DATA_DIR", str(data))
        monkeypatch.delenv("DAGSTER_HOME", raising=False)
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions(TARGETS_PARTITION, ["model-a"])
        slate = _slate(tmp_path, server.base_url)
        materialize(
            ASSETS, selection=POOL_ASSETS, partition_key=POOL, resources=resources_for(slate, data), instance=instance
        )
        before = len(_network_calls(data))
        allowed = 12  # calls left for the cell's dialogues: a few turns of the four
        slate = _slate(tmp_path, server.base_url, budget={"max_calls": before + allowed})
        cell = str(target_pool_key("model-a", POOL))
        result = materialize(
            ASSETS,
            selection=DIALOGUE_ASSETS,
            partition_key=cell,
            resources=resources_for(slate, data),
            instance=instance,
            raise_on_error=False,
        )
        made = len(_network_calls(data)) - before
        in_flight = 3 * STUB_ENDPOINT["max_concurrency"]  # the simulator's, the target's and the judge's budgets
        print(f"cap allowed {allowed} more calls; {made} were made")
        assert allowed <= made <= allowed + in_flight

        turns = _turns(data)
        stopped = turns[turns["error_kind"] == "budget"]
        assert len(stopped) and stopped["error"].str.contains("stopped by budget").all()
        assert set(turns.loc[turns["error"].notna(), "error_kind"]) == {"budget"}  # nothing failed
        assert result.success
        check = enough_finished_dialogues(turns, max_fraction=0.1)
        assert check.passed and "stopped by budget" in check.description  # stopped by budget is not failed
        failure = staleness.Latest(instance, attempts_per_day=1).failure(AssetKey(["dialogue", "dialogue_turns"]), cell)
        assert failure is not None and failure.budget and "stopped by budget" in failure.reason
        assert failure.attempts_today == 1 and failure.last_attempt > 0  # the daemon spaces its retries by these
        # attempts_per_day 1 is used up, yet a budget stop is never given up on: it stays FAILED, to be run again
        latest = staleness.Latest(instance, attempts_per_day=1)
        graph = Definitions(assets=ASSETS, resources=resources_for(slate, data)).resolve_asset_graph()
        with partition_loading_context(dynamic_partitions_store=instance):
            state = staleness.state(graph, latest, AssetKey(["dialogue", "dialogue_turns"]), cell)
        assert state.status == staleness.FAILED and "stopped by budget" in state.causes[0]["reason"]

        # a higher cap: the rerun carries on, every answered call from the cache
        answered = len(server.chat_requests)
        slate = _slate(tmp_path, server.base_url, budget={"max_calls": 10_000})
        materialize(
            ASSETS,
            selection=DIALOGUE_ASSETS,
            partition_key=cell,
            resources=resources_for(slate, data),
            instance=instance,
        )
        turns = _turns(data)
        assert turns["error"].isna().all() and turns["seed_id"].nunique() == 4
        rerun = _network_calls(data)[before + made :]
        assert len(rerun) == len(server.chat_requests) - answered  # only what was missing went out
        assert (
            staleness.Latest(instance, attempts_per_day=1).failure(AssetKey(["dialogue", "dialogue_turns"]), cell)
            is None
        )


def test_max_cost_is_refused_when_zero_or_when_a_remote_model_has_no_price(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EYT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    priced = _slate(tmp_path, "http://127.0.0.1:9/v1")
    monkeypatch.setenv("EYT_SLATE", str(priced))
    for bad in ("0", "-1", "nan", "ten"):
        with pytest.raises(SystemExit) as exit:
            cli.main(["run", "--no-speech", "--max-cost", bad])
        assert exit.value.code == 2
        err = capsys.readouterr().err
        assert "--max-cost" in err and ("must be a positive amount" in err or "not an amount" in err)

    unpriced = write_slate(
        tmp_path,
        pools={POOL: {"source": "fixture"}},
        targets=[remote("model-a", "http://127.0.0.1:9/v1", family="fam-target", **STUB_ENDPOINT)],
    )
    monkeypatch.setenv("EYT_SLATE", str(unpriced))
    assert cli.main(["run", "--no-speech", "--max-cost", "5"]) == 2
    err = capsys.readouterr().err
    assert "model 'model-a' has no prices" in err and "--max-cost" in err
