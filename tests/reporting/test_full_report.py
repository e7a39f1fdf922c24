"""The full report (`eyt report`): model cards first, both benchmarks' sections, one self-contained HTML file that
headless Chromium renders offline with every section and every image."""

import re
from urllib.parse import unquote_plus

import pandas as pd
import pytest

from eyt_dagster.core.explorer_links import DEFAULT_VIEW_URL
from eyt_dagster.ops.report_commands import report_html
from eyt_dagster.reporting.corrected_section import RANKINGS_TITLE
from eyt_dagster.reporting.report_sections import REPORT_TABLES
from eyt_dagster.reporting.speech_sections import CARDS_TITLE, SPEECH_TITLES, card_section, speech_sections
from eyt_dagster.slate import load_slate

from support.ui_browser import CHROMIUM, Chromium, chromium_path

# Every section the report must hold, in order (the EYT-Bench titles from report_sections).
TITLES = [CARDS_TITLE, *(title for _, title, _ in REPORT_TABLES), *SPEECH_TITLES]


@pytest.fixture(scope="module")
def page(warehouse, tmp_path_factory):
    con, _ = warehouse
    data = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    from pathlib import Path

    warehouse_file = Path(data)
    slate_file = warehouse_file.parent.parent / "slate.yaml"
    html = report_html(
        warehouse_file, load_slate(slate_file), slate_file.read_text(), {"target": "abc123"}, generated_at="fixed"
    )
    out = tmp_path_factory.mktemp("report") / "report.html"
    out.write_text(html, encoding="utf-8")
    return out, html


@pytest.mark.materialisation
def test_report_is_self_contained_and_opens_with_the_model_cards(page):
    _, html = page
    assert "<script" not in html and "<link" not in html
    # its only links lead from each model card into the explorer; nothing else leaves the page
    cards = html[html.index('<section id="s1">') : html.index('<section id="s2">')]
    outside = re.findall(r'href="(?!#)([^"]*)"', html)
    assert outside and outside == re.findall(r'href="(?!#)([^"]*)"', cards)
    prefix = DEFAULT_VIEW_URL + "/?target="
    assert all(link.startswith(prefix) for link in outside), outside
    linked = {unquote_plus(link[len(prefix) :]) for link in outside}
    assert {"acoustic-chooser-baseline", "random-chooser-baseline"} <= linked
    assert html.replace(DEFAULT_VIEW_URL, "").count("http://") == 0 and "https://" not in html
    positions = [html.find(f"<h2>{title}</h2>") for title in TITLES]
    assert all(p > 0 for p in positions), [t for t, p in zip(TITLES, positions) if p < 0]
    assert positions == sorted(positions)  # model cards first, then EYT-Bench, then SpeechEQ
    assert html.count("data:image/png;base64,") >= 10
    assert "acoustic-chooser-baseline" in html and "baselines_only" in html  # the SEQ cohort is named
    assert "discard_rate" in html


@pytest.mark.browser
def test_report_renders_every_section_in_headless_chromium(page, tmp_path):
    if chromium_path() is None:  # a failure, not a skip: CI installs it
        pytest.fail(f"Chromium is not installed ({CHROMIUM})")
    out, _ = page
    with Chromium(tmp_path / "chromium", width=1400, height=1000) as browser:
        browser.navigate(out.as_uri())
        # the table of contents at the top names every section before the sections below it have been parsed,
        # so wait for the sections' own headings, not for the titles' text
        headings = browser.wait_until(
            "document.readyState === 'complete' && [...document.querySelectorAll('section h2')].map(h => h.textContent)",
            lambda v: bool(v) and len(v) >= len(TITLES),
            "every section heading",
        )
        # "Rankings under correction" joins them once the warehouse holds dialogue.judge_corrected
        assert [h for h in headings if h != RANKINGS_TITLE][: len(TITLES)] == TITLES
        text = browser.evaluate("document.body.innerText")
        images = browser.wait_until(
            "[...document.images].map(i => i.complete && i.naturalWidth > 0)",
            lambda v: v and all(v),
            "every image decoded",
        )
        assert len(images) >= 10
        # the card table shows a SpeechEQ-only model with its EYT-Bench cells empty (an en dash)
        cards = browser.evaluate("document.querySelector('#s1 table').innerText")
        assert "random-chooser-baseline" in cards and "\u2013" in cards
        # the model cards fit the page: no card table is wider than its section (nothing to scroll sideways)
        widths = browser.evaluate(
            "[...document.querySelectorAll('#s1 table')].map(t => [t.scrollWidth, t.clientWidth])"
        )
        assert len(widths) == 2 and all(scroll <= client for scroll, client in widths), widths
        assert "Embedded baselines" in text
        shot = browser.screenshot(tmp_path / "report.png")
    assert shot.stat().st_size > 20_000


@pytest.mark.materialisation
def test_the_model_cards_show_readable_labels_and_a_second_table_for_costs_and_models(page):
    _, html = page
    cards = html[html.index('<section id="s1">') : html.index('<section id="s2">')]
    assert "<th>EYT explicit intent acc. [95% CI]</th>" in cards and "<th>SEQ</th>" in cards
    assert (
        "<h3>What the calls cost, and which model answered</h3>" in cards and "<th>settings fingerprint</th>" in cards
    )
    assert "eyt_pooled_" not in cards and "[CI]" not in cards  # no raw column names in the headers


@pytest.mark.unit
def test_sections_without_data_say_so():
    empty = speech_sections({})
    assert [s.title for s in empty] == list(SPEECH_TITLES)
    assert all(s.note for s in empty)
    assert card_section(pd.DataFrame()).note


@pytest.mark.unit
def test_card_links_follow_eyt_view_url_and_escape_the_model_id(monkeypatch):
    from eyt_dagster.reporting.html_report import render_table

    cards = pd.DataFrame({"target": ['a"><b>x', "plain"], "eyt_pooled_empathy": [50.0, 60.0]})
    monkeypatch.setenv("EYT_VIEW_URL", "http://lab-box:9000/")
    section = card_section(cards)
    html = render_table(section.table, labels=section.labels, target_link=section.target_link)
    assert '<a href="http://lab-box:9000/?target=a%22%3E%3Cb%3Ex">a&quot;&gt;&lt;b&gt;x</a>' in html
    assert '<a href="http://lab-box:9000/?target=plain">plain</a>' in html
    monkeypatch.setenv("EYT_VIEW_URL", "lab-box")  # not an address: the cards are shown without links
    section = card_section(cards)
    assert section.target_link is None and "EYT_VIEW_URL" in section.description
