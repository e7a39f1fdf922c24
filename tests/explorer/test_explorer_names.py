"""Dialogues named by persona and topic (eyt_dagster/explorer/dialogue_names.py): the name is made from what the warehouse
holds about the ChatSEED (dialogue.chat_seeds' topic, dialogue.persona_pool's attributes), every page that lists or
titles dialogues shows it with the id in small print, the links keep the id, and a hostile topic stays text."""

from __future__ import annotations

import re

import pytest

from eyt_dagster.explorer.app import compare_url, dialogue_url, pairs_url
from eyt_dagster.explorer.dialogue_names import cut, dialogue_name, persona_words, seed_names

from support.asgi_get import get
from support.explorer_data import BASELINE, FAILED_SEED, HOSTILE, OCCUPATIONS, POOL, TARGET, TOPICS, build, seed_id
from support.explorer_fixtures import explorer_fixtures, wh

pytestmark = pytest.mark.unit

data, app = explorer_fixtures("explorer-names", build)


def name_of(i: int) -> str:
    """The name the fixture's ChatSEED i gets: its persona is a woman with one of three occupations."""
    return f"female {OCCUPATIONS[i % 3].replace('_', ' ')} \u00b7 {TOPICS[i % len(TOPICS)]}"


@pytest.mark.parametrize(
    "attributes, text, shown",
    [
        (
            {"age": 34, "sex": "Female", "occupation": "registered_nurse", "city": "Toledo"},
            "",
            "34-year-old female registered nurse",
        ),
        (
            {"age": "41", "gender": "Male", "job_title": "Data analyst", "short_persona": "A quiet analyst"},
            "",
            "41-year-old male Data analyst",
        ),
        ({"name": "\u674e\u660e", "sex": "male", "age_group": "25-34"}, "", "\u674e\u660e"),  # CPED: the speaker's name
        ({"sex": "Female"}, "A retired teacher who loves birds.", "A retired teacher who loves birds."),
        ({"short_persona": "A night-shift baker"}, "longer text", "A night-shift baker"),
        ({"age": float("nan"), "sex": "Female"}, "", "female"),  # nothing more to go by
        ({}, None, ""),
    ],
)
def test_a_persona_in_a_few_words(attributes, text, shown):
    assert persona_words(attributes, text) == shown


def test_a_name_is_persona_and_topic_cut_short():
    who = {"age": 52, "sex": "Male", "occupation": "high_school_teacher"}
    assert dialogue_name("a new job", None, who) == "52-year-old male high school teacher \u00b7 a new job"
    assert dialogue_name(None, None, who) == "52-year-old male high school teacher"
    assert dialogue_name("a new job", None, {}) == "a new job"
    assert dialogue_name(None, None, {}) is None and dialogue_name("  ", "", {}) is None
    long = "a very long topic " * 10
    named = dialogue_name(long, None, who)
    assert named is not None and named.endswith("\u2026") and len(named) <= 60 + 3 + 60
    assert cut("one  two\nthree", 40) == "one two three" and cut("abcdefghij", 5) == "abcd\u2026"


def test_the_names_of_a_pools_chatseeds(data):
    names = seed_names(wh(data), POOL)
    assert names[seed_id(1)] == name_of(1) and names[seed_id(2)] == name_of(2)
    assert names[FAILED_SEED] == name_of(60)
    assert names[seed_id(0)].startswith("female registered nurse \u00b7 <script>")  # a model's topic, as it is
    assert set(seed_names(wh(data), POOL, [seed_id(1), "nemotron_usa:nobody"])) == {seed_id(1)}
    assert seed_names(wh(data), POOL, []) == {} and seed_names(wh(data), "elsewhere") == {}


def test_every_page_that_lists_or_titles_dialogues_names_them(app):
    small = f'<small class="id">{seed_id(1)}</small>'
    cell = get(app, f"/dialogues?target={TARGET}&pool={POOL}").text
    link = f'<a href="{dialogue_url(TARGET, seed_id(1))}">{name_of(1)}</a> {small}'
    assert link in cell
    dialogue = get(app, dialogue_url(TARGET, seed_id(1))).text
    assert f"&middot; {name_of(1)} {small}" in dialogue
    assert f"<title>{name_of(1)} with {TARGET}</title>" in dialogue
    side = get(app, compare_url(seed_id(1), [TARGET, BASELINE])).text
    assert f"<h1>{name_of(1)} {small} side by side" in side
    paired = get(app, pairs_url(pool=POOL, a=TARGET, b=BASELINE, metric="empathy")).text
    assert f"<td>{name_of(11)} " in paired and f'<small class="id">{seed_id(11)}</small>' in paired


def test_a_hostile_topic_in_a_name_is_text(app):
    cell = get(app, f"/dialogues?target={TARGET}&pool={POOL}").text
    row = cell.split(f'href="{dialogue_url(TARGET, seed_id(0))}">', 1)[1].split("</td>", 1)[0]
    assert row.startswith("female registered nurse \u00b7 &lt;script&gt;alert(1)&lt;/script&gt;")
    assert not re.search(r"<(script|img)\b", cell)
    assert HOSTILE not in cell
