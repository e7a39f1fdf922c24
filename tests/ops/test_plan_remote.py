"""`eyt plan` checked against a run: on the localhost server, two remote targets of the same shape; after target A's
cell has run, the plan of target B predicts the calls and tokens that playing B then records in the ledger."""

import json

import pytest
from dagster import DagsterInstance, materialize

from assets.eyt_bench.partitions import TARGETS_PARTITION, target_pool_key
from eyt_dagster.definitions import ASSETS
from eyt_dagster.jobs import DIALOGUE_ASSETS, POOL_ASSETS
from eyt_dagster.ops import cli
from resources.models.cache_backend import CALL_CACHE_FILE
from resources.models.call_cache import CallCache

from support.localhost_server import serve
from support.pipeline import resources_for
from support.role_play import RolePlay
from support.slates import KEY, STUB_ENDPOINT, remote, write_slate

pytestmark = pytest.mark.materialisation

POOL = "nemotron_usa"
TOLERANCE = 0.25


class SignedReplies(RolePlay):
    """The role play, with each target's reply signed by its model: two targets of the same shape that answer
    differently, as two models do (so the simulator's and the judges' calls of B's dialogues are new ones)."""

    def __call__(self, request):
        reply = super().__call__(request)
        return f"{reply} ({request['model']})" if self.role_of(request) == "target" else reply


def _cell(slate, data, instance, target):
    materialize(
        ASSETS,
        selection=DIALOGUE_ASSETS,
        partition_key=str(target_pool_key(target, POOL)),
        resources=resources_for(slate, data),
        instance=instance,
    )


def _ledger(data):
    with CallCache(data / CALL_CACHE_FILE) as cache:
        return cache.ledger()


def test_plan_of_b_predicts_what_running_b_records(tmp_path, monkeypatch, capsys):
    with serve(SignedReplies()) as server:
        monkeypatch.setenv("EYT_TEST_KEY", KEY)
        target = {"family": "fam-target", **STUB_ENDPOINT, "price_in_per_mtok": 2.0, "price_out_per_mtok": 8.0}
        slate = write_slate(
            tmp_path,
            pools={POOL: {"source": "fixture"}},
            dialogues_per_pool=3,
            t_max=4,
            simulator=remote("sim-model", server.base_url, family="fam-sim", **STUB_ENDPOINT),
            targets=[remote("model-a", server.base_url, **target), remote("model-b", server.base_url, **target)],
            judges=[remote("judge-model", server.base_url, family="fam-judge", **STUB_ENDPOINT)],
        )
        data = tmp_path / "data"
        data.mkdir()
        monkeypatch.setenv("EYT_DATA_DIR", str(data))
        monkeypatch.setenv("EYT_SLATE", str(slate))
        monkeypatch.delenv("DAGSTER_HOME", raising=False)
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions(TARGETS_PARTITION, ["model-a", "model-b"])
        materialize(
            ASSETS, selection=POOL_ASSETS, partition_key=POOL, resources=resources_for(slate, data), instance=instance
        )
        _cell(slate, data, instance, "model-a")

        before = len(_ledger(data))
        requests = len(server.chat_requests)
        out = tmp_path / "plan.json"
        assert cli.main(["plan", "--target", "model-b", "--pool", POOL, "--no-speech", "--json", str(out)]) == 0
        printed = capsys.readouterr().out
        print(printed)
        assert len(server.chat_requests) == requests and len(_ledger(data)) == before  # no call, no ledger row
        plan = json.loads(out.read_text())
        assert "model-b" in printed and "unpriced" in printed  # the simulator and judge have no prices

        _cell(slate, data, instance, "model-b")
        played = [row for row in _ledger(data)[before:] if not row["cached"]]

        predicted_calls = plan["total"]["calls"]["mid"]
        predicted_tokens = sum(line["tokens_in"]["mid"] + line["tokens_out"]["mid"] for line in plan["lines"])
        actual_calls = len(played)
        actual_tokens = sum(row["tokens_in"] + row["tokens_out"] for row in played)
        print(
            f"plan of model-b: calls {predicted_calls:.1f} vs {actual_calls} recorded; "
            f"tokens {predicted_tokens:.0f} vs {actual_tokens} recorded"
        )
        assert actual_calls and predicted_calls == pytest.approx(actual_calls, rel=TOLERANCE)
        assert predicted_tokens == pytest.approx(actual_tokens, rel=TOLERANCE)
        b = next(line for line in plan["lines"] if line["model"] == "model-b")
        b_rows = [row for row in played if row["model_id"] == "model-b"]
        assert b["calls"]["mid"] == pytest.approx(len(b_rows), rel=TOLERANCE)
        assert b["usd"]["mid"] == pytest.approx(
            sum(row["tokens_in"] * 2.0 + row["tokens_out"] * 8.0 for row in b_rows) / 1e6, rel=TOLERANCE
        )
        assert plan["lines"][0]["sources"] == ["history"]

        # a rerun's plan: every dialogue of model-b is played, so it costs ~0
        assert cli.main(["plan", "--target", "model-b", "--pool", POOL, "--no-speech", "--json", str(out)]) == 0
        again = json.loads(out.read_text())
        assert again["total"]["calls"]["high"] == 0 and again["played"] == {f"model-b|{POOL}": 3}
