"""`eyt view`'s /sequential page on a hand-made warehouse: every comparison of dialogue.sequential_decisions with its
verdict in words, each target's dialogues played of N and USD saved, embedded baselines badged, a hostile target
id shown as text only, the page in the navigation and in a static export (only the selected targets' comparisons),
and a short message when the slate does not use the design."""

from __future__ import annotations

import pandas as pd
import pytest

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
BASELINE = "reflective-baseline"
EMPTY_STATE = "The slate does not use the sequential design"


def decision(a: str, b: str, verdict: str, decided: int | None, early: bool, at_n: bool = False, **more) -> dict:
    row = dict(pool=POOL, metric="explicit_acc", target_a=a, target_b=b, verdict=verdict, decided_items=decided)
    row |= dict(decided_early=early, undecided_at_n=at_n, n_paired=decided or 100, diff=0.25, ci_low=0.125)
    row |= dict(ci_high=0.375, margin=0.05, played_a=40, played_b=100, n_total=100)
    return row | dict(is_baseline_pair=BASELINE in (a, b)) | more


def build(data) -> None:
    decisions = [
        decision(HOSTILE, MODEL, "a_ahead", 40, True),
        decision(HOSTILE, BASELINE, "b_ahead", 30, True, diff=-0.5, ci_low=-0.625, ci_high=-0.375),
        decision(MODEL, BASELINE, "undecided", None, False, True, metric="satisfaction", margin=0.15),
    ]
    savings = [
        dict(target=HOSTILE, played=40, spent_usd=2.0, saved_usd_estimate=3.0, is_baseline=False),
        dict(target=MODEL, played=100, spent_usd=5.0, saved_usd_estimate=0.0, is_baseline=False),
        dict(target=BASELINE, played=30, spent_usd=0.0, saved_usd_estimate=0.0, is_baseline=True),
    ]
    for row in savings:
        row |= dict(pool=POOL, n_total=100, not_played=100 - row["played"], self_preference_risk=False)
    targets = [(t["target"], t["is_baseline"]) for t in savings]
    turns = [dict(target=t, pool=POOL, seed_id=f"{POOL}:p00", turn=0) for t, _ in targets]
    board = [dict(target=t, pool=POOL, is_baseline=b, n_dialogues=1, n_errors=0) for t, b in targets]
    frames = {
        "dialogue.dialogue_turns": (turns, ["pool", "target"]),
        "dialogue.leaderboard": (board, []),
        "dialogue.sequential_decisions": (decisions, []),
        "dialogue.sequential_savings": (savings, []),
    }
    for table, (rows, by) in frames.items():
        store_frame(data, table, pd.DataFrame(rows), partition_by=by, catalog=catalog())


data, app = explorer_fixtures("sequential", build)


def test_the_page_lists_each_comparison_in_words(app):
    page = get(app, "/sequential")
    assert page.status == 200, page.text
    html = page.text
    assert "A ahead" in html and "B ahead" in html
    assert "undecided at N=100: full design&#39;s verdict applies" in html
    assert "0.250" in html and "0.125 to 0.375" in html and "-0.625 to -0.375" in html
    assert "2 of 3 comparison(s) decided early" in html
    assert "anytime-valid confidence sequence" in html and "family-wise" in html
    assert 'href="/pairs?pool=usa&amp;a=model-y&amp;b=reflective-baseline&amp;metric=satisfaction"' in html


def test_the_page_counts_dialogues_played_and_dollars_saved(app):
    html = get(app, "/sequential").text
    assert "40 of 100" in html and "30 of 100" in html and "100 of 100" in html
    assert "estimated saving $3.00" in html and "estimated saving over all pools $3.00" in html
    assert "$2.00" in html and "$5.00" in html


def test_baselines_are_badged_and_target_ids_escaped(app):
    html = get(app, "/sequential").text
    assert f'{BASELINE} <span class="badge"' in html
    assert HOSTILE not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert '<a href="/sequential">Stopped when settled</a>' in get(app, "/").text  # in the navigation


def test_without_the_design_the_page_says_so(tmp_path):
    page = get(create_app(tmp_path), "/sequential")
    assert page.status == 200 and EMPTY_STATE in page.text
    assert "<table" not in page.text


def test_the_export_holds_the_page_with_the_selected_targets_only(data, tmp_path):
    assert export_links.page_key("/sequential")[0] == export_links.SEQUENTIAL
    out = tmp_path / "export"
    export(data[0], out, targets=[MODEL, BASELINE])
    html = (out / export_links.file_name(export_links.SEQUENTIAL)).read_text()
    assert "undecided at N=100" in html and "A ahead" not in html and "&lt;b&gt;" not in html
    assert 'href="sequential.html"' in (out / "index.html").read_text()
