"""`eyt view`'s /corrected page on a hand-made warehouse (tests/support/corrected_cell.py): each stored corrected
number of a cell beside its arithmetic, which the domain function the table is made with computes again."""

from __future__ import annotations

import pandas as pd
import pytest

from eyt_dagster.core import explorer_links
from eyt_dagster.core.prediction_powered import prediction_powered_mean
from eyt_dagster.explorer import explain
from eyt_dagster.eyt_bench.judge_correction import cell_corrections, corrected_table
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from eyt_dagster.table_registry import catalog
from resources.storage.warehouse import store_frame

from support import corrected_cell as cell
from support.asgi_get import get
from support.explorer_fixtures import explorer_fixtures, wh

pytestmark = pytest.mark.unit


def build(data) -> pd.DataFrame:
    verdicts = cell.verdicts().assign(**dict.fromkeys(SUBSCORE_COLUMNS, 0.5))
    scores = cell.scores().assign(alpha=cell.ALPHA, n_judged_turns=3, n_failed_verdicts=0, n_failed_final_verdicts=0)
    found = cell_corrections(
        scores, cell.annotations(), verdicts, cell.intervals(), alpha=cell.ALPHA, min_human_labels=3
    )
    table = corrected_table(found).assign(is_baseline=False, self_preference_risk=False)
    frames = {
        "dialogue.dialogue_scores": (scores, ["pool", "target"]),
        "dialogue.judge_verdicts": (verdicts, ["pool", "target"]),
        "dialogue.human_annotations": (cell.annotations(), []),
        "dialogue.leaderboard_intervals": (cell.intervals(), []),
        "dialogue.judge_corrected": (table, []),
    }
    for name, (frame, by) in frames.items():
        store_frame(data, name, frame, partition_by=by, catalog=catalog())
    return table


data, app = explorer_fixtures("explorer_corrected", build)


def test_each_corrected_number_is_explained_and_agrees_with_the_stored_one(data):
    found = explain.corrected(wh(data), cell.TARGET, cell.POOL)
    empathy = found.explained["empathy"]
    expected = prediction_powered_mean([48.0, 40.0, 88.0], [40.0, 50.0, 60.0], [70.0, 80.0])
    assert empathy.agrees and float(empathy.stored) == pytest.approx(expected.estimate, rel=1e-5)
    assert "shown: corrected" in empathy.notes
    assert any("1 partly labelled" in note for note in empathy.notes)
    persona = found.explained["persona"]
    assert persona.agrees and persona.value == "missing"  # no labels: no estimate, and none stored
    assert "shown: judge only (no human labels)" in persona.notes


def test_the_page_opens_the_named_metrics_arithmetic(app):
    url = explorer_links.corrected_path(cell.TARGET, cell.POOL, explain="empathy")
    assert url == "/corrected?target=A&pool=nemotron_usa&explain=empathy"
    response = get(app, url)
    assert response.status == 200
    html = response.text
    assert html.count('<details class="explain" open>') == 1
    assert "estimate = people&#39;s mean + lambda" in html
    assert "The stored number is" not in html
    assert "3 / 5" in html and "no human labels" in html


def test_an_unknown_target_is_a_404(app):
    assert get(app, explorer_links.corrected_path("nobody", cell.POOL)).status == 404
