"""`eyt view`'s /costs page on a hand-made warehouse: each model and role's estimate with its range beside the
actual calls, tokens and USD of reports.run_costs, an unpriced model shown as unpriced (never $0), a row with no
estimate explained, the totals, the sequential design's sentence, a hostile model id shown as text only, the page in
the navigation and in a static export (without the targets not selected), and a short message when the table is
empty or does not exist."""

from __future__ import annotations

import pandas as pd
import pytest

from eyt_dagster.core.cost_actual import RUN_COSTS_COLUMNS
from eyt_dagster.core.storage_types import conform
from eyt_dagster.explorer import export_links
from eyt_dagster.explorer.app import create_app
from eyt_dagster.explorer.export import export
from eyt_dagster.table_registry import catalog
from resources.storage.warehouse import store_frame

from support.asgi_get import get
from support.explorer_fixtures import explorer_fixtures

pytestmark = pytest.mark.unit

POOL = "usa"
HOSTILE = "<b>x</b>"
MODEL = "model-y"
JUDGE = "judge-j"
WHEN = "2026-01-02T03:04:05+00:00"
TABLE = "reports.run_costs"
EMPTY_STATE = "No `eyt run` has kept an estimate in this data directory"


def cost(model: str, role: str, **values) -> dict:
    row = dict.fromkeys(RUN_COSTS_COLUMNS)
    return row | dict(model=model, role=role, estimated_at=WHEN, sequential=True, created_at=pd.Timestamp(0)) | values


def estimated(calls: tuple[float, float, float], actual: float, usd: tuple[float, float, float] | None = None) -> dict:
    row = dict(est_calls=calls[0], est_calls_low=calls[1], est_calls_high=calls[2], actual_calls=actual)
    row |= dict(est_tokens=calls[0] * 100, actual_tokens=actual * 100, calls_in_range=calls[1] <= actual <= calls[2])
    if usd:
        row |= dict(est_usd=usd[0], est_usd_low=usd[1], est_usd_high=usd[2], actual_usd=usd[0])
    return row


def frame(rows: list[dict]) -> pd.DataFrame:
    return conform(pd.DataFrame(rows, columns=list(RUN_COSTS_COLUMNS)), RUN_COSTS_COLUMNS, TABLE)


def build(data) -> None:
    rows = [
        cost(HOSTILE, "target", **estimated((120, 100, 140), 110, (1.5, 1.25, 2.0))),
        cost(MODEL, "target", **estimated((60, 50, 70), 80, (0.5, 0.25, 0.75))),
        cost(JUDGE, "judge", **estimated((40, 30, 50), 35)),  # unpriced
        cost("gen-g", "speech_item_generator", actual_calls=5.0, actual_tokens=700.0, actual_usd=0.01),
    ]
    targets = [HOSTILE, MODEL]
    turns = [dict(target=t, pool=POOL, seed_id=f"{POOL}:p00", turn=0) for t in targets]
    board = [dict(target=t, pool=POOL, is_baseline=False, n_dialogues=1, n_errors=0) for t in targets]
    store_frame(
        data, "dialogue.dialogue_turns", pd.DataFrame(turns), partition_by=["pool", "target"], catalog=catalog()
    )
    store_frame(data, "dialogue.leaderboard", pd.DataFrame(board), partition_by=[], catalog=catalog())
    store_frame(data, TABLE, frame(rows), partition_by=[], catalog=catalog())


data, app = explorer_fixtures("costs", build)


def test_the_page_sets_each_estimate_beside_the_actual(app):
    page = get(app, "/costs")
    assert page.status == 200, page.text
    html = page.text
    assert "120 [100\u2013140]" in html and "$1.50 [$1.25\u2013$2.00]" in html and "$1.50</td>" in html
    assert "above the range" in html and "in range" in html
    assert f"Estimate made at {WHEN}" in html


def test_unpriced_unforeseen_totals_and_the_sequential_design(app):
    html = get(app, "/costs").text
    assert "unpriced</td>" in html and "Unpriced: judge-j." in html
    assert "$0.00" not in html
    assert "no estimate</td>" in html and "calls the plan does not foresee" in html
    assert '<tr class="total"><td class="target">total</td>' in html and "220 [180\u2013260]" in html
    assert "$2.00 [$1.50\u2013$2.75]" in html and "$2.01</td>" in html  # the priced rows; actual with gen-g's
    assert "the estimate is the full design&#39;s" in html


def test_model_ids_are_escaped_and_the_page_is_in_the_navigation(app):
    html = get(app, "/costs").text
    assert HOSTILE not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert '<a href="/costs">Cost</a>' in get(app, "/").text


def test_without_an_estimate_the_page_says_so(tmp_path):
    page = get(create_app(tmp_path), "/costs")  # no reports.run_costs at all
    assert page.status == 200 and EMPTY_STATE in page.text and "<table" not in page.text
    store_frame(tmp_path, TABLE, frame([]), partition_by=[], catalog=catalog())  # the table, with no rows
    page = get(create_app(tmp_path), "/costs")
    assert page.status == 200 and EMPTY_STATE in page.text and "<table" not in page.text


def test_the_export_holds_the_page_without_the_targets_not_selected(data, tmp_path):
    assert export_links.page_key("/costs")[0] == export_links.COSTS
    out = tmp_path / "export"
    export(data[0], out, targets=[MODEL])
    html = (out / export_links.file_name(export_links.COSTS)).read_text()
    assert MODEL in html and JUDGE in html and "gen-g" in html
    assert "&lt;b&gt;" not in html
    assert 'href="costs.html"' in (out / "index.html").read_text()
