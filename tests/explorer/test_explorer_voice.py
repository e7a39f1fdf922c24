"""The spoken EYT-Bench's pages (/voice, /voice/dialogue/..) explain their numbers: on a warehouse whose voice tables
the pipeline's functions wrote (tests/support/explorer_explain_data.py `voice_tables`, which spells out the
hand-computed values), each explanation's value is the stored number to the bit and the hand value, the pages show
the steps with the actual values, a cell's per-dialogue numbers open their arithmetic on the dialogue's page in one
click, and a model's text stays text."""

from __future__ import annotations

import html
import re

import pytest
from markupsafe import escape

from eyt_dagster.core.explorer_links import voice_dialogue_path, voice_path
from eyt_dagster.explorer import explain_voice, voice
from eyt_dagster.eyt_bench.taxonomy import PAIRED_METRICS
from eyt_dagster.eyt_voice import gap, prosody_probe

from support.asgi_get import get
from support.explorer_data import HOSTILE
from support.explorer_explain_data import ASR_HOSTILE, E1, E2, POOL, VOICE_TARGET, build_explain
from support.explorer_fixtures import explorer_fixtures, wh

pytestmark = pytest.mark.unit

data, app = explorer_fixtures("voice-explain", build_explain)


def blocks(page: str) -> list[str]:
    """Each explanation of a page as plain text, in page order."""
    found = re.findall(r'<details class="explain"[^>]*><summary[^>]*>[?]</summary>(.*?)</details>', page, re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", b)) for b in found]


def one(page: str, first_line: str) -> str:
    found = [b for b in blocks(page) if b.strip().startswith(first_line)]
    assert len(found) == 1, (first_line, [b.strip().splitlines()[0] for b in blocks(page)])
    return found[0]


def test_the_gap_asr_and_prosody_numbers_are_their_explanations_values(data):
    frames = data[1]
    scores = frames["voice.dialogue_scores"]
    stored = frames["voice.voice_gap"].set_index("metric")
    empathy = gap.explained_gap(*gap.paired_values(scores, "empathy"), "empathy")
    e1 = scores[(scores["seed_id"] == E1) & (scores["mode"] == "text")]["empathy"].iloc[0]  # 69.44 both ways
    hand = {"text": (e1 + 50) / 2, "voice": (e1 + 25) / 2, "delta": (0 - 25) / 2}
    hand["preserve_ratio"] = hand["voice"] / hand["text"]
    for name, value in hand.items():
        assert empathy[name].number() == stored.loc["empathy", name] == pytest.approx(value), name
    ficr = gap.explained_gap(*gap.paired_values(scores, "ficr"), "ficr")
    assert [ficr[n].number() for n in gap.GAP_NUMBERS] == [0.5, 0.0, -0.5, 0.0]
    assert [stored.loc["ficr", n] for n in gap.GAP_NUMBERS] == [0.5, 0.0, -0.5, 0.0]
    heard = gap.heard_turns(frames["voice.voiced_turns"])
    assert gap.explained_error_rate(heard).number() == frames["voice.asr_errors"]["wer"].iloc[0] == 4 / 70
    effect = prosody_probe.explained_prosody(prosody_probe.answered_probes(frames["voice.prosody_probe"]))
    row = frames["voice.prosody_effect"].iloc[0]
    assert effect["acc_toned"].number() == row["acc_toned"] == 3 / 5
    assert effect["acc_plain"].number() == row["acc_plain"] == 2 / 5
    assert effect["delta"].number() == row["delta"] == 0.2 and row["n_turns"] == 5


def test_every_voice_explanation_agrees_with_its_stored_number(data):
    shown = explain_voice.report(wh(data), voice.report(wh(data)))
    # each paired metric's four numbers, the WER, the prosody effect's three
    assert len(shown) == len(PAIRED_METRICS) * 4 + 1 + 3
    assert all(s.agrees for s in shown.values()), {k: (s.stored, s.value) for k, s in shown.items() if not s.agrees}
    found = voice.voiced(wh(data), VOICE_TARGET, E2)
    assert found is not None
    numbers = explain_voice.dialogue(wh(data), found)
    assert set(numbers) == {f"{m}_{n}" for m in ("voice", "text") for n in explain_voice.DIALOGUE_NUMBERS}
    assert all(s.agrees for s in numbers.values())
    assert numbers["voice_empathy"].value == "25" and numbers["text_empathy"].value == "50"


def test_the_voice_page_shows_each_numbers_arithmetic(app):
    page = get(app, voice_path()).text
    delta = one(page, "empathy: voice - text (mean over the pairs) = -12.5")
    for written in (
        f"ChatSEED {E2}: voice - text: 25 - 50 = -25",
        "the 2 difference(s), summed: 0 + -25 = -25",
        "mean over those ChatSEEDs: -25 / 2 = -12.5",
        "the 2 pair(s) resampled with replacement",
        "95% interval: the 2.5th and 97.5th percentiles",
    ):
        assert written in delta, written
    assert "69.4444 + 25 = 94.4444" in one(page, "empathy, voice (mean over the pairs) = 47.2222")
    assert "47.2222 / 59.7222 = 0.790698" in one(page, "empathy: voice / text = 0.790698")
    assert "the dialogue's own ratio" in one(page, "emotion_acc, text (mean over the pairs)")
    wer = one(page, "word error rate (WER) = 0.0571429")
    assert "1 + 0 + 2 + 0 + 0 + 1 + 0 = 4" in wer and "10 + 8 + 12 + 10 + 9 + 10 + 11 = 70" in wer
    assert "4 / 70 = 0.0571429" in wer
    assert "turns whose gold emotion was heard in the turn's tone, of the 5: 3 / 5 = 0.6" in one(
        page, "emotion accuracy, toned = 0.6"
    )
    assert "the 5 difference(s), summed: 0 + 1 + 0 + 1 + -1 = 1" in one(
        page, "emotion accuracy: toned - plain (mean over the turns) = 0.2"
    )
    assert "The stored number" not in page


def test_a_voiced_dialogues_number_opens_its_arithmetic_in_one_click(app):
    cell = get(app, voice_path(target=VOICE_TARGET, pool=POOL)).text
    for column in ("voice_empathy", "text_empathy", "voice_completed", "text_completed"):
        link = voice_dialogue_path(VOICE_TARGET, E1, explain=column)
        assert f'href="{html.escape(link)}"' in cell, column
    page = get(app, voice_dialogue_path(VOICE_TARGET, E1, explain="voice_completed")).text
    opened = dict(re.findall(r'<span class="score" id="score-(\w+)">[^<]*<details class="explain"( open)?>', page))
    assert set(opened) == {f"{m}_{n}" for m in ("voice", "text") for n in explain_voice.DIALOGUE_NUMBERS}
    assert {k for k, v in opened.items() if v} == {"voice_completed"}
    assert "1 of 2: 1 x 2 > 2 = no" in one(page, "final intent completed (majority of the judges) = no")
    assert "2 of 2: 2 x 2 > 2 = yes" in one(page, "final intent completed (majority of the judges) = yes")
    heard = one(get(app, voice_dialogue_path(VOICE_TARGET, E2)).text, "empathy of this dialogue (Eq. 3, 0-100) = 25")
    assert "mean per sub-indicator (0.25, 0.25, 0.25, 0.25, 0.25)" in heard and "1.25 x 20 = 25" in heard


def test_a_models_text_on_the_voice_pages_stays_text(app):
    page = get(app, voice_dialogue_path(VOICE_TARGET, E1)).text
    assert str(escape(ASR_HOSTILE)) in page and HOSTILE not in page
    for url in (voice_path(), voice_path(target=VOICE_TARGET, pool=POOL)):
        assert HOSTILE not in get(app, url).text
    tags = {t.lower() for t in re.findall(r"<\s*([a-zA-Z]+)", page)}
    assert not tags & {"script", "img", "iframe", "object", "embed", "svg"}, tags
