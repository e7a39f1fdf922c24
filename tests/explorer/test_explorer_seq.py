"""`eyt view`'s SEQ pages on the hand-made warehouse (tests/support/explorer_speech_data.py): the SEQ leaderboard is
speech.seq_leaderboard of one persona condition (sortable by any column, the embedded baseline and chance marked as
baselines, intervals beside the estimates), and a subscale's page is speech.seq_breakdown of that subscale with its
items, each target's headline trajectory on each linked to the item page."""

from __future__ import annotations

import html as html_text
import re

import pytest

from eyt_dagster.core import explorer_links
from eyt_dagster.explorer import seq
from eyt_dagster.explorer.app import speech_item_url, speech_url

from support.asgi_get import get
from support.explorer_data import build
from support.explorer_fixtures import explorer_fixtures, wh
from support.explorer_speech_data import (
    ITEM,
    PERSONA_CONDITION,
    SPEECH_BASELINE,
    SPEECH_MODEL_B,
    SPEECH_TARGET,
    SUBSCALE_ORDER,
)

pytestmark = pytest.mark.unit

data, app = explorer_fixtures("explorer-seq", build)
FIRST = SUBSCALE_ORDER[0]  # ITEM's subscale: the only one with choices in the seeded order


def targets(found: seq.Board | seq.Subscale) -> list[str]:
    return [str(r["target"]) for r in found.rows]


def rows_shown(html: str) -> list[str]:
    """The targets of a SEQ table, in the order shown (chance by its name)."""
    board = html.split('<table class="board seq">', 1)[1].split("</table>", 1)[0]
    return [t.strip() for t in re.findall(r'<td class="target">(?:<a href="[^"]*">)?([^<]+)', board)]


# -- queries ----------------------------------------------------------------------------------------------------


def test_the_board_is_the_table_of_one_condition(data):
    found = seq.board(wh(data))
    assert found.condition == "default" and found.conditions == ["default", PERSONA_CONDITION]
    assert targets(found) == [SPEECH_TARGET, SPEECH_BASELINE, SPEECH_MODEL_B, "chance"]  # as stored: SEQ, chance last
    stored = {r["target"]: r for r in data[1]["speech.seq_leaderboard"] if r["condition"] == "default"}
    for row in found.rows:
        for column in seq.BOARD_COLUMNS:
            want = stored[row["target"]][column]
            assert row[column] == pytest.approx(want, nan_ok=True) if want is not None else row[column] is None
    assert found.members == [SPEECH_MODEL_B, SPEECH_TARGET] and "models evaluated" in found.cohort
    assert len(found.shortcuts) == 1 and found.shortcuts[0].startswith(f"{SPEECH_BASELINE} (default): Acc1 0.92")
    persona = seq.board(wh(data), PERSONA_CONDITION)
    assert targets(persona) == [SPEECH_TARGET, "chance"] and persona.shortcuts == []


@pytest.mark.parametrize(
    "column, descending, expected",
    [
        ("acc1", True, [SPEECH_BASELINE, SPEECH_TARGET, SPEECH_MODEL_B, "chance"]),
        ("acc1", False, ["chance", SPEECH_MODEL_B, SPEECH_TARGET, SPEECH_BASELINE]),
        ("seq", False, ["chance", SPEECH_MODEL_B, SPEECH_BASELINE, SPEECH_TARGET]),
        ("target", False, ["chance", SPEECH_BASELINE, SPEECH_MODEL_B, SPEECH_TARGET]),
        # a missing value is last either way (the baseline and chance have no tokens/s)
        ("tokens_per_s", True, [SPEECH_MODEL_B, SPEECH_TARGET, "chance", SPEECH_BASELINE]),
        ("tokens_per_s", False, [SPEECH_MODEL_B, SPEECH_TARGET, "chance", SPEECH_BASELINE]),
    ],
)
def test_the_board_sorts_by_any_column(data, column, descending, expected):
    order = seq.check_order(column, descending, seq.BOARD_COLUMNS)
    assert targets(seq.board(wh(data), order=order)) == expected


def test_a_subscale_has_each_targets_figures_and_its_items_trajectories(data):
    found = seq.subscale(wh(data), FIRST)
    assert found.name == "Self-Regard" and found.composite == "Self-Perception"
    assert targets(found) == [SPEECH_TARGET, SPEECH_BASELINE, SPEECH_MODEL_B]  # Acc_traj descending
    assert [r["acc_traj"] for r in found.rows] == pytest.approx([0.8, 0.6, 0.5])
    items = {i["dataset_id"]: i for i in found.items}
    assert len(items) == 4 and all(i.startswith(FIRST) for i in items)
    # ITEM, seeded order, sequential inference: the chat target right in round 1, its round-2 reply did not parse;
    # the baseline right twice (tests/support/explorer_speech_data.py)
    assert items[ITEM]["outcomes"] == {SPEECH_TARGET: ("right", "unparsed"), SPEECH_BASELINE: ("right", "right")}
    assert found.headline == {SPEECH_BASELINE: "sequential", SPEECH_TARGET: "sequential"}
    assert found.targets == [SPEECH_TARGET, SPEECH_BASELINE, SPEECH_MODEL_B]
    persona = seq.subscale(wh(data), FIRST, PERSONA_CONDITION)
    assert targets(persona) == [SPEECH_TARGET] and all(not i["outcomes"] for i in persona.items)
    with pytest.raises(KeyError):
        seq.subscale(wh(data), "nope")


def test_a_rounds_mark():
    assert seq.outcome({"correct": True, "parse_failed": False, "error": None}) == "right"
    assert seq.outcome({"correct": False, "parse_failed": False, "error": None}) == "wrong"
    assert seq.outcome({"correct": False, "parse_failed": True, "error": None}) == "unparsed"
    assert seq.outcome({"correct": None, "parse_failed": False, "error": "timeout"}) == "error"


def test_bad_orders_and_conditions_are_refused(data):
    with pytest.raises(ValueError, match="unknown sort 'nope'; the columns are target, seq, acc_traj"):
        seq.check_order("nope", True, seq.BOARD_COLUMNS)
    with pytest.raises(ValueError, match="unknown condition 'calm'; the conditions are default, persona"):
        seq.board(wh(data), "calm")


# -- pages ------------------------------------------------------------------------------------------------------


def test_the_seq_page_names_baselines_and_links_every_target(app):
    answer = get(app, explorer_links.seq_path())
    assert answer.status == 200
    html = answer.text
    assert rows_shown(html) == [SPEECH_TARGET, SPEECH_BASELINE, SPEECH_MODEL_B, "chance"]
    board = html.split('<table class="board seq">', 1)[1].split("</table>", 1)[0]
    assert board.count('class="badge"') == 2  # the embedded baseline and chance, not the models
    for target in (SPEECH_TARGET, SPEECH_BASELINE):
        assert f'href="{html_text.escape(speech_url(target=target, condition="default"))}"' in board
    for shown in (
        '<td class="num">110.1<',  # SEQ, one decimal (its arithmetic follows)
        '0.570 <small class="ci">[0.490&ndash;0.650]</small>',  # Acc_traj and its interval
        "$0.8400",  # USD per 100 queries
        "the end-to-end and cascaded models evaluated (speech-model-b, speech-target)",
        "Acc1 0.92 against chance 0.50",
    ):
        assert shown in html, shown
    assert '<a href="/seq">SEQ leaderboard</a>' in html and '<a href="/seq">SEQ leaderboard</a>' in get(app, "/").text


def test_the_seq_page_sorts_by_a_column_head(app):
    html = get(app, explorer_links.seq_path(sort="acc1", order="asc")).text
    assert rows_shown(html) == ["chance", SPEECH_MODEL_B, SPEECH_TARGET, SPEECH_BASELINE]
    assert 'href="/seq?condition=default&amp;sort=acc1&amp;order=desc">Acc1 &uarr;</a>' in html  # again: reversed
    assert 'href="/seq?condition=default&amp;sort=seq&amp;order=desc">SEQ</a>' in html
    persona = get(app, explorer_links.seq_path(condition=PERSONA_CONDITION)).text
    assert (
        rows_shown(persona) == [SPEECH_TARGET, "chance"] and f'<option value="{PERSONA_CONDITION}" selected>' in persona
    )


def test_the_seq_page_lists_the_subscales_linking_each(app):
    html = get(app, explorer_links.seq_path()).text
    subscales = html.split('<table class="subscales">', 1)[1].split("</table>", 1)[0]
    links = re.findall(r'href="/seq/subscale/([a-z_]+)\?condition=default"', subscales)
    assert links == SUBSCALE_ORDER
    assert "0.800 <small>(4)</small>" in subscales and 'speech-baseline <span class="badge"' in subscales


def test_a_subscale_page_links_its_items_and_each_targets_choices(app):
    answer = get(app, explorer_links.seq_subscale_path(FIRST))
    assert answer.status == 200
    html = answer.text
    assert rows_shown(html) == [SPEECH_TARGET, SPEECH_BASELINE, SPEECH_MODEL_B]
    assert f'href="{html_text.escape(speech_url(subscale=FIRST, target=SPEECH_TARGET, condition="default"))}"' in html
    assert f'href="{speech_item_url(ITEM)}?condition=default"' in html
    row = html.split(f'href="{speech_item_url(ITEM)}?condition=default"', 1)[1].split("</tr>", 1)[0]
    marks = re.findall(r'<td class="trajectory">(.*?)</td>', row)
    assert "&#10003;" in marks[0] and "&#10007;?" in marks[0]  # right, then a reply that did not parse
    assert marks[1].count("&#10003;") == 2 and "not asked" in marks[2]
    assert html.count('class="badge"') == 2  # the baseline's row and its column
    by_target = get(app, explorer_links.seq_subscale_path(FIRST, sort="target", order="asc")).text
    assert rows_shown(by_target) == [SPEECH_BASELINE, SPEECH_MODEL_B, SPEECH_TARGET]


@pytest.mark.parametrize(
    "url, status, message",
    [
        (explorer_links.seq_path(sort="nope"), 400, "unknown sort 'nope'"),
        (explorer_links.seq_path(condition="calm"), 400, "unknown condition 'calm'"),
        (explorer_links.seq_subscale_path("nope"), 404, "'nope' is not an EQ-i 2.0 subscale"),
        (explorer_links.seq_subscale_path(FIRST, sort="seq"), 400, "unknown sort 'seq'"),
    ],
)
def test_bad_seq_requests(app, url, status, message):
    answer = get(app, url)
    assert answer.status == status and message in html_text.unescape(answer.text)


def test_an_empty_warehouse_says_what_writes_the_tables(tmp_path):
    from eyt_dagster.explorer.app import create_app

    html = get(create_app(tmp_path), explorer_links.seq_path()).text
    assert "speech.seq_leaderboard has no rows yet" in html


def test_the_speech_items_of_an_embedded_baseline_carry_its_badge(app):
    html = get(app, speech_url(target=SPEECH_BASELINE)).text
    assert 'class="badge"' in html
