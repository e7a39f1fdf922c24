"""`eyt report` on a copy of the session warehouse: with hand-made dialogue.judge_corrected rows (one cell's
Empathy corrected) the report marks that number and adds "Rankings under correction"; without the table (a
warehouse written before it existed) the report has none of it and no error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eyt_dagster.ops.report_commands import report_html
from eyt_dagster.reporting.corrected_section import RANKINGS_TITLE, TABLES
from eyt_dagster.slate import load_slate
from resources.storage.report_reads import read_table
from resources.storage.warehouse import store_frame
from resources.storage.warehouse_files import table_dir, warehouse_root

from support.corrected_data import judge_corrected

pytestmark = pytest.mark.materialisation

TITLE = "corrected with 11 human-labelled dialogues (prediction-powered, docs/eyt-metrics.md)"


@pytest.fixture(scope="module")
def copied(warehouse, tmp_path_factory) -> tuple[Path, Path]:
    """(the copy's eyt.duckdb, the slate file): the session warehouse's data directory copied, without any of the
    corrected tables (the session warehouse is read-only)."""
    con, _ = warehouse
    found = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    original = Path(found[0])
    data = tmp_path_factory.mktemp("corrected_report") / "data"
    shutil.copytree(original.parent, data)
    for name in TABLES:
        shutil.rmtree(table_dir(warehouse_root(data), f"dialogue.{name}"), ignore_errors=True)
    return data / original.name, original.parent.parent / "slate.yaml"


def render(copied: tuple[Path, Path]) -> str:
    path, slate = copied
    return report_html(path, load_slate(slate), slate.read_text(), {"target": "abc123"}, generated_at="fixed")


def test_without_judge_corrected_the_report_has_no_marker_and_no_rankings_section(copied):
    html = render(copied)
    assert "<h2>Leaderboard</h2>" in html
    assert 'class="mark' not in html and "(judge only)" not in html and RANKINGS_TITLE not in html


def test_with_judge_corrected_the_corrected_cell_is_marked_and_the_rankings_section_says_none_was_compared(copied):
    path, _ = copied
    board = read_table(path, "dialogue.leaderboard").sort_values(["pool", "target"])
    first = board.iloc[0]
    cell = (str(first["target"]), str(first["pool"]), "empathy")
    rows = judge_corrected(board.to_dict("records"), {cell: (12.34, 10.0, 15.0, 11)})
    store_frame(path.parent, "dialogue.judge_corrected", rows)
    html = render(copied)
    leaderboard = html.split("<h2>Leaderboard</h2>", 1)[1].split("</section>", 1)[0]
    assert f'12.3<sup class="mark h" title="{TITLE}">h</sup> [10.0, 15.0]' in leaderboard
    assert leaderboard.count('class="mark h"') == 1
    assert "h: " + TITLE in leaderboard
    rankings = html.split(f"<h2>{RANKINGS_TITLE}</h2>", 1)[1].split("</section>", 1)[0]
    assert "The rankings are the judge&#x27;s alone" in rankings and "`eyt annotate export`" in rankings
    # the model cards' pooled Empathy stays the judge's and says so
    cards = html.split("<h2>Model cards</h2>", 1)[1].split("</section>", 1)[0]
    assert "EYT Empathy (0-100) (judge only)" in cards
