"""One number format per scale (eyt_dagster/explorer/formats.py): each scale writes its numbers alike whatever their size,
every numeric column a page lists has a scale, and the pages use them (a 0-100 score of 0 reads "0.0" beside
"29.5", not "0.000")."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.explorer import queries, speech
from eyt_dagster.explorer.formats import COLUMN_SCALES, SCALES, number, scale_of
from eyt_dagster.explorer.seq import BOARD_COLUMNS, INTERVALS, SUBSCALE_COLUMNS

from support.asgi_get import get
from support.explorer_data import BASELINE, POOL, TARGET, build, seed_id
from support.explorer_fixtures import explorer_fixtures

pytestmark = pytest.mark.unit

data, app = explorer_fixtures("explorer-formats", build)


@pytest.mark.parametrize(
    "value, scale, shown",
    [
        (0.0, "score", "0.0"),
        (3, "score", "3.0"),
        (83.66, "score", "83.7"),
        (0.875, "rate", "0.875"),
        (1, "rate", "1.000"),
        (4, "rating", "4.00"),
        (3.8333, "rating", "3.83"),
        (112.44, "seq", "112.4"),
        (0.0012, "usd", "$0.0012"),
        (1234.5, "usd", "$1,234.50"),
        (1234, "count", "1,234"),
        (np.int64(7), "count", "7"),
        (2.0, "mean", "2.0"),
        (0.8, "seconds", "0.80"),
        (0.875, "emotion_acc", "0.875"),  # a column names its scale
        (29.5, "empathy", "29.5"),
        (60, "n_dialogues", "60"),
        (12.345, "", "12.345"),  # a float of no known scale: 3 decimals whatever its size
        (0.5, "no_such_column", "0.500"),
        (None, "score", "\u2013"),
        (float("nan"), "rate", "\u2013"),
        (pd.NA, "count", "\u2013"),
        (True, "rate", "yes"),
        (np.bool_(False), "", "no"),
        ("a text", "score", "a text"),
    ],
)
def test_each_scale_writes_its_numbers_alike(value, scale, shown):
    assert number(value, scale) == shown


def test_every_numeric_column_a_page_lists_has_a_scale():
    listed = [
        *queries.HEADLINE,
        *queries.SCORE_COLUMNS,
        *speech.CHOICE_COLUMNS,
        "turn4_contrast",
        "turn6_contrast",
        *BOARD_COLUMNS,
        *SUBSCALE_COLUMNS,
        *(f"{c}_{end}" for c in INTERVALS for end in ("low", "high")),
    ]
    unscaled = [c for c in listed if scale_of(c) is None and c not in ("target", "seed_id")]
    assert unscaled == []
    assert set(COLUMN_SCALES.values()) <= set(SCALES)


def test_a_scale_reads_alike_on_the_leaderboard_and_the_dialogue_list(app):
    board = get(app, "/").text
    # the baseline's Empathy is 0 and the chat target's 29.5: one decimal both (once "0.000" beside "29.5")
    shown = re.findall(r'sort=empathy">([^<]+)</a>', board)
    assert sorted(shown) == ["0.0", "29.5"]
    assert sorted(re.findall(r'sort=emotion_acc">([^<]+)</a>', board)) == ["0.500", "0.875"]
    assert sorted(re.findall(r'sort=mean_turns">([^<]+)</a>', board)) == ["2.0", "2.0"]
    cell = get(app, f"/dialogues?target={TARGET}&pool={POOL}&sort=empathy").text
    first = cell.split(f'<small class="id">{seed_id(0)}</small>', 1)[1].split("</tr>", 1)[0]
    # a number with its arithmetic is a link to it on the dialogue's page: the text inside the link is the number
    assert re.findall(r'<td class="num">(?:<a [^>]*>)?([^<]+)(?:</a>)?</td>', first)[:8] == [
        "2",  # n_turns
        "2",
        "2",
        "1",  # emotion_correct
        "0.000",  # drift
        "0.100",  # directional_alignment
        "no",  # completed
        "75.0",  # satisfaction
    ]
    baseline = get(app, f"/dialogues?target={BASELINE}&pool={POOL}").text
    assert re.search(
        r'<td class="num"><a [^>]*>3.0</a></td>', baseline
    )  # the baseline's Empathy on ChatSEED 0: 3, written as a score
