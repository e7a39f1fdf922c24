"""`eyt view --export` as a subprocess, its export opened from file:// in headless Chromium: leaderboard -> a cell's
dialogues -> one dialogue -> side by side -> the SpeechEQ items -> one item whose copied clip loads -> the SEQ
leaderboard (the navigation's link) -> one subscale -> the spoken EYT-Bench's report -> a voice cell -> one voiced
dialogue, with the stylesheet applied, no console error or Content-Security-Policy violation on the way, no request
leaving file://, and a script added to a page refused by the policy the page carries. The screenshot goes to the
test's temporary folder; with EYT_DOC_SCREENSHOTS=1 it replaces the one docs/explorer.md shows."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eyt_dagster.explorer import export_links

from support.explorer_data import BASELINE, POOL, TARGET, build, seed_id
from support.explorer_explain_data import VOICE_TARGET, store_voice
from support.explorer_speech_data import ITEM, SPEECH_TARGET
from support.ui_browser import Chromium, chromium_path

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DOC_SHOTS = ROOT / "docs" / "explorer"


def follow(browser: Chromium, selector: str) -> str:
    """Open the first link matching `selector`; return its URL (a file:// one)."""
    href = browser.evaluate(f"document.querySelector({selector!r}).href")
    assert href.startswith("file://"), href
    browser.navigate(href)
    return href


def problems(events: list[dict]) -> list[str]:
    """Console errors, exceptions, CSP violations (Chromium logs them as errors) and requests that are not
    file:// (data: URLs are Chromium's own media-control icons)."""
    found = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"log: {params['entry'].get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append(f"console: {params.get('args')}")
        elif method == "Runtime.exceptionThrown":
            found.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith(("file://", "data:")):
                found.append(f"request: {url}")
        elif method == "Network.loadingFailed":
            found.append(f"failed load: {params.get('errorText')}")
    return found


@pytest.mark.slow
def test_the_export_opens_from_file_in_headless_chromium(tmp_path):
    if chromium_path() is None:
        pytest.fail("Chromium is not installed: `.ci/run` installs Debian's `chromium`")
    data = tmp_path / "data"
    data.mkdir()
    build(data)
    store_voice(data)  # a spoken EYT-Bench target on the same pool
    out = tmp_path / "review export"  # a space in the path: the links must still work
    env = {**os.environ, "EYT_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "eyt_dagster.ops.cli", "view", "--export", str(out)]
    command += ["--target", TARGET, "--target", BASELINE, "--target", SPEECH_TARGET, "--target", VOICE_TARGET]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"eyt view: open {out / 'index.html'}" in done.stdout and time.monotonic() - started < 300
    shots = DOC_SHOTS if os.environ.get("EYT_DOC_SCREENSHOTS") == "1" else tmp_path / "shots"
    shots.mkdir(exist_ok=True)
    with Chromium(tmp_path / "chromium", width=1280, height=820) as browser:
        browser.events = []
        browser.call("Log.enable")
        browser.call("Network.enable")
        browser.navigate((out / "index.html").as_uri())
        browser.wait_for_text(["EYT-Bench leaderboard", "A static export of the data directory data", "baseline"])
        header = browser.evaluate("getComputedStyle(document.querySelector('header')).backgroundColor")
        assert header == "rgb(35, 48, 61)"  # the copied stylesheet applies under the policy
        browser.screenshot(shots / "export.png")

        follow(browser, 'a[href^="cells/chat-target-"]')
        browser.wait_for_text([f"{TARGET} on {POOL}", "61 dialogue(s)", "page 1 of 2", "fixed selection"])

        follow(browser, f'a[href*="-{export_links.slug(seed_id(1))}-"]')
        browser.wait_for_text(["Persona and ChatSEED", "final intent of dialogue 1", "Turn 2", "judge-a"])

        follow(browser, "a.compare")
        browser.wait_for_text([f"{seed_id(1)} side by side", "differ", "Turn 2", BASELINE])

        follow(browser, "header a:nth-of-type(2)")
        browser.wait_for_text(["SpeechEQ items", "60 item(s)", ITEM])

        follow(browser, f'a[href="{export_links.file_name(("speech_item", ITEM)).split("/")[-1]}"]')
        browser.wait_for_text(["Scenario", "resonant clip", "Choices", SPEECH_TARGET])
        duration = browser.wait_until(
            "document.querySelector('audio').duration",
            lambda d: isinstance(d, (int, float)) and 0 < d < 10,
            "loaded clip (a finite duration)",
        )
        assert duration == pytest.approx(0.6, abs=0.05)  # the resonant clip's length
        assert browser.evaluate("document.querySelector('audio').src").startswith((out / "clips").as_uri())

        follow(browser, 'header a[href$=".html"][href*="seq/leaderboard-"]')  # the navigation's SEQ leaderboard
        browser.wait_for_text(["SEQ leaderboard", "persona condition default", "chance", SPEECH_TARGET])
        follow(browser, 'a[href^="interpersonal-empathy-"]')  # one of its subscales, exported beside it
        browser.wait_for_text(["Empathy", "Targets on this subscale", "Items"])
        follow(browser, 'header a[href$="voice/report.html"]')  # the navigation's spoken EYT-Bench
        browser.wait_for_text(["Spoken EYT-Bench", "The text-to-voice gap", VOICE_TARGET])
        follow(browser, f'a[href^="{VOICE_TARGET}-on-"]')  # the cell's voiced dialogues
        browser.wait_for_text([f"Dialogues of {VOICE_TARGET} on {POOL}"])
        follow(browser, f'a[href^="dialogues/{VOICE_TARGET}-"]')  # one voiced dialogue
        browser.wait_for_text([f"{VOICE_TARGET}", "heard", "the cascade read"])
        time.sleep(1)
        browser.evaluate("document.title")  # the events of the last loads arrive while a call waits
        assert not problems(browser.events), problems(browser.events)
        visited = {e["params"]["request"]["url"] for e in browser.events if e["method"] == "Network.requestWillBeSent"}
        assert any(u.endswith(".wav") for u in visited) and any(u.endswith("explorer.css") for u in visited)

        # the policy is in force from file://: a script the page did not have is refused and reported
        before = len(browser.events)
        browser.evaluate(
            "(() => { const s = document.createElement('script'); s.textContent = 'window.ran = 1';"
            " document.body.appendChild(s); })()"
        )
        assert browser.evaluate("typeof window.ran") == "undefined"
        browser.wait_until(
            "document.title",
            lambda _: any("Content Security Policy" in p for p in problems(browser.events[before:])),
            "CSP violation reported",
            timeout=10,
        )
    assert 5_000 < (shots / "export.png").stat().st_size < 600_000
