"""`eyt plan` checked against a run on the localhost server: two remote targets of the same shape, where after target
A's cell has run the plan of target B predicts the calls and tokens that playing B then records in the ledger; and a
remote SpeechEQ text model, where after one subscale is built the plan of another predicts its build."""

import hashlib
import json

import pytest
from dagster import AssetKey, AssetSelection, DagsterInstance, materialize

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
from support.speech_play import SpeechPlay

pytestmark = pytest.mark.materialisation

POOL = "nemotron_usa"
TOLERANCE = 0.25
SUBSCALE_A, SUBSCALE_B = "interpersonal_empathy", "stress_management_optimism"
SPEECH_TEXT_ASSETS = AssetSelection.assets(
    *[AssetKey(["speech", n]) for n in ("scenarios", "dialogues", "tone_instructions", "tone_selection")]
)


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


class SignedScenarios(SpeechPlay):
    """SpeechPlay with each scenario's title and dialogue lines signed with the request that asked for them: the
    scenarios differ, as a model's would, so no request of one scenario repeats another's (a cache hit the plan
    would still count)."""

    def __call__(self, request):
        reply = super().__call__(request)
        system = next(m["content"] for m in request["messages"] if m["role"] == "system")
        key = next(k for k, opening in self.openings.items() if system.startswith(opening))
        sign = hashlib.sha256(json.dumps(request["messages"], sort_keys=True).encode()).hexdigest()[:8]
        if key == "speech_scenario":
            scenario = json.loads(reply)
            return json.dumps({**scenario, "title": f"{scenario['title']} ({sign})"})
        if key == "speech_dialogue":
            lines = json.loads(reply)["lines"]
            return json.dumps({"lines": [{**line, "text": f"{line['text']} ({sign})"} for line in lines]})
        return reply


def _build(slate, data, subscale):
    result = materialize(
        ASSETS,
        selection=SPEECH_TEXT_ASSETS,
        partition_key=subscale,
        resources=resources_for(slate, data),
        instance=DagsterInstance.ephemeral(),
    )
    assert result.success


def test_plan_of_a_subscale_predicts_what_building_it_records(tmp_path, monkeypatch, capsys):
    """A remote SpeechEQ generator (also validator and tone judge): after one subscale is built, the plan of another
    (from the ledger's history of the first) predicts the calls and tokens its build then records."""
    with serve(SignedScenarios()) as server:
        monkeypatch.setenv("EYT_TEST_KEY", KEY)
        model = remote(
            "speech-llm", server.base_url, family="stub", max_retries=0, price_in_per_mtok=1.0, **STUB_ENDPOINT
        )
        slate = write_slate(tmp_path, speech={"generator": "speech-llm", "max_tone_attempts": 3, "models": [model]})
        data = tmp_path / "data"
        data.mkdir()
        monkeypatch.setenv("EYT_DATA_DIR", str(data))
        monkeypatch.setenv("EYT_SLATE", str(slate))
        monkeypatch.delenv("DAGSTER_HOME", raising=False)
        out = tmp_path / "plan.json"

        # no history yet: the rendered prompts, 3 scenarios (one per valence) x 15 calls each
        assert cli.main(["plan", "--subscale", SUBSCALE_B, "--json", str(out)]) == 0
        rendered = _speech_lines(json.loads(out.read_text()))
        assert {role: line["calls"]["mid"] for role, line in rendered.items()} == {
            "speech_generator": 3 * (1 + 1 + 10),
            "speech_validator": 3 * 1,
            "speech_tone_judge": 3 * 2,
        }
        assert all(line["sources"] == ["rendered"] for line in rendered.values())

        _build(slate, data, SUBSCALE_A)
        before = len(_ledger(data))
        assert cli.main(["plan", "--subscale", SUBSCALE_B, "--json", str(out)]) == 0
        printed = capsys.readouterr().out
        print(printed)
        assert len(_ledger(data)) == before
        plan = _speech_lines(json.loads(out.read_text()))
        assert all(line["sources"] == ["history"] and line["dialogues"] == 3 for line in plan.values())

        _build(slate, data, SUBSCALE_B)
        played = [row for row in _ledger(data)[before:] if not row["cached"]]
        # the first subscale's build met SpeechPlay's scripted re-ask, rejected dialogue and bland tone once each,
        # the second's none: each role's figure is at most a call per scenario above what it records
        for role, line in plan.items():
            rows = [row for row in played if row["role"] == role]
            tokens = sum(row["tokens_in"] + row["tokens_out"] for row in rows)
            print(
                f"{role}: calls {line['calls']['mid']:.1f} vs {len(rows)} recorded; tokens "
                f"{line['tokens_in']['mid'] + line['tokens_out']['mid']:.0f} vs {tokens}"
            )
            assert len(rows) <= line["calls"]["mid"] <= len(rows) + 3
        predicted_calls = sum(line["calls"]["mid"] for line in plan.values())
        predicted_tokens = sum(line["tokens_in"]["mid"] + line["tokens_out"]["mid"] for line in plan.values())
        actual_tokens = sum(row["tokens_in"] + row["tokens_out"] for row in played)
        print(
            f"speech build of {SUBSCALE_B}: calls {predicted_calls:.0f} vs {len(played)} recorded; tokens "
            f"{predicted_tokens:.0f} vs {actual_tokens} recorded"
        )
        assert predicted_calls == pytest.approx(len(played), rel=TOLERANCE)
        assert predicted_tokens == pytest.approx(actual_tokens, rel=TOLERANCE)
        generator = plan["speech_generator"]
        generator_rows = [row for row in played if row["role"] == "speech_generator"]
        assert generator["usd"]["mid"] == pytest.approx(
            sum(r["tokens_in"] for r in generator_rows) / 1e6, rel=TOLERANCE
        )

        # built: the subscale's scenarios are in the warehouse with today's model and prompts, so it costs nothing
        assert cli.main(["plan", "--subscale", SUBSCALE_B, "--json", str(out)]) == 0
        again = json.loads(out.read_text())
        assert again["total"]["calls"]["high"] == 0
        assert set(again["scenarios_built"][SUBSCALE_B].values()) == {3}


def _speech_lines(plan):
    return {line["role"]: line for line in plan["lines"] if line["role"].startswith("speech_")}
