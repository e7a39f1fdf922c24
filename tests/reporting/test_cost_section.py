"""The report's "Estimated against actual cost" section from a hand-made reports.run_costs frame: estimates with
their ranges beside the actual figures, an unpriced model shown as unpriced (never $0), the in-range marks, the
totals, when the estimate was made, the sequential design's sentence, a row with no estimate explained, every
model id escaped, and no section when the table is empty or missing (pure functions: no Dagster, no warehouse)."""

from __future__ import annotations

import pandas as pd
import pytest

from eyt_dagster.ops.report_commands import RUN_COSTS
from eyt_dagster.reporting.cost_section import TITLE, cost_section, cost_table
from eyt_dagster.reporting.html_report import render_report
from resources.storage.report_reads import read_table

pytestmark = pytest.mark.unit

HOSTILE = "<b>x</b>"
WHEN = "2026-01-02T03:04:05+00:00"


def row(model: str, role: str, **values) -> dict:
    empty = dict.fromkeys(("est_calls", "est_calls_low", "est_calls_high", "est_tokens", "actual_tokens"), None)
    empty |= dict.fromkeys(("est_usd", "est_usd_low", "est_usd_high", "actual_usd"), None)
    empty |= dict(calls_in_range=None, usd_in_range=None, estimated_at=WHEN, sequential=False, created_at="x")
    return {"model": model, "role": role, **empty, **values}


def run_costs(sequential: bool = False) -> pd.DataFrame:
    rows = [
        row(HOSTILE, "target", est_calls=120, est_calls_low=100, est_calls_high=140, actual_calls=110)
        | dict(est_tokens=50_000, actual_tokens=48_000, est_usd=1.5, est_usd_low=1.25, est_usd_high=2.0)
        | dict(actual_usd=1.75, calls_in_range=True, usd_in_range=True),
        row("judge-j", "judge", est_calls=60, est_calls_low=50, est_calls_high=70, actual_calls=80)
        | dict(est_tokens=9_000, actual_tokens=12_000, est_usd=0.02, est_usd_low=0.015, est_usd_high=0.025)
        | dict(actual_usd=0.03, calls_in_range=False, usd_in_range=False),
        row("local-sim", "simulator", est_calls=40, est_calls_low=30, est_calls_high=50, actual_calls=35)
        | dict(est_tokens=4_000, actual_tokens=3_500, calls_in_range=True),  # unpriced: USD missing
        row("gen-g", "speech_item_generator", actual_calls=5, actual_tokens=700, actual_usd=0.01),  # not foreseen
    ]
    return pd.DataFrame(rows).assign(sequential=sequential)


def page(section) -> str:
    return render_report([section], title="t", generated_at="now", slate_yaml="", prompt_hashes={}, baseline_targets=[])


def test_each_row_shows_the_estimate_with_its_range_beside_the_actual():
    table = cost_table(run_costs()).set_index("model")
    assert table.loc[HOSTILE, "calls_est"] == "120 [100\u2013140]"
    assert table.loc[HOSTILE, "calls_actual"] == "110" and table.loc[HOSTILE, "calls_mark"] == "in range"
    assert table.loc[HOSTILE, "tokens_est"] == "50,000" and table.loc[HOSTILE, "tokens_actual"] == "48,000"
    assert table.loc[HOSTILE, "usd_est"] == "$1.50 [$1.25\u2013$2.00]" and table.loc[HOSTILE, "usd_actual"] == "$1.75"
    assert (
        table.loc["judge-j", "calls_mark"] == "above the range"
        and table.loc["judge-j", "usd_mark"] == "above the range"
    )
    assert table.loc["judge-j", "usd_est"] == "$0.0200 [$0.0150\u2013$0.0250]"


def test_an_unpriced_model_is_unpriced_never_zero_dollars():
    table = cost_table(run_costs()).set_index("model")
    assert table.loc["local-sim", "usd_est"] == "unpriced" and table.loc["local-sim", "usd_actual"] == "unpriced"
    assert table.loc["local-sim", "usd_mark"] == "\u2013"
    html = page(cost_section(run_costs()))
    assert "Unpriced: local-sim." in html and "$0.00" not in html


def test_a_row_with_no_estimate_is_explained_and_counted_in_the_totals():
    table = cost_table(run_costs()).set_index("model")
    assert table.loc["gen-g", "calls_est"] == "no estimate" and table.loc["gen-g", "calls_actual"] == "5"
    assert table.loc["gen-g", "usd_actual"] == "$0.0100" and table.loc["gen-g", "calls_mark"] == "\u2013"
    total = table.loc["total"]
    assert total["calls_est"] == "220 [180\u2013260]" and total["calls_actual"] == "230"
    assert total["usd_est"] == "$1.52 [$1.26\u2013$2.02]"  # the priced rows only
    assert total["usd_actual"] == "$1.79" and total["usd_mark"] == "in range"
    assert "calls the plan does not foresee" in page(cost_section(run_costs()))


def test_the_section_says_when_and_whether_the_design_stopped_early():
    section = cost_section(run_costs())
    assert section is not None and section.title == TITLE
    html = page(section)
    assert f"The estimate was made at {WHEN}." in html
    assert "estimated calls [low-high]" in html and "USD in range" in html
    assert "sequential design" not in html
    html = page(cost_section(run_costs(sequential=True)))
    assert "the estimate is the full design&#x27;s" in html and "Stopped when settled" in html


def test_every_model_id_is_escaped():
    html = page(cost_section(run_costs()))
    assert HOSTILE not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_no_section_when_the_table_is_empty_or_missing():
    assert cost_section(pd.DataFrame()) is None
    assert cost_section(run_costs().iloc[0:0]) is None


def test_a_warehouse_from_before_the_table_existed_gives_no_section(tmp_path):
    assert cost_section(read_table(tmp_path, RUN_COSTS)) is None
