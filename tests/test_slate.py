"""Slate files: what a user gets back when one is wrong."""

import pytest
import yaml

from eyt_dagster.slate import SlateError, load_slate

from support.slates import write_slate

pytestmark = pytest.mark.unit


def slate_error(path) -> str:
    """The message of the SlateError that loading `path` raises."""
    with pytest.raises(SlateError) as info:
        load_slate(path)
    return str(info.value)


def test_default_slate_is_embedded_baselines_only():
    slate = load_slate()
    assert slate.seed == 20260521 and slate.t_max == 10 and slate.alpha == 0.10 and slate.dialogues_per_pool == 100
    assert all(m.is_baseline for m in [slate.simulator, *slate.targets, *slate.judges])
    assert len(slate.targets) >= 2 and set(slate.pools) == {"nemotron_usa", "personamem_v2"}


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"t_max": "ten"}, "t_max: Input should be a valid integer"),
        ({"alpha": 0.7}, "alpha: Input should be less than 0.5"),
        ({"pools": {"wikipedia": {"source": "fixture"}}}, "unknown pool(s) ['wikipedia']"),
        ({"targets": []}, "targets: List should have at least 1 item"),
        ({"judge_scale": "five_point"}, "judge_scale: Input should be 'three_point' or 'binary'"),
        ({"dialogue_per_pool": 3}, "dialogue_per_pool: Extra inputs are not permitted"),
    ],
)
def test_invalid_slate_names_the_file_and_field(tmp_path, override, expected):
    path = write_slate(tmp_path, **override)
    with pytest.raises(SlateError) as err:
        load_slate(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_target_field_errors_point_at_the_target(tmp_path):
    slate = yaml.safe_load(write_slate(tmp_path).read_text())
    slate["targets"][1]["temperature"] = 5
    slate["targets"][0]["id"] = "bad|id"
    (tmp_path / "slate.yaml").write_text(yaml.safe_dump(slate))
    message = slate_error(tmp_path / "slate.yaml")
    assert "targets.1.temperature" in message and "targets.0.id" in message and "partition key" in message


def test_remote_model_needs_an_endpoint(tmp_path):
    remote = {"id": "gpt", "provider": "openai", "model": "gpt-4o-mini", "family": "openai"}
    message = slate_error(write_slate(tmp_path, targets=[remote]))
    assert "needs base_url" in message


def test_target_of_the_judge_family_is_refused_unless_allowed(tmp_path):
    same = {"id": "rubric-twin", "provider": "embedded", "model": "reflective", "family": "eyt-baseline-judge"}
    message = slate_error(write_slate(tmp_path, targets=[same]))
    assert "self-preference" in message and "allow_same_family" in message
    slate = load_slate(write_slate(tmp_path, targets=[same], allow_same_family=True))
    assert slate.self_preference_risk("rubric-twin")


def test_missing_and_malformed_files(tmp_path):
    assert "does not exist" in slate_error(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets: [unclosed")
    assert "not valid YAML" in slate_error(bad)


def test_targets_say_which_benchmarks_they_run():
    slate = load_slate()
    assert [t.id for t in slate.eyt_targets] == ["reflective-baseline", "reflective-baseline-think", "terse-baseline"]
    assert [t.id for t in slate.speech_targets] == [
        "random-chooser-baseline",
        "acoustic-chooser-baseline",
        "calmer-chooser-baseline",
        "livelier-chooser-baseline",
    ]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ({"id": "x", "model": "random-chooser", "family": "f"}, "embedded model 'random-chooser' cannot run eyt_bench"),
        (
            {"id": "x", "model": "reflective", "family": "f", "benchmarks": ["speech_eq"]},
            "embedded model 'reflective' cannot run speech_eq",
        ),
        ({"id": "x", "model": "m", "family": "f", "benchmarks": ["speech_eq", "speech_eq"]}, "repeats a benchmark"),
        ({"id": "x", "model": "m", "family": "f", "benchmarks": ["asr"]}, "benchmarks.0: Input should be"),
        (
            {
                "id": "x",
                "provider": "openai",
                "base_url": "http://h/v1",
                "model": "m",
                "family": "f",
                "benchmarks": ["speech_eq"],
                "speech_input": "video",
            },
            "speech_input: Input should be",
        ),
    ],
)
def test_bad_speech_target_names_the_problem(tmp_path, target, expected):
    slate = yaml.safe_load(write_slate(tmp_path).read_text())
    target.setdefault("provider", "embedded")
    slate["targets"].append(target)
    (tmp_path / "slate.yaml").write_text(yaml.safe_dump(slate))
    assert expected in slate_error(tmp_path / "slate.yaml")


def test_unknown_persona_condition_lists_the_known_ones(tmp_path):
    path = write_slate(tmp_path, speech={"evaluation": {"conditions": ["default", "grumpy"]}})
    message = slate_error(path)
    assert "speech.evaluation.conditions" in message and "deficit_stress_management" in message


REMOTE = {"id": "gpt", "provider": "openai", "model": "gpt-4o-mini", "family": "openai", "base_url": "http://h/v1"}


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"budget": {"max_cost_usd": 0}}, "budget.max_cost_usd: Input should be greater than 0"),
        ({"budget": {"max_calls": -1}}, "budget.max_calls: Input should be greater than 0"),
        (
            {"budget": {"max_cost_usd": 5}, "targets": [REMOTE]},
            "model 'gpt' has no prices (price_in_per_mtok, price_out_per_mtok are 0) but the slate's "
            "budget.max_cost_usd caps it in USD",
        ),
        (
            {"targets": [{**REMOTE, "budget": {"max_cost_usd": 1}}]},
            "model 'gpt' has no prices (price_in_per_mtok, price_out_per_mtok are 0) but its budget.max_cost_usd",
        ),
    ],
)
def test_a_spend_cap_of_zero_or_over_an_unpriced_remote_model_is_refused_at_load(tmp_path, override, expected):
    message = slate_error(write_slate(tmp_path, **override))
    assert expected in message


def test_caps_by_calls_need_no_prices_and_the_budget_collects_every_cap(tmp_path):
    priced = {**REMOTE, "id": "priced", "price_in_per_mtok": 1.0, "budget": {"max_cost_usd": 2}}
    slate = load_slate(
        write_slate(tmp_path, budget={"max_calls": 500}, targets=[{**REMOTE, "budget": {"max_calls": 9}}, priced])
    )
    budget = slate.spend_budget()
    assert budget.slate_cap is not None and budget.slate_cap.max_calls == 500
    assert {k: v.model_dump() for k, v in budget.model_caps.items()} == {
        "gpt": {"max_cost_usd": None, "max_calls": 9},
        "priced": {"max_cost_usd": 2.0, "max_calls": None},
    }
    assert {"gpt", "priced", slate.simulator.id, *(j.id for j in slate.judges)} <= budget.slate_models
    # a cap says nothing of what a model answers: its settings (and so its results' freshness) are unchanged
    assert "budget" not in slate.target("gpt").answer_settings()
