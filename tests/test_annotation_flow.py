"""The human-label path as a team walks it, on the pipeline's warehouse: the `warehouse` fixture ran `eyt annotate
export`, had two simulated people fill the sheet (tests/support/annotation_flow.py: the judge half a point too kind,
and on Empathy the two baselines the other way round from the judge) and ran `eyt annotate import`, then the
reports. What a user then reads: every cell corrected, the Empathy ranking reversed under correction in both
pools, the report saying so, and the explorer's corrected numbers opening their arithmetic."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from eyt_dagster.core import explorer_links
from eyt_dagster.explorer.app import create_app
from eyt_dagster.eyt_bench import shown_figures
from eyt_dagster.ops.report_commands import report_html
from eyt_dagster.reporting.corrected_section import RANKINGS_TITLE
from eyt_dagster.reporting.speech_sections import card_section
from eyt_dagster.slate import load_slate

from support.annotation_flow import LOW_EMPATHY_TARGET
from support.asgi_get import get

pytestmark = pytest.mark.materialisation

POOLS = ("nemotron_usa", "personamem_v2")
OTHER = "terse-baseline"


def data_of(con) -> Path:
    found = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return Path(found[0]).parent


def test_every_cell_is_corrected_from_the_imported_sheets(warehouse):
    con, _ = warehouse
    labels = con.execute(
        "SELECT DISTINCT target, pool, seed_id FROM dialogue.human_annotations WHERE sheet IS NOT NULL"
    ).fetchall()
    assert len(labels) == 2 * 2 * 3  # 3 ChatSEEDs of each target x pool, the same ones for both targets of a pool
    for pool in POOLS:
        seeds = {frozenset(r[2] for r in labels if r[1] == pool and r[0] == t) for t in (LOW_EMPATHY_TARGET, OTHER)}
        assert len(seeds) == 1, pool
    rows = con.execute("SELECT * FROM dialogue.judge_corrected").df()
    assert len(rows) == 2 * 2 * 5 and (rows["shown"] == "corrected").all() and (rows["n_labelled"] == 3).all()
    assert (rows["n_annotators"] == 2).all() and (rows["n_dialogues"] == 4).all()
    empathy = rows[rows["metric"] == "empathy"].set_index(["target", "pool"])
    for pool in POOLS:  # the judge puts the reflective baseline far ahead; the people the other way round
        assert empathy.loc[(LOW_EMPATHY_TARGET, pool), "judge_mean"] > empathy.loc[(OTHER, pool), "judge_mean"]
        assert empathy.loc[(LOW_EMPATHY_TARGET, pool), "shown_mean"] < empathy.loc[(OTHER, pool), "shown_mean"]
        # the reflective baseline's people give 0 on odd turns and 0.5 on even ones: 0-5 -> 0-100 is x 20
        assert empathy.loc[(LOW_EMPATHY_TARGET, pool), "people_mean"] < 0.5 * 20


def test_the_empathy_ranking_reverses_under_correction_and_nothing_else_does(warehouse):
    con, _ = warehouse
    ranks = con.execute("SELECT * FROM dialogue.corrected_rank_intervals").df()
    assert set(ranks["metric"]) == {"empathy", "persona", "anthropomorphic", "ficr", "satisfaction"}
    moved = ranks[ranks["rank_changed"]]
    assert sorted(zip(moved["pool"], moved["metric"], moved["target"], moved["corrected_rank"], strict=True)) == [
        (pool, "empathy", target, rank) for pool in POOLS for target, rank in ((LOW_EMPATHY_TARGET, 2), (OTHER, 1))
    ]
    pairs = con.execute("SELECT * FROM dialogue.corrected_pairwise WHERE changed").df()
    assert sorted(pairs["pool"]) == list(POOLS) and set(pairs["metric"]) == {"empathy"}
    assert (pairs["judge_verdict"] != pairs["corrected_verdict"]).all()


def test_the_report_shows_corrected_figures_and_calls_out_the_reversal(warehouse):
    con, _ = warehouse
    data = data_of(con)
    slate = data.parent / "slate.yaml"
    html = report_html(data / "eyt.duckdb", load_slate(slate), slate.read_text(), {}, generated_at="fixed")
    leaderboard = html.split("<h2>Leaderboard</h2>", 1)[1].split("</section>", 1)[0]
    assert 'class="mark h"' in leaderboard and 'class="mark j"' not in leaderboard  # every judge-made cell corrected
    rankings = html.split(f"<h2>{RANKINGS_TITLE}</h2>", 1)[1].split("</section>", 1)[0]
    for pool in POOLS:
        assert f"{pool}, Empathy: {OTHER} ranks 2nd judged alone, 1st corrected" in rankings


def test_the_model_cards_pool_the_corrected_figures_weighing_pools_as_the_cards_do(warehouse):
    """Pooling the cells' judge-only means the way shown_figures.pooled pools the corrected ones gives the card's
    own pooled judge figure: the weights are the cards' (every dialogue of every pool in one mean)."""
    con, _ = warehouse
    figures = shown_figures.figures(con.execute("SELECT * FROM dialogue.judge_corrected").df())
    cards = con.execute("SELECT * FROM reports.model_cards").df().set_index("target")
    for target in (LOW_EMPATHY_TARGET, OTHER):
        for metric in ("empathy", "ficr"):
            cells = [f for (t, _, m), f in figures.items() if t == target and m == metric]
            found = shown_figures.pooled(cells)
            assert found is not None and found.corrected
            assert found.judge_value == pytest.approx(cards.loc[target, f"eyt_pooled_{metric}"], abs=1e-9)
    section = card_section(cards.reset_index(), figures)
    assert {mark for mark, _ in section.marks.values()} == {"h"} and len(section.marks) == 2 * 2


def test_the_explorer_opens_a_corrected_numbers_arithmetic(warehouse):
    con, _ = warehouse
    app = create_app(data_of(con))
    path = explorer_links.leaderboard_path(LOW_EMPATHY_TARGET, POOLS[0], "corrected_empathy")
    answer = get(app, path)
    assert answer.status == 200
    opened = answer.text.split('<details class="explain" open>', 1)[1].split("</details>", 1)[0]
    assert "lambda" in opened and "shown: corrected" in opened
    answer = get(app, explorer_links.corrected_path(LOW_EMPATHY_TARGET, POOLS[0], "empathy"))
    assert answer.status == 200 and '<details class="explain" open>' in answer.text


def test_the_cell_page_links_the_corrected_page_and_the_static_export_holds_it(warehouse, tmp_path):
    from eyt_dagster.explorer.export import export

    con, _ = warehouse
    data = data_of(con)
    app = create_app(data)
    cell = get(app, explorer_links.dialogues_path(target=OTHER, pool=POOLS[0])).text
    assert html.escape(explorer_links.corrected_path(OTHER, POOLS[0])) in cell
    out = tmp_path / "export"
    export(data, out, [OTHER], [POOLS[0]])
    pages = list((out / "corrected").glob("*.html"))
    assert len(pages) == 1 and "shown: corrected" in pages[0].read_text()
    cells = [p.read_text() for p in (out / "cells").glob("*.html")]
    assert any(f'href="../corrected/{pages[0].name}"' in text for text in cells)
