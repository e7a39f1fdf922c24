"""`eyt view`'s SpeechEQ pages on the hand-made warehouse (tests/support/explorer_speech_data.py): the item list is
speech.eq_items (filtered, paginated), an item page shows what the build and the targets stored about it, clips
are served with their media type and only when a table names them and they lie in the data directory, and model
text stays text."""

from __future__ import annotations

import html as html_text
import re
from urllib.parse import quote

import pytest

from eyt_dagster.explorer import speech
from eyt_dagster.explorer.app import speech_item_url, speech_url
from eyt_dagster.explorer.queries import PAGE_SIZE

from support.asgi_get import get
from support.explorer_data import build
from support.explorer_fixtures import explorer_fixtures, wh
from support.explorer_speech_data import (
    DISCARDED,
    DISSONANT,
    IMPORTED,
    ITEM,
    LINK,
    MP3,
    N_ITEMS,
    OUTSIDE,
    PERSONA_CONDITION,
    REASONING_HOSTILE,
    RESONANT,
    SPEECH_BASELINE,
    SPEECH_TARGET,
)

pytestmark = pytest.mark.unit

data, app = explorer_fixtures("explorer-speech", build)


def listed(html: str) -> list[str]:
    return [html_text.unescape(m) for m in re.findall(r'href="/speech/item/([^"]+)"', html)]


# -- queries ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"subscale": "interpersonal_empathy"},
        {"composite": "stress_management"},
        {"valence": "Conflict"},
        {"composite": "self_perception", "valence": "Positive"},
    ],
)
def test_the_item_list_is_the_table_filtered(data, filters):
    stored = data[1]["speech.eq_items"]
    expected = sorted(r["dataset_id"] for r in stored if all(r[k] == v for k, v in filters.items()))
    found = speech.items(wh(data), **filters)
    assert found.total == len(expected) and list(found.rows["dataset_id"]) == expected[:PAGE_SIZE]
    if found.total > PAGE_SIZE:
        rest = speech.items(wh(data), page=2, **filters)
        assert list(rest.rows["dataset_id"]) == expected[PAGE_SIZE:]


def test_unknown_filter_values_are_refused(data):
    for filters in ({"subscale": "empathy"}, {"composite": "x' OR 1=1"}, {"valence": "positive"}):
        with pytest.raises(ValueError, match="unknown"):
            speech.items(wh(data), **filters)


def test_an_item_has_its_scenario_accepted_dialogue_tones_contrasts_and_choices(data):
    s = speech.item(wh(data), ITEM)
    assert s is not None and s.scenario_source == "speech.scenarios"
    assert [line["text"] for line in s.lines if line["turn"] != 3] == [f"version 2 line {n}" for n in (1, 2, 4, 5, 6)]
    assert s.lines[2]["text"] == REASONING_HOSTILE and "attempt 2" in s.lines_source
    assert s.lines[3]["clips"] == [
        ("resonant", RESONANT, "low warm slow voice, turn 4"),
        ("dissonant", DISSONANT, "sharp fast loud voice, turn 4"),
    ]
    assert len(s.tones) == 4 and len(s.selection) == 2 and len(s.contrasts) == 4
    stored = [c for c in data[1]["speech.slm_choices"] if c["item_id"] == ITEM]
    assert {t: len(rows) for t, rows in s.choices.items()} == {SPEECH_BASELINE: 8, SPEECH_TARGET: 8}
    assert sum(len(rows) for rows in s.choices.values()) == len(stored)
    first = s.choices[SPEECH_TARGET]
    assert [(c["inference"], c["order"], c["round"]) for c in first[:2]] == [
        ("direct", "flipped", 1),
        ("direct", "flipped", 2),
    ]


def test_an_imported_item_falls_back_to_its_own_row(data):
    s = speech.item(wh(data), IMPORTED)
    assert s is not None and "eq_items" in s.scenario_source and "eq_items" in s.lines_source
    assert s.lines[0]["text"] == "item 1 line 1" and s.lines[0]["tone"] == "tone of line 1"
    assert s.choices == {} and s.tones == []
    assert speech.item(wh(data), "no-such-item") is None


# -- pages ------------------------------------------------------------------------------------------------------


def test_the_item_list_page_filters_and_pages(app, data):
    first = get(app, "/speech")
    assert first.status == 200 and len(listed(first.text)) == PAGE_SIZE and "page 1 of 2" in first.text
    second = get(app, speech_url(page=2)).text
    assert len(listed(second)) == N_ITEMS - PAGE_SIZE and "previous" in second
    conflict = get(app, speech_url(valence="Conflict", composite="interpersonal")).text
    stored = data[1]["speech.eq_items"]
    expected = sorted(
        r["dataset_id"] for r in stored if r["valence"] == "Conflict" and r["composite"] == "interpersonal"
    )
    assert listed(conflict) == expected and '<option value="Conflict" selected>' in conflict
    assert "Interpersonal - Empathy" in first.text  # the subscale filter names the EQ-i scale


@pytest.mark.parametrize(
    "url, status, message",
    [
        (speech_url(subscale="nope"), 400, "unknown subscale 'nope'"),
        (speech_url(page="x"), 400, "page must be a number"),
        (speech_item_url("no-such-item"), 404, "speech.eq_items has no item 'no-such-item'"),
    ],
)
def test_bad_speech_requests(app, url, status, message):
    answer = get(app, url)
    assert answer.status == status and message in html_text.unescape(answer.text)


def test_the_item_page_plays_its_clips_and_shows_every_choice(app):
    answer = get(app, speech_item_url(ITEM))
    assert answer.status == 200
    html = answer.text
    sources = re.findall(r'<audio controls preload="metadata" src="([^"]+)">', html)
    assert sources == [f"/clip/{RESONANT}", f"/clip/{DISSONANT}"] * 2  # turn 4, then turn 6
    for shown in (
        "self-regard under pressure",
        "toxic optimist | impatient evader",
        "version 2 line 6",
        "low warm slow voice, turn 6",
        "bland word: calm",
        "the sharpest mismatch",
        "parse failed",
        "(reply did not parse) no option number in the reply",
        "timeout: no reply",
        "&#10003; right",
        "&#10007; wrong",
    ):
        assert shown in html, shown
    assert "rejected line" not in html  # the version the validator rejected
    assert html.count('class="badge"') == 1  # the embedded baseline's choices
    assert "media-src 'self'" in answer.headers["content-security-policy"]


def test_an_imported_item_page_says_where_its_text_comes_from(app):
    html = get(app, speech_item_url(IMPORTED)).text
    assert "the item&#39;s own text (speech.eq_items)" in html and "No target has chosen on this item" in html


@pytest.mark.parametrize("stored, media", [(RESONANT, "audio/wav"), (DISSONANT, "audio/wav"), (MP3, "audio/mpeg")])
def test_a_named_clip_is_served_with_its_media_type(app, data, stored, media):
    answer = get(app, f"/clip/{quote(stored)}")
    assert answer.status == 200 and answer.headers["content-type"] == media
    assert answer.body == (data[0] / stored).read_bytes()


def refused(data) -> list[str]:
    outside = str(data[0].parent / "outside.wav")
    return [
        f"/clip/{OUTSIDE}",  # named by tts_clips, but outside the data directory
        f"/clip/{outside}",  # the same file by its absolute path (also named)
        f"/clip/{LINK}",  # named, inside, but a symlink that points out
        "/clip/audio/context1.wav",  # named by eq_items, but no such file
        "/clip/cache/model_calls.sqlite",  # a file in the data directory no table names
        "/clip/audio/../audio/resonant.wav",  # a named file, spelled differently
        "/clip/%2e%2e/outside.wav",
        "/clip/..%2Foutside.wav",
        "/clip/%2Fetc%2Fpasswd",
        "/clip//etc/passwd",
        "/clip/",
    ]


def test_anything_else_is_refused(app, data):
    for url in refused(data):
        answer = get(app, url)
        assert answer.status == 404, url
        assert not answer.headers["content-type"].startswith("audio/"), url


def test_model_text_on_the_speech_pages_is_text_only(app):
    html = get(app, speech_item_url(ITEM)).text
    assert html.count("&lt;script&gt;alert(3)&lt;/script&gt;") == 3  # scenario, dialogue line, reasoning
    assert REASONING_HOSTILE not in html
    for page in (html, get(app, "/speech").text):
        tags = {t.lower() for t in re.findall(r"<\s*([a-zA-Z]+)", page)}
        assert not tags & {"script", "img", "iframe", "object", "embed", "svg", "b"}, tags


# -- one target's choices per item, the persona condition, and the build ---------------------------------------


def test_a_targets_choices_are_counted_per_item(data):
    found = speech.items(wh(data), target=SPEECH_TARGET)
    assert found.total == N_ITEMS  # every item is listed; the counts are beside it
    rows = found.rows.set_index("dataset_id")
    # on ITEM (by hand, tests/support/explorer_speech_data.py): 8 choices under "default"; correct:
    # sequential-seeded-1, direct-seeded-1 and -2; one reply did not parse (sequential-seeded-2), one call failed
    assert rows.loc[ITEM, ["choices", "correct", "parse_failed", "errors"]].tolist() == [8, 3, 1, 1]
    [third] = {c["item_id"] for c in data[1]["speech.slm_choices"] if c["condition"] == PERSONA_CONDITION}
    assert rows.loc[third, ["choices", "correct"]].tolist() == [2, 2]  # the two choices under "persona"
    assert rows.drop(index=[ITEM, third])["choices"].eq(0).all()


@pytest.mark.parametrize(
    "condition, outcome, expected",
    [
        ("", "wrong", [ITEM]),
        ("default", "wrong", [ITEM]),
        (PERSONA_CONDITION, "wrong", []),  # both persona choices were right
        ("", "parse_failed", [ITEM]),
        ("", "error", [ITEM]),
    ],
)
def test_the_outcome_filter_keeps_items_with_such_a_choice(data, condition, outcome, expected):
    found = speech.items(wh(data), target=SPEECH_TARGET, condition=condition, outcome=outcome)
    assert list(found.rows["dataset_id"]) == expected and found.total == len(expected)


def test_choice_filters_name_what_is_wrong(data):
    with pytest.raises(ValueError, match="name the target too"):
        speech.items(wh(data), condition="default")
    with pytest.raises(ValueError, match="no choices of target 'nobody'"):
        speech.items(wh(data), target="nobody")
    with pytest.raises(ValueError, match="unknown condition 'calm'; the conditions are default, persona"):
        speech.items(wh(data), target=SPEECH_TARGET, condition="calm")
    with pytest.raises(ValueError, match="unknown outcome"):
        speech.items(wh(data), target=SPEECH_TARGET, outcome="bad")


def test_the_item_list_page_with_a_target_and_the_item_page_by_condition(app):
    html = get(app, speech_url(target=SPEECH_TARGET, condition="default", outcome="wrong")).text
    assert listed(html) == [ITEM] and "condition default" in html and "<th>correct</th>" in html
    item = get(app, speech_item_url(ITEM) + "?condition=" + PERSONA_CONDITION).text
    assert "No target has chosen on this item yet" in item  # ITEM's choices are all under "default"
    assert "condition persona only" in item
    every = get(app, speech_item_url(ITEM)).text
    assert every.count("speech-target direct") == 4


def test_the_build_page_lists_regenerated_and_discarded_pairs_with_why(data, app):
    from eyt_dagster.explorer import builder

    found = builder.build(wh(data))
    pairs = [(p["scenario_id"], p["turn"], p["tries"], p["outcome"], p["is_item"]) for p in found.pairs]
    assert pairs == [(DISCARDED, 4, 3, "discarded", False), (ITEM, 4, 2, "kept", True), (ITEM, 6, 2, "kept", True)]
    discarded = found.pairs[0]["attempts"]
    assert [a["why"] for a in discarded] == [f"total {t} of 8, did not pass; no points for pitch" for t in (2, 3, 4)]
    assert found.pairs[1]["attempts"][1]["why"] == "total 6 of 8, passed"
    assert [p["scenario_id"] for p in builder.build(wh(data), kind="discarded").pairs] == [DISCARDED]
    assert len(builder.build(wh(data), kind="regenerated").pairs) == 3
    assert [t["rejection_reason"] for t in found.tones] == ["bland word: calm"] * 2
    assert found.summary[0]["pairs_discarded"] == 1
    with pytest.raises(ValueError, match="unknown kind"):
        builder.build(wh(data), kind="all")
    html = get(app, "/speech/build").text
    assert "3 pair(s)" in html and "no points for pitch" in html and "not an item" in html
    assert f'href="{speech_item_url(ITEM)}#turn-4"' in html
    assert [(d["scenario_id"], d["attempt"], d["validator_note"]) for d in found.drafts] == [
        (ITEM, 1, "turn 4 reads the same in either tone")
    ]
    assert "turn 4 reads the same in either tone" in html and "bland word: calm" in html
    assert get(app, "/speech/build?subscale=nope").status == 400
