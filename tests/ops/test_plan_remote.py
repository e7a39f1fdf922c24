"""`eyt plan` checked against a run on the localhost server: two remote targets of the same shape, where after target
A's cell has run the plan of target B predicts the calls and tokens that playing B then records in the ledger; a
remote SpeechEQ text model, where after one subscale is built the plan of another predicts its build; and
`eyt plan --refresh` on an instance on disk, which counts what `eyt refresh` would play again after a target's or a
judge's settings changed, and writes nothing to the instance."""

import argparse
import hashlib
import json

import pytest
from dagster import AssetKey, AssetRecordsFilter, AssetSelection, DagsterInstance, materialize

from assets.eyt_bench.partitions import TARGETS_PARTITION, target_pool_key
from eyt_dagster.core.cost_actual import ESTIMATE_FILE
from eyt_dagster.definitions import ASSETS, assets_for, build_defs
from eyt_dagster.jobs import DIALOGUE_ASSETS, POOL_ASSETS
from eyt_dagster.ops import cli
from eyt_dagster.ops.plan_refresh import read_findings
from eyt_dagster.ops.refresh import refresh, slate_keys
from eyt_dagster.slate import load_slate
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


def _targets_observed(instance):
    return len(
        instance.fetch_observations(
            AssetRecordsFilter(asset_key=AssetKey(["dialogue", "target_settings"])), limit=100
        ).records
    )


def _written(instance):
    """What the instance holds that a command could add to: its newest event, its runs, its target partitions."""
    return (
        instance.event_log_storage.get_maximum_record_id(),
        len(instance.get_run_records()),
        instance.get_dynamic_partitions(TARGETS_PARTITION),
    )


def _refresh_plan(out):
    assert cli.main(["plan", "--refresh", "--no-speech", "--json", str(out)]) == 0
    plan = json.loads(out.read_text())
    return plan, {(line["model"], line["role"]): line for line in plan["lines"]}


def test_plan_refresh_counts_what_refresh_would_play_again(tmp_path, monkeypatch, capsys):
    """`eyt plan --refresh` on an instance whose two cells are played: nothing to do while everything is fresh; after
    a target's settings change its cell's dialogues, all of them, to play again (its requests change), the other
    cell's none; after a judge's settings change both cells' dialogues to judge again, none to play. It records
    nothing in the instance, and `eyt refresh --dry-run` (which records the settings) then lists the same cell."""
    with serve(SignedReplies()) as server:
        monkeypatch.setenv("EYT_TEST_KEY", KEY)
        target = {"family": "fam-target", **STUB_ENDPOINT, "price_in_per_mtok": 2.0, "price_out_per_mtok": 8.0}
        raw = {
            "pools": {POOL: {"source": "fixture"}},
            "dialogues_per_pool": 2,
            "t_max": 3,
            "simulator": remote("sim-model", server.base_url, family="fam-sim", **STUB_ENDPOINT),
            "targets": [remote("model-a", server.base_url, **target), remote("model-b", server.base_url, **target)],
            "judges": [remote("judge-model", server.base_url, family="fam-judge", **STUB_ENDPOINT)],
        }
        slate = write_slate(tmp_path, **raw)
        data, home = tmp_path / "data", tmp_path / "dagster_home"
        data.mkdir()
        home.mkdir()
        monkeypatch.setenv("EYT_DATA_DIR", str(data))
        monkeypatch.setenv("EYT_SLATE", str(slate))
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        instance = DagsterInstance.from_config(str(home))
        instance.add_dynamic_partitions(TARGETS_PARTITION, ["model-a", "model-b"])
        assets, resources = assets_for(load_slate(slate)), resources_for(slate, data)
        materialize(assets, selection=POOL_ASSETS, partition_key=POOL, resources=resources, instance=instance)
        for model in ("model-a", "model-b"):
            key = str(target_pool_key(model, POOL))
            materialize(assets, selection=DIALOGUE_ASSETS, partition_key=key, resources=resources, instance=instance)
        played_a = [r for r in _ledger(data) if r["model_id"] == "model-a" and not r["cached"]]
        out = tmp_path / "plan.json"
        observed, written = _targets_observed(instance), _written(instance)

        fresh, _ = _refresh_plan(out)
        assert fresh["command"] == "refresh" and fresh["total"]["calls"]["high"] == 0
        assert fresh["played"] == {f"model-a|{POOL}": 2, f"model-b|{POOL}": 2}

        raw["judges"][0]["temperature"] = 0.5  # only the verdicts change: every played dialogue is judged again
        write_slate(tmp_path, **raw)
        rejudged, lines = _refresh_plan(out)
        assert rejudged["played"] == {f"model-a|{POOL}": 2, f"model-b|{POOL}": 2}
        assert rejudged["rejudge"] == {
            f"model-a|{POOL}": {"judge_turn": 2, "judge_final": 2},
            f"model-b|{POOL}": {"judge_turn": 2, "judge_final": 2},
        }
        judge = lines[("judge-model", "judge")]
        judged = [r for r in _ledger(data) if r["model_id"] == "judge-model" and not r["cached"]]
        assert judge["dialogues"] == 4 and judge["calls"]["mid"] == len(judged)  # the two cells' verdicts, again
        assert lines[("model-a", "target")]["calls"]["high"] == lines[("sim-model", "simulator")]["calls"]["high"] == 0

        raw["judges"][0].pop("temperature")
        raw["targets"][0]["temperature"] = 0.7  # model-a's replies change: its cell is stale
        write_slate(tmp_path, **raw)
        stale, lines = _refresh_plan(out)
        print(capsys.readouterr().out)
        assert stale["played"] == {f"model-a|{POOL}": 0, f"model-b|{POOL}": 2} and stale["rejudge"] == {}
        assert lines[("model-a", "target")]["dialogues"] == 2 and lines[("model-b", "target")]["dialogues"] == 0
        assert lines[("sim-model", "simulator")]["dialogues"] == 2 and lines[("judge-model", "judge")]["dialogues"] == 2
        # from the history of the two played cells (the stub's dialogues are alike): what model-a's cell once cost
        assert lines[("model-a", "target")]["calls"]["mid"] == len(played_a)
        assert _written(instance) == written  # three plans read the instance and wrote nothing to it

        # `eyt refresh --dry-run` records the new settings and lists the same cell; the plan then reads the same
        current = load_slate(slate)
        include = lambda asset: not asset.startswith(("speech/", "voice/"))  # noqa: E731  # as --no-speech
        assert (
            refresh(instance, include, slate_keys(current), dry_run=True, slate=current, defs=build_defs(str(slate)))
            == 0
        )
        listed = capsys.readouterr().out
        assert f"{POOL}|model-a" in listed and f"{POOL}|model-b" not in listed
        assert "target model-a settings changed: temperature" in listed
        assert _targets_observed(instance) == observed + 1
        assert _refresh_plan(out)[0]["played"] == stale["played"]

        # what `eyt refresh` keeps, before its runs, for reports/run_costs: the same plan, after the ledger's last row
        found = read_findings(instance, current, include, build_defs(str(slate)))
        cli._save_refresh_estimate(current, argparse.Namespace(no_speech=True), found.findings)
        kept = json.loads((data / ESTIMATE_FILE).read_text())
        assert kept["command"] == "refresh" and kept["played"] == stale["played"]
        assert kept["ledger_last_id"] == max(row["id"] for row in _ledger(data))
        instance.dispose()
