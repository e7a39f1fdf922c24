"""`eyt view` as a subprocess on a free port, walked in headless Chromium: leaderboard -> a cell's dialogues -> one
dialogue -> one call, a deep link opened directly, leaderboard -> paired differences -> side by side, the SpeechEQ
items -> one item whose clip loads and plays, the SEQ leaderboard -> one subscale, a screenshot of each view, and a clean exit on SIGTERM. The screenshots go
to the test's temporary folder; with EYT_DOC_SCREENSHOTS=1 they replace the ones docs/explorer.md shows. A number's
arithmetic opens on a click (a dialogue's, a leaderboard cell's, the paired differences' mean, a subscale's Acc_traj,
the voice gap). And every kind of page fits a 1,400 px window, with every number's arithmetic opened too: a table
wider than that scrolls inside its own box, its first column sticky."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from eyt_dagster.core import explorer_links
from eyt_dagster.table_registry import catalog
from resources.models.run_progress import StepProgress
from resources.storage.warehouse import store_frame

from support.corrected_data import judge_corrected
from support.explorer_data import BASELINE, FAILED_SEED, POOL, TARGET, build, seed_id
from support.explorer_explain_data import E1, SUBSCALE, VOICE_TARGET, build_explain, store_voice
from support.explorer_explain_data import POOL as EXPLAINED_POOL
from support.explorer_explain_data import TARGET as EXPLAINED
from support.explorer_speech_data import IMPORTED, ITEM, SPEECH_TARGET
from support.ui_browser import Chromium, chromium_path, stop_group

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DOC_SHOTS = ROOT / "docs" / "explorer"


def start_view(data: Path, log: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "EYT_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    out = open(log, "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "eyt_dagster.ops.cli", "view"],
        cwd=ROOT,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"http://127\.0\.0\.1:\d+/", log.read_text())
        if found:
            return process, found.group(0).rstrip("/")
        assert process.poll() is None, log.read_text()
        time.sleep(0.2)
    stop_group(process)
    raise AssertionError(f"eyt view printed no URL: {log.read_text()}")


def follow(browser: Chromium, selector: str) -> str:
    """Open the first link matching `selector`; return its URL."""
    href = browser.evaluate(f"document.querySelector({selector!r}).href")
    browser.navigate(href)
    return href


@pytest.mark.slow
def test_eyt_view_in_headless_chromium(tmp_path):
    if chromium_path() is None:
        pytest.fail("Chromium is not installed: `.ci/run` installs Debian's `chromium`")
    data = tmp_path / "data"
    data.mkdir()
    build(data)
    shots = DOC_SHOTS if os.environ.get("EYT_DOC_SCREENSHOTS") == "1" else tmp_path / "shots"
    shots.mkdir(exist_ok=True)
    process, base = start_view(data, tmp_path / "view.log")
    try:
        with Chromium(tmp_path / "chromium", width=1280, height=820) as browser:
            browser.navigate(base + "/")
            browser.wait_for_text(["EYT-Bench leaderboard", TARGET, "baseline"])
            browser.screenshot(shots / "leaderboard.png")

            follow(browser, f'a[href^="/dialogues?target={TARGET}&pool={POOL}&sort=empathy"]')
            browser.wait_for_text([f"{TARGET} on {POOL}", "61 dialogue(s)", "page 1 of 2", "empathy"])
            browser.screenshot(shots / "dialogues.png")

            follow(browser, f'a[href$="{seed_id(1).replace(":", "%3A")}"]')
            text = browser.wait_for_text(["Persona and ChatSEED", "final intent of dialogue 1", "Turn 2", "judge-a"])
            assert "reply 2 of dialogue 1" in text
            browser.screenshot(shots / "dialogue.png")
            deep = browser.evaluate("location.href")

            follow(browser, 'a.call[href^="/call/"]')
            browser.wait_for_text(["Raw reply", "Ledger", "chat_seed:" + seed_id(1)])
            browser.screenshot(shots / "call.png")

            browser.navigate(deep)  # a deep link opens by itself
            browser.wait_for_text(["Persona and ChatSEED", seed_id(1)])

            browser.navigate(base + "/")  # the leaderboard's compare form: A and B preselected, by empathy
            browser.wait_for_text(["Compare two targets"])
            browser.evaluate("document.querySelector('form.compare').submit()")
            browser.wait_for_text([f"{TARGET} vs {BASELINE}", "12 ChatSEED(s) both targets finished", "-25.0"])
            browser.screenshot(shots / "pairs.png")
            browser.evaluate("document.querySelector('span.mean summary').click()")  # the mean's arithmetic
            text = browser.wait_for_text(["mean paired difference", "the 12 difference(s), summed", "-168 / 12"])
            assert "The stored number" not in text
            browser.screenshot(shots / "explain_pairs.png")

            follow(browser, "a.compare")
            browser.wait_for_text([f"{seed_id(11)} side by side", "differ", "Turn 2", "empathy_support"])
            browser.screenshot(shots / "compare.png")

            browser.navigate(base + "/")  # a cell's judges, from the leaderboard
            browser.wait_for_text(["EYT-Bench leaderboard"])
            follow(browser, f'a[href^="/judges?target={TARGET}"]')
            browser.wait_for_text(["Where the judges disagree", TARGET])
            browser.screenshot(shots / "judges.png")

            follow(browser, 'header a[href="/speech"]')
            browser.wait_for_text(["SpeechEQ items", "60 item(s)", ITEM])
            browser.screenshot(shots / "speech.png")

            follow(browser, f'a[href="/speech/item/{ITEM}"]')
            browser.wait_for_text(["Scenario", "resonant clip", "Choices", "parse failed"])
            duration = browser.wait_until(
                "document.querySelector('audio').duration",
                lambda d: isinstance(d, (int, float)) and 0 < d < 10,
                "loaded clip (a finite duration)",
            )
            assert duration == pytest.approx(0.6, abs=0.05)  # the resonant clip's length
            played = browser.call(  # as a click would start it: Chromium lets only a user's gesture play sound
                "Runtime.evaluate",
                expression="(() => { const a = document.querySelector('audio');"
                " return a.play().then(() => new Promise(r => setTimeout(() => r(a.currentTime), 300)),"
                " e => `${e.name}: ${e.message}`); })()",
                returnByValue=True,
                awaitPromise=True,
                userGesture=True,
            )["result"].get("value")
            assert isinstance(played, (int, float)) and played > 0, played
            browser.evaluate("document.getElementById('turn-4').scrollIntoView()")  # the clips in view
            browser.screenshot(shots / "speech_item.png")

            follow(browser, 'header a[href="/seq"]')  # SpeechEQ's results: the SEQ leaderboard, then a subscale
            browser.wait_for_text(["SEQ leaderboard", "persona condition default", "chance", "baseline", "Self-Regard"])
            browser.screenshot(shots / "seq.png")
            follow(browser, 'a[href^="/seq/subscale/"]')
            browser.wait_for_text(["Self-Regard", "Targets on this subscale", "Items", ITEM])
            browser.screenshot(shots / "seq_subscale.png")

            browser.navigate(base + "/speech")
            browser.wait_for_text(["SpeechEQ items", "How the items were built"])
            follow(browser, 'a[href="/speech/build"]')
            browser.wait_for_text(["How the SpeechEQ items were built", "no points for pitch", "not an item"])
            browser.screenshot(shots / "speech_build.png")

            with StepProgress(  # a step running now, as a run's worker records it
                data,
                run_id="a1b2c3d4-running",
                step="dialogue__dialogue_turns",
                job="eyt_dialogues",
                unit="dialogues",
                message=lambda d, t: f"dialogues done: {d} of {t}",
                partition=f"{POOL}|{TARGET}",
                log_every=1000.0,
            ) as on_done:
                on_done(0, 65)
                on_done(23, 65)
                browser.navigate(base + "/running")
                browser.wait_for_text(["Running now", "23 of 65 dialogues"], timeout=15)
                browser.screenshot(shots / "running.png")
    finally:
        used, left = stop_group(process, timeout=20)
    assert used.name == "SIGTERM" and process.returncode == 0 and not left, (used, process.returncode, left)
    views = ("leaderboard", "dialogues", "dialogue", "call", "pairs", "explain_pairs", "compare", "judges", "speech")
    for name in (*views, "speech_item", "seq", "seq_subscale", "speech_build", "running"):
        assert 5_000 < (shots / f"{name}.png").stat().st_size < 600_000


WINDOW = 1400  # px: no page may be wider; a table wider than that scrolls inside its own box


def every_page(base: str) -> list[str]:
    """One address of every kind of page on the test warehouse (an error page too), a call's from a dialogue page."""
    dialogue = explorer_links.dialogue_path(TARGET, seed_id(1))
    with urllib.request.urlopen(base + dialogue, timeout=30) as answer:
        key = re.search(r'href="/call/([0-9a-f]{64})', answer.read().decode())
    assert key is not None
    return [
        "/",
        explorer_links.leaderboard_path(target=TARGET),
        explorer_links.dialogues_path(target=TARGET, pool=POOL),
        explorer_links.dialogues_path(target=BASELINE, pool=POOL, sort="empathy", order="desc"),
        dialogue,
        explorer_links.dialogue_path(TARGET, seed_id(0)),  # hostile text in every field a model writes
        explorer_links.dialogue_path(TARGET, FAILED_SEED),
        explorer_links.call_path(key.group(1)),
        explorer_links.compare_path(seed_id(0), [TARGET, BASELINE]),
        explorer_links.pairs_path(pool=POOL, a=TARGET, b=BASELINE, metric="empathy"),
        explorer_links.judges_path(target=TARGET, pool=POOL),
        explorer_links.speech_path(),
        explorer_links.speech_path(target=SPEECH_TARGET),
        explorer_links.speech_item_path(ITEM),
        explorer_links.speech_item_path(IMPORTED),
        explorer_links.speech_build_path(),
        explorer_links.seq_path(),
        explorer_links.seq_path(condition="persona", sort="acc1", order="asc"),
        explorer_links.seq_subscale_path("self_perception_self_regard"),
        explorer_links.voice_path(),
        explorer_links.voice_path(target=VOICE_TARGET, pool=EXPLAINED_POOL),
        explorer_links.voice_dialogue_path(VOICE_TARGET, E1, explain="voice_empathy"),
        explorer_links.sequential_path(),
        explorer_links.costs_path(),
        "/running",
        "/dialogue/nobody/here",  # the error page
    ]


def open_page(browser: Chromium, url: str) -> None:
    """Navigate and wait until the new document has loaded (the old one is marked first, so it is not mistaken for
    the new one)."""
    browser.evaluate("document.title = '\\u2026leaving'")
    browser.navigate(url)
    browser.wait_until(
        "document.readyState === 'complete' && document.title !== '\\u2026leaving'", bool, f"loaded {url}", timeout=30
    )


@pytest.mark.slow
def test_every_page_fits_a_1400_px_window(tmp_path):
    if chromium_path() is None:
        pytest.fail("Chromium is not installed: `.ci/run` installs Debian's `chromium`")
    data = tmp_path / "data"
    data.mkdir()
    board = build(data)["dialogue.leaderboard"]
    store_voice(data)  # the spoken EYT-Bench's tables, whose numbers have their arithmetic
    # the chat target's Empathy corrected with human labels: the leaderboard's numbers carry their h / j markers
    corrected = judge_corrected(board, {(TARGET, POOL, "empathy"): (31.26, 25.5, 37.0, 12)})
    store_frame(data, "dialogue.judge_corrected", corrected, catalog=catalog())
    process, base = start_view(data, tmp_path / "view.log")
    widths, scrolling, opened, marks = {}, {}, {}, []
    try:
        with Chromium(tmp_path / "chromium", width=WINDOW, height=900) as browser:
            for path in every_page(base):
                open_page(browser, base + path)
                widths[path] = browser.evaluate("document.documentElement.scrollWidth")
                if path == "/":  # each marker drawn, inside its number's cell
                    marks = browser.evaluate(
                        "[...document.querySelectorAll('table.board sup.mark')].map(m => { const r ="
                        " m.getBoundingClientRect(), c = m.closest('td').getBoundingClientRect();"
                        " return [m.textContent, r.width > 0 && r.height > 0, r.left >= c.left && r.right <= c.right"
                        " && r.top >= c.top - 1 && r.bottom <= c.bottom + 1]; })"
                    )
                # the tables wider than their box: they scroll inside it, their first column sticky
                scrolling[path] = browser.evaluate(
                    "[...document.querySelectorAll('table')].filter(t => t.scrollWidth > t.clientWidth + 1)"
                    ".map(t => [getComputedStyle(t).overflowX,"
                    " getComputedStyle(t.querySelector('tr > :first-child')).position])"
                )
                # every number's arithmetic opened at once: each stays inside the window too
                opened[path] = browser.evaluate(
                    "(() => { const all = [...document.querySelectorAll('details.explain')];"
                    " all.forEach(d => { d.open = true; }); return [all.length, document.documentElement.scrollWidth]; })()"
                )
    finally:
        stop_group(process, timeout=20)
    assert {p: w for p, w in widths.items() if w > WINDOW} == {}, widths
    # 2 targets x 5 judge-made numbers: one corrected (h), the other nine judge only (j, the table mixes both)
    assert sorted(m[0] for m in marks) == ["h"] + ["j"] * 9, marks
    assert all(visible and inside for _, visible, inside in marks), marks
    assert {p: o for p, o in opened.items() if o[1] > WINDOW} == {}, opened
    explained = {p for p, (n, _) in opened.items() if n}  # the pages with a number's arithmetic, all of them checked
    assert {
        "/",
        explorer_links.voice_path(),
        explorer_links.seq_subscale_path("self_perception_self_regard"),
    } <= explained
    assert explorer_links.pairs_path(pool=POOL, a=TARGET, b=BASELINE, metric="empathy") in explained
    boxes = [box for found in scrolling.values() for box in found]
    assert boxes, "no table of the test warehouse is wider than the window: nothing shows the tables scroll"
    assert all(box == ["auto", "sticky"] for box in boxes), scrolling


@pytest.mark.slow
def test_a_number_opens_its_arithmetic_in_headless_chromium(tmp_path):
    """On a warehouse the pipeline's functions wrote (support/explorer_explain_data.py): a dialogue's Empathy and a
    leaderboard cell's mean each open their arithmetic on a click, without a script (a <details> element)."""
    if chromium_path() is None:
        pytest.fail("Chromium is not installed: `.ci/run` installs Debian's `chromium`")
    data = tmp_path / "data"
    data.mkdir()
    build_explain(data)
    shots = DOC_SHOTS if os.environ.get("EYT_DOC_SCREENSHOTS") == "1" else tmp_path / "shots"
    shots.mkdir(exist_ok=True)
    process, base = start_view(data, tmp_path / "view.log")
    try:
        with Chromium(tmp_path / "chromium", width=1280, height=820) as browser:
            browser.navigate(base + explorer_links.dialogue_path(EXPLAINED, E1))
            browser.wait_for_text(["Final-intent verdicts", "Empathy 69.4"], absent=["weights renormalised"])
            browser.evaluate("document.getElementById('score-empathy').scrollIntoView(); window.scrollBy(0, -70)")
            browser.evaluate("document.querySelector('#score-empathy summary').click()")
            text = browser.wait_for_text(["weights renormalised over the judged turns 1, 3, 4", "3.47222 x 20"])
            assert "mean per sub-indicator (1, 0.75, 1, 0.5, 0)" in text and "The stored number" not in text
            browser.screenshot(shots / "explain.png")

            browser.navigate(base + "/")
            browser.wait_for_text(["EYT-Bench leaderboard", EXPLAINED], absent=["resamples of the"])
            opened = browser.evaluate(
                "(() => { const d = [...document.querySelectorAll('details.explain')]"
                ".find(e => e.querySelector('.what').textContent.startsWith('empathy: mean'));"
                " d.querySelector('summary').click(); return d.open; })()"
            )
            assert opened is True
            browser.wait_for_text(["69.4444 + 50", "not counted: 1 unfinished dialogue(s)", "default_rng(7)"])
            browser.screenshot(shots / "explain_leaderboard.png")

            browser.navigate(base + explorer_links.seq_subscale_path(SUBSCALE))  # one subscale's Acc_traj
            browser.wait_for_text(["Targets on this subscale", "t9"], absent=["items with both rounds right"])
            browser.evaluate("document.querySelector('table.board tbody tr td.num details.explain summary').click()")
            text = browser.wait_for_text(["items with both rounds right, over the items scored", "8 / 8 = 1"])
            assert "The stored number" not in text
            browser.screenshot(shots / "explain_seq_subscale.png")

            browser.navigate(base + explorer_links.voice_path())  # the gap of hearing: Empathy's delta
            browser.wait_for_text(["The text-to-voice gap", VOICE_TARGET], absent=["the 2 difference(s), summed"])
            opened = browser.evaluate(
                "(() => { const d = [...document.querySelectorAll('details.explain')]"
                ".find(e => e.querySelector('.what').textContent.startsWith('empathy: voice - text'));"
                " d.scrollIntoView(); window.scrollBy(0, -120); d.querySelector('summary').click(); return d.open; })()"
            )
            assert opened is True
            browser.wait_for_text(["25 - 50 = -25", "-25 / 2 = -12.5", "resampled with replacement"])
            browser.screenshot(shots / "explain_voice.png")
    finally:
        used, left = stop_group(process, timeout=20)
    assert used.name == "SIGTERM" and process.returncode == 0 and not left, (used, process.returncode, left)
    for name in ("explain", "explain_leaderboard", "explain_seq_subscale", "explain_voice"):
        assert 5_000 < (shots / f"{name}.png").stat().st_size < 600_000
