"""Estimated against actual cost (eyt_dagster/core/cost_actual.py), on hand-made plan lines and ledger rows."""

import pytest

from eyt_dagster.core.cost_actual import actual_by_role, comparison_rows

pytestmark = pytest.mark.unit


def _row(i, model, role, cached=False, tokens=(10, 5), usd=0.001):
    return {
        "id": i,
        "model_id": model,
        "role": role,
        "cached": cached,
        "tokens_in": tokens[0],
        "tokens_out": tokens[1],
        "cost_usd": usd,
    }


def _line(model, role, calls, usd, embedded=False):
    figure = {"mid": calls, "low": calls / 2, "high": calls * 2}
    return {
        "model": model,
        "role": role,
        "embedded": embedded,
        "calls": figure,
        "tokens_in": {"mid": 100.0, "low": 50.0, "high": 200.0},
        "tokens_out": {"mid": 20.0, "low": 10.0, "high": 40.0},
        "usd": usd,
    }


def test_only_network_calls_after_the_estimate_count():
    ledger = [
        _row(1, "gpt", "target"),  # before the estimate
        _row(2, "gpt", "target"),
        _row(3, "gpt", "target", cached=True),  # free
        _row(4, "gpt", "target", usd=0.002),
        _row(5, "sim", "simulator", usd=0.0),
    ]
    assert actual_by_role(ledger, after_id=1) == {
        ("gpt", "target"): {"calls": 2, "tokens": 30, "usd": pytest.approx(0.003)},
        ("sim", "simulator"): {"calls": 1, "tokens": 15, "usd": 0.0},
    }


def test_rows_put_each_estimate_beside_what_happened():
    lines = [
        _line("gpt", "target", 4.0, {"mid": 0.004, "low": 0.002, "high": 0.008}),
        _line("sim", "simulator", 10.0, "unpriced"),
        _line("rule", "judge", 0.0, {"mid": 0.0, "low": 0.0, "high": 0.0}, embedded=True),
    ]
    actual = {
        ("gpt", "target"): {"calls": 3.0, "tokens": 45.0, "usd": 0.009},
        ("gen", "speech_generator"): {"calls": 2.0, "tokens": 9.0, "usd": 0.0},
    }
    rows = {(r["model"], r["role"]): r for r in comparison_rows(lines, actual, priced={"gen"})}
    assert set(rows) == {("gpt", "target"), ("sim", "simulator"), ("gen", "speech_generator")}  # no embedded line
    gpt = rows[("gpt", "target")]
    assert (gpt["est_calls"], gpt["actual_calls"], gpt["est_tokens"], gpt["actual_tokens"]) == (4.0, 3.0, 120.0, 45.0)
    assert gpt["calls_in_range"] is True and gpt["usd_in_range"] is False  # $0.009 above the $0.008 high end
    sim = rows[("sim", "simulator")]
    assert sim["actual_calls"] == 0.0 and sim["est_usd"] is None and sim["actual_usd"] is None  # unpriced: no $0
    assert sim["calls_in_range"] is False
    unforeseen = rows[("gen", "speech_generator")]
    assert unforeseen["est_calls"] is None and unforeseen["actual_calls"] == 2.0 and unforeseen["actual_usd"] == 0.0
    unpriced = comparison_rows([], actual)[0]  # the same calls of a model with no price in the slate
    assert unpriced["model"] == "gen" and unpriced["actual_usd"] is None
