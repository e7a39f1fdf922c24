"""The pages of `eyt annotate export` as an annotator opens them: from file:// in headless Chromium, the index (the
fields, their scales, the rubric) -> an item's page (the persona, the goal, the turns to score) -> back, with no
console error and no request leaving file://, the model text that tries to inject markup shown as text, and every
page fitting a 1,000 px window. The screenshot goes to the test's folder; with EYT_DOC_SCREENSHOTS=1 it replaces
the one docs/annotation.md shows."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from eyt_dagster.ops import cli
from eyt_dagster.table_registry import catalog
from resources.storage.warehouse import prepare

from support.explorer_data import BASELINE, POOL, TARGET, build
from support.slates import remote, write_slate
from support.ui_browser import Chromium, chromium_path

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DOC_SHOTS = ROOT / "docs" / "annotation"


def outside_or_errors(events: list[dict]) -> list[str]:
    found = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"log: {params['entry'].get('text')}")
        elif method == "Runtime.exceptionThrown":
            found.append("exception")
        elif method == "Network.requestWillBeSent" and not params["request"]["url"].startswith("file://"):
            found.append(f"request: {params['request']['url']}")
    return found


@pytest.mark.slow
def test_an_annotator_reads_the_index_and_an_item_page_from_file(tmp_path, monkeypatch):
    if chromium_path() is None:
        pytest.fail("Chromium is not installed: `.ci/run` installs Debian's `chromium`")
    data = tmp_path / "data"
    data.mkdir()
    build(data)
    prepare(data / "eyt.duckdb", catalog())
    slate = write_slate(
        tmp_path,
        targets=[
            remote(TARGET, "http://127.0.0.1:9/v1"),
            {"id": BASELINE, "provider": "embedded", "model": "terse", "family": "eyt-baseline-target"},
        ],
        pools={POOL: {"source": "fixture"}},
        seed=7,
    )
    monkeypatch.setenv("EYT_DATA_DIR", str(data))
    monkeypatch.setenv("EYT_SLATE", str(slate))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    out = tmp_path / "sheet for people"  # a space in the path: the links must still work
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["annotate", "export", "--per-cell", "20", "--out", str(out)]) == 0
    shots = DOC_SHOTS if os.environ.get("EYT_DOC_SCREENSHOTS") == "1" else tmp_path / "shots"
    shots.mkdir(exist_ok=True)
    with Chromium(tmp_path / "chromium", width=1000, height=900) as browser:
        browser.events = []
        browser.call("Log.enable")
        browser.call("Network.enable")
        browser.navigate((out / "index.html").as_uri())
        browser.wait_for_text(["empathy", "0 to 5 in steps of 0.5", "satisfaction", "i001"])
        assert browser.evaluate("document.documentElement.scrollWidth") <= 1000
        browser.navigate(browser.evaluate("document.querySelector('a[href*=\"i001\"]').href"))
        browser.wait_for_text(["[turn 1] User:", "Row i001, turn final"])
        assert browser.evaluate("document.documentElement.scrollWidth") <= 1000
        browser.screenshot(shots / "item.png")
        text = browser.text()
        assert TARGET not in text and BASELINE not in text and POOL not in text  # blind
        # every item page: the hostile model text stays text, no page runs a script or leaves file://
        seen = 0
        for page in sorted((out / "items").glob("*.html")):
            browser.navigate(page.as_uri())
            browser.wait_for_text(["[turn 1]"])
            for markup in ("script", "img", 'a[href^="javascript:"]'):
                assert browser.evaluate(f"document.querySelectorAll({markup!r}).length") == 0, (page, markup)
            if "&lt;script&gt;alert(1)" in page.read_text():
                seen += 1
                assert "<script>alert(1)</script>" in browser.text()  # shown as the words it is
        assert seen == 2  # dialogue 0, hostile in every text, played by both targets
        browser.evaluate("document.title")
        assert not outside_or_errors(browser.events), outside_or_errors(browser.events)
    assert 5_000 < (shots / "item.png").stat().st_size < 600_000
