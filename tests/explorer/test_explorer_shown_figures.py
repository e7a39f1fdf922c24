"""The explorer's leaderboard and a cell's page with dialogue.judge_corrected (hand-made rows: the chat target's
Empathy corrected, every other judge-made number judge only), and without it (a warehouse from before the table)."""

from __future__ import annotations

import html as html_text
import re
from urllib.parse import quote

import pytest

from eyt_dagster.core import explorer_links
from eyt_dagster.explorer import queries
from eyt_dagster.explorer.app import create_app
from eyt_dagster.explorer.export_links import page_key
from eyt_dagster.table_registry import catalog
from resources.storage.warehouse import store_frame

from support.asgi_get import get
from support.corrected_data import judge_corrected
from support.explorer_data import BASELINE, POOL, TARGET, build
from support.explorer_fixtures import explorer_fixtures, wh

pytestmark = pytest.mark.unit

TITLE = "corrected with 12 human-labelled dialogues (prediction-powered, docs/eyt-metrics.md)"


def build_corrected(data):
    made = build(data)
    rows = judge_corrected(made["dialogue.leaderboard"], {(TARGET, POOL, "empathy"): (31.26, 25.5, 37.0, 12)})
    store_frame(data, "dialogue.judge_corrected", rows, catalog=catalog())
    return made


data, app = explorer_fixtures("corrected", build_corrected)


@pytest.fixture(scope="module")
def plain_data(tmp_path_factory):
    """The same warehouse without dialogue.judge_corrected."""
    directory = tmp_path_factory.mktemp("uncorrected") / "data"
    directory.mkdir()
    return directory, build(directory)


def board_cells(page: str) -> dict[tuple[str, str], str]:
    """(target, column) -> the cell's HTML, for the leaderboard table."""
    head = re.findall(r"<th>(.*?)</th>", page.split('<table class="board">', 1)[1].split("</thead>", 1)[0])
    body = page.split('<table class="board">', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    out = {}
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        target = re.sub(r"<.*", "", cells[1]).strip()
        out.update({(target, h): c for h, c in zip(head, cells)})
    return out


def test_the_leaderboard_shows_the_corrected_figure_marked_and_linked_to_its_explanation(app):
    answer = get(app, "/")
    assert answer.status == 200, answer.text
    cells = board_cells(answer.text)
    empathy = cells[(TARGET, "empathy")]
    link = html_text.escape(explorer_links.leaderboard_path(target=TARGET, pool=POOL, explain="corrected_empathy"))
    assert f'<a href="{link}"' in empathy
    assert ">31.3</a>" in empathy  # the corrected figure (the judge's is 29.5)
    assert "95% interval [25.5, 37.0]; judge only 29.5 [27.5, 31.5]" in empathy  # the interval of the figure shown
    assert f'<sup class="mark h" title="{TITLE}">h</sup>' in empathy
    # the judge-only numbers of a mixed table say so too; the accuracies are not the judge's and carry nothing
    assert '<sup class="mark j" title="judge only: no human labels">j</sup>' in cells[(BASELINE, "empathy")]
    assert ">0.0</a>" in cells[(BASELINE, "empathy")]
    assert '<sup class="mark j"' in cells[(TARGET, "ficr")]
    assert "<sup" not in cells[(TARGET, "explicit_acc")]
    assert "h: " + TITLE in answer.text and "j: judge only" in answer.text


def test_the_link_opens_the_cells_row_and_a_static_export_maps_it_to_the_targets_page(app):
    answer = get(app, explorer_links.leaderboard_path(target=TARGET, pool=POOL, explain="corrected_empathy"))
    assert answer.status == 200, answer.text
    assert {target for target, _ in board_cells(answer.text)} == {TARGET}  # the cell's row alone
    assert f"Only the rows of target {TARGET} in pool {POOL}" in answer.text
    assert get(app, explorer_links.leaderboard_path(target=TARGET, pool="nowhere")).status == 404
    assert page_key(explorer_links.leaderboard_path(target=TARGET, pool=POOL, explain="corrected_empathy")) == (
        ("index", TARGET),
        "",
    )


def test_a_cells_page_lists_its_judge_made_figures_with_the_marker(app):
    answer = get(app, f"/dialogues?target={quote(TARGET)}&pool={quote(POOL)}")
    assert answer.status == 200, answer.text
    line = answer.text.split('<p class="figures">', 1)[1].split("</p>", 1)[0]
    assert f'<sup class="mark h" title="{TITLE}">h</sup> [25.5, 37.0] (judge only 29.5)' in line
    # the cell's other judge-made numbers are judge only: marked j, as the cell mixes both
    assert 'ficr 0.650<sup class="mark j" title="judge only: no human labels">j</sup> [0.630, 0.670]' in line
    assert "h: " + TITLE in answer.text


def test_without_the_table_the_pages_are_what_they_were(plain_data):
    plain_app = create_app(plain_data[0])
    assert queries.judge_corrected(wh(plain_data)).empty
    page = get(plain_app, "/").text
    cells = board_cells(page)
    for target in (TARGET, BASELINE):
        for metric in ("empathy", "ficr", "satisfaction", "persona", "anthropomorphic"):
            assert cells[(target, metric)].startswith(
                f'<a href="{html_text.escape(explorer_links.dialogues_path(target=target, pool=POOL, sort=metric))}">'
            )
    assert "mark" not in page and "judge only" not in page and 'class="legend"' not in page
    cell = get(plain_app, f"/dialogues?target={quote(TARGET)}&pool={quote(POOL)}").text
    assert 'class="figures"' not in cell and "judge only" not in cell
