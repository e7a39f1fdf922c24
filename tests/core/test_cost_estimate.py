"""The arithmetic of `eyt plan` (eyt_dagster/core/cost_estimate.py) on hand-computed cases."""

import pytest

from eyt_dagster.core.cost_estimate import (
    RENDERED_COMPLETION_TOKENS,
    ZERO,
    Figure,
    Line,
    PerDialogue,
    approx_tokens,
    band,
    fmt,
    per_dialogue_history,
    per_dialogue_rendered,
    per_item_history,
    per_run_history,
    usd,
    wall_time,
)

pytestmark = pytest.mark.unit


def _row(role, purpose, tokens_in, tokens_out, *, run="r1", model="m", latency=1.0, cached=False, reasoning=0):
    return {
        "role": role,
        "model_id": model,
        "purpose": purpose,
        "run_id": run,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "reasoning_tokens": reasoning,
        "latency_s": latency,
        "cached": cached,
    }


def test_three_dialogues_of_history_give_the_mean_and_range_per_dialogue():
    # three dialogues of 2, 3 and 4 simulator turns, 100 prompt tokens and 10 completion tokens a call
    rows = [
        _row("simulator", f"simulate:pool:seed-{d}:{t}", 100, 10)
        for d, turns in enumerate((2, 3, 4))
        for t in range(1, turns + 1)
    ]
    per = per_dialogue_history(rows)[("simulator", "simulate")]
    assert per.units == 3 and per.source == "history"
    assert per.calls == Figure(3.0, 2.0, 4.0)  # 9 calls / 3 dialogues; the shortest and the longest dialogue
    assert per.tokens_in == Figure(300.0, 200.0, 400.0)
    assert per.tokens_out == Figure(30.0, 20.0, 40.0)
    assert per.latency_s == 1.0
    # times the 10 dialogues a plan would play
    assert per.calls.times(10) == Figure(30.0, 20.0, 40.0)
    assert per.tokens_in.times(10) == Figure(3000.0, 2000.0, 4000.0)


def test_calls_without_a_seed_count_a_run_and_its_first_replies():
    # run r1: 2 dialogues, 5 replies of 50 tokens in; run r2: 1 dialogue, 1 reply of 80 tokens in
    rows = [_row("target", f"respond:{t}", 50, 5, run="r1") for t in (1, 2, 3, 1, 2)]
    rows += [_row("target", "respond:1", 80, 8, run="r2", reasoning=4)]
    per = per_dialogue_history(rows)[("target", "respond")]
    assert per.units == 2
    assert per.calls == Figure(2.0, 1.0, 2.5)  # 6 calls / 3 dialogues; r2 1 per dialogue, r1 2.5
    assert per.tokens_in == Figure(330 / 3, 80.0, 125.0)
    assert per.reasoning_tokens == Figure(4 / 3, 0.0, 4.0)


def test_two_judges_of_one_dialogue_are_two_units_and_cached_calls_give_no_latency():
    rows = [
        _row("judge", "judge_final:seed-1", 10, 1, model="j1", latency=3.0),
        _row("judge", "judge_final:seed-1", 10, 1, model="j2", latency=0.0, cached=True),
    ]
    per = per_dialogue_history(rows)[("judge", "judge_final")]
    assert per.calls == Figure(1.0, 1.0, 1.0) and per.units == 2 and per.latency_s == 3.0


def test_rendered_prompt_estimate():
    assert approx_tokens("x" * 9) == 3  # ceil(9 / 4)
    per = per_dialogue_rendered("x" * 400, 10)
    assert per.source == "rendered" and per.units == 0
    assert per.calls == band(10) == Figure(10, 5, 15)
    assert per.tokens_in == Figure(1000, 500, 1500)
    assert per.tokens_out.mid == RENDERED_COMPLETION_TOKENS * 10


def test_usd_from_prices_and_unpriced():
    cost = usd(Figure(1e6, 5e5, 2e6), Figure(1e5, 1e5, 1e5), 2.0, 8.0)
    assert cost is not None
    assert (cost.mid, cost.low, cost.high) == pytest.approx((2.8, 1.8, 4.8))
    assert usd(Figure(1e6, 1e6, 1e6), Figure(0, 0, 0), 0.0, 0.0) is None
    line = Line("m", "target", "url", max_concurrency=1, dialogues=1, tokens_in=Figure(1e6, 1e6, 1e6))
    assert line.usd is None  # a remote model without prices: unpriced
    line.price_in = 3.0
    assert line.usd == Figure(3.0, 3.0, 3.0)
    assert Line("e", "target", "", max_concurrency=1, dialogues=1, embedded=True).usd == ZERO


def test_wall_time_is_the_slowest_endpoint_over_its_budget():
    a = Line("a", "target", "url a", max_concurrency=4, dialogues=0)
    a.add(PerDialogue(Figure(4, 2, 8), ZERO, ZERO, ZERO, latency_s=2.0, units=3, source="history"), 10)
    assert a.calls == Figure(40, 20, 80) and a.call_seconds == Figure(80, 40, 160)
    b = Line("b", "judge", "url b", max_concurrency=2, dialogues=1, call_seconds=Figure(10, 10, 10))
    b2 = Line("b2", "judge", "url b", max_concurrency=8, dialogues=1, call_seconds=Figure(10, 10, 10))
    embedded = Line("e", "simulator", "", max_concurrency=1, dialogues=1, embedded=True)
    whole, per = wall_time([a, b, b2, embedded])
    assert per == {"url a": Figure(20.0, 10.0, 40.0), "url b": Figure(10.0, 10.0, 10.0)}  # b's budget: the smaller
    assert whole == Figure(20.0, 10.0, 40.0)
    assert wall_time([embedded]) == (Figure(0.0, 0.0, 0.0), {})


def test_fmt():
    assert fmt(Figure(1234.4, 1000, 1500)) == "1,234 [1,000-1,500]"
    assert fmt(Figure(3, 3, 3)) == "3"


def test_a_speech_targets_runs_give_the_figures_of_one_evaluation():
    # two past evaluations (runs) of 4 and 6 calls, 100 prompt tokens a call
    rows = [_row("speech_target", "speech_eq_round1", 100, 2, run="r1", model="a") for _ in range(4)]
    rows += [_row("speech_target", "speech_eq_round2", 100, 2, run="r2", model="b") for _ in range(6)]
    per = per_run_history(rows)["speech_target"]
    assert per.units == 2
    assert per.calls == Figure(5.0, 4.0, 6.0)
    assert per.tokens_in == Figure(500.0, 400.0, 600.0)


def test_a_speech_build_is_counted_per_scenario_of_a_run_and_subscale():
    # run r1 built subscale a: two scenarios (one asked twice: a re-ask after an invalid reply), 21 tone calls and
    # three dialogue checks (one dialogue regenerated); run r2 built subscale b: one scenario, 10 tones, one check
    rows = [_row("speech_generator", f"speech_scenario:a:{v}:0", 100, 50, run="r1") for v in ("Pos", "Neg", "Neg")]
    rows += [_row("speech_generator", f"speech_tone:a:{t}:context:1", 10, 5, run="r1") for t in range(21)]
    rows += [_row("speech_validator", "speech_dialogue_check:a", 40, 4, run="r1", model="v") for _ in range(3)]
    rows += [_row("speech_generator", "speech_scenario:b:Pos:0", 120, 60, run="r2")]
    rows += [_row("speech_generator", f"speech_tone:b:{t}:context:1", 10, 5, run="r2") for t in range(10)]
    rows += [_row("speech_validator", "speech_dialogue_check:b", 40, 4, run="r2", model="v")]
    rows += [_row("speech_generator", "speech_tone:a:4:resonant:1", 10, 5, run="r3")]  # no scenario in r3: left out
    per = per_item_history(rows)
    scenario = per[("speech_generator", "speech_scenario")]
    # r1: 3 calls for 2 scenarios (1.5 each), r2: 1 for 1; pooled 4 calls / 3 scenarios
    assert scenario.units == 2 and scenario.calls == Figure(4 / 3, 1.0, 1.5)
    assert scenario.tokens_in == Figure(420 / 3, 120.0, 150.0)
    tone = per[("speech_generator", "speech_tone")]
    assert tone.calls == Figure(31 / 3, 10.0, 10.5) and tone.tokens_out == Figure(155 / 3, 50.0, 52.5)
    check = per[("speech_validator", "speech_dialogue_check")]  # the validator's rows count the generator's scenarios
    assert check.calls == Figure(4 / 3, 1.0, 1.5) and check.tokens_in == Figure(160 / 3, 40.0, 60.0)
    # times the 6 scenarios of a subscale to build
    assert tone.calls.times(6) == Figure(62.0, 60.0, 63.0)
