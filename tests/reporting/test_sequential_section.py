"""The report's "Stopped when settled" section from hand-made sequential_decisions and sequential_savings frames:
the verdicts in words, the numbers, the guarantee, baseline rows labelled, every target id escaped, and no section
when the slate does not use the design (pure functions: no Dagster, no warehouse)."""

from __future__ import annotations

import pandas as pd
import pytest

from eyt_dagster.reporting.html_report import render_report
from eyt_dagster.reporting.sequential_section import TITLE, sequential_section

pytestmark = pytest.mark.unit

HOSTILE = "<b>x</b>"
BASELINE = "reflective-baseline"


def decision(a: str, b: str, verdict: str, decided: int | None, early: bool, at_n: bool = False, **more) -> dict:
    return {
        "pool": "usa",
        "metric": "explicit_acc",
        "target_a": a,
        "target_b": b,
        "verdict": verdict,
        "decided_items": decided,
        "decided_early": early,
        "undecided_at_n": at_n,
        "n_paired": decided or 100,
        "diff": 0.25,
        "ci_low": 0.125,
        "ci_high": 0.375,
        "margin": 0.05,
        "played_a": 40,
        "played_b": 100,
        "n_total": 100,
        "is_baseline_pair": BASELINE in (a, b),
        "created_at": "2025-01-01",
    } | more


def decisions() -> pd.DataFrame:
    rows = [
        decision(HOSTILE, "model-y", "a_ahead", 40, True),
        decision(HOSTILE, BASELINE, "b_ahead", 30, True, diff=-0.5, ci_low=-0.625, ci_high=-0.375),
        decision("model-y", BASELINE, "within_margin", 100, False, diff=0.0, ci_low=-0.03, ci_high=0.03),
        decision("model-y", "model-z", "undecided", None, False, True, pool="mem", n_total=80),
    ]
    df = pd.DataFrame(rows)
    df["decided_items"] = df["decided_items"].astype("Int64")
    return df


def savings() -> pd.DataFrame:
    rows = [
        (HOSTILE, "usa", 40, 100, 60, 2.0, 3.0, False, False),
        ("model-y", "usa", 100, 100, 0, 5.0, 0.0, False, True),
        (BASELINE, "usa", 30, 100, 70, 0.0, 0.0, True, False),
        ("model-y", "mem", 80, 80, 0, 4.0, 0.0, False, False),
        ("model-z", "mem", 80, 80, 0, 4.0, 1.25, False, False),
    ]
    columns = ["target", "pool", "played", "n_total", "not_played", "spent_usd", "saved_usd_estimate"]
    return pd.DataFrame(rows, columns=[*columns, "is_baseline", "self_preference_risk"]).assign(created_at="x")


def page(section) -> str:
    return render_report(
        [section], title="t", generated_at="now", slate_yaml="", prompt_hashes={}, baseline_targets=[BASELINE]
    )


def test_the_section_says_each_verdict_in_words_with_its_numbers():
    section = sequential_section(decisions(), savings())
    assert section is not None and section.title == TITLE
    html = page(section)
    for words in ("A ahead", "B ahead", "within margin", "undecided at N=80: full design&#x27;s verdict applies"):
        assert words in html
    assert "0.250 [0.125, 0.375]" in html and "-0.500 [-0.625, -0.375]" in html  # the interval cells
    assert "<h3>usa: comparisons</h3>" in html and "<h3>mem: comparisons</h3>" in html
    assert "decided at (dialogues)" in html and "decided early" in html
    usa = dict(section.more_tables)["usa: comparisons"]
    assert list(usa["decided_items"]) == [40, 30, 100]  # sorted by metric and pair
    assert list(usa["early"]) == ["yes", "yes", "no"]
    assert "2 of 4 comparisons were decided early" in html


def test_the_section_counts_dialogues_played_and_dollars_saved():
    html = page(sequential_section(decisions(), savings()))
    assert "40 of 100" in html and "30 of 100" in html and "80 of 80" in html
    assert "<h3>usa: dialogues played, $3.00 saved (estimated)</h3>" in html
    assert "<h3>mem: dialogues played, $1.25 saved (estimated)</h3>" in html
    assert "Estimated saving over all pools: $4.25." in html
    assert "$2.00" in html and "$5.00" in html


def test_the_guarantee_and_the_baselines_are_stated():
    html = page(sequential_section(decisions(), savings()))
    assert "family-wise over every pair of that pool and metric" in html
    assert "anytime-valid confidence sequence" in html and "asymptotic" in html
    assert "reference points, not evaluations of a language model" in html
    assert f'{BASELINE}<span class="badge baseline">baseline</span>' in html
    assert "self-preference risk" in html  # model-y's flag


def test_every_target_id_is_escaped():
    html = page(sequential_section(decisions(), savings()))
    assert HOSTILE not in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html


def test_no_section_without_the_design():
    assert sequential_section(pd.DataFrame(), pd.DataFrame()) is None
    assert sequential_section(decisions().iloc[0:0], savings().iloc[0:0]) is None
