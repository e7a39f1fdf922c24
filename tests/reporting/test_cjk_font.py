"""Chinese text in the figures and the HTML report: drawn with a CJK font, English figures left as they were."""

import base64
import io
import re
import warnings

import numpy as np
import pytest
from fontTools.ttLib import TTFont
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

from eyt_dagster.reporting import cjk_font
from eyt_dagster.reporting.html_report import Section, render_report
from eyt_dagster.reporting.plots import _to_png

TITLE = "共情得分：林晓雨的对话"


def _figure(title: str) -> Figure:
    fig = Figure(figsize=(3.0, 1.0), dpi=100)
    fig.text(0.05, 0.4, title, fontsize=14)
    return fig


def _ink(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.int16)


@pytest.mark.unit
def test_a_figure_without_chinese_is_drawn_as_before():
    fig = _figure("empathy by pool")
    assert cjk_font.use_cjk_where_needed(fig.findobj(Text)) == 0
    plain = Figure(figsize=(3.0, 1.0), dpi=100)
    plain.text(0.05, 0.4, "empathy by pool", fontsize=14)
    assert _to_png(fig) == _to_png(plain)


@pytest.mark.unit
def test_chinese_text_is_drawn_with_the_shipped_font_not_as_empty_boxes(monkeypatch):
    monkeypatch.setattr(cjk_font, "cjk_family", lambda prefer_system=True: cjk_font._registered_shipped())
    with warnings.catch_warnings(record=True) as missing:
        warnings.simplefilter("always")
        boxes = Figure(figsize=(3.0, 1.0), dpi=100)
        boxes.text(0.05, 0.4, TITLE, fontsize=14, fontfamily="DejaVu Sans")
        tofu = _to_png_plain(boxes)
    assert any("missing from font" in str(w.message) for w in missing)  # DejaVu Sans alone has no Chinese
    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always")
        drawn = _to_png(_figure(TITLE))
    assert not [w for w in found if "missing from font" in str(w.message)]
    assert drawn != tofu
    # missing glyphs are all the same box; drawn ones differ from character to character
    boxes_a, boxes_b = (_to_png_plain(_single(c, "DejaVu Sans")) for c in "共情")
    glyph_a, glyph_b = (_to_png(_single(c)) for c in "共情")
    assert np.array_equal(_ink(boxes_a), _ink(boxes_b))
    assert not np.array_equal(_ink(glyph_a), _ink(glyph_b))


def _single(char: str, family: str | None = None) -> Figure:
    fig = Figure(figsize=(0.6, 0.6), dpi=100)
    fig.text(0.1, 0.2, char, fontsize=24, **({"fontfamily": family} if family else {}))
    return fig


def _to_png_plain(fig: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buf = io.BytesIO()
    FigureCanvasAgg(fig)
    fig.savefig(buf, format="png")
    return buf.getvalue()


@pytest.mark.unit
def test_the_shipped_font_covers_gb2312_and_its_licence_ships_with_it():
    font = TTFont(str(cjk_font.shipped_font()))
    cmap = font.getBestCmap()
    assert all(ord(c) in cmap for c in "共情得分林晓雨的对话「」，。？")
    assert 6763 <= sum(0x4E00 <= c <= 0x9FFF for c in cmap) <= 7000
    assert font["name"].getDebugName(1) == cjk_font.SHIPPED_FAMILY
    licence = (cjk_font.shipped_font().parent / "OFL.txt").read_text()
    assert "SIL OPEN FONT LICENSE Version 1.1" in licence


@pytest.mark.unit
def test_the_html_report_embeds_only_the_characters_it_shows():
    section = Section(title="对话摘录", description="用户说：我最近压力很大。", table=None)
    html = render_report(
        [section], title="EYT", generated_at="now", slate_yaml="", prompt_hashes={}, baseline_targets=[]
    )
    found = re.search(r"url\(data:font/otf;base64,([A-Za-z0-9+/=]+)\)", html)
    assert found and "font-family:'EYT Sans SC'" in html
    subset = TTFont(io.BytesIO(base64.b64decode(found.group(1))))
    cmap = subset.getBestCmap()
    assert all(ord(c) in cmap for c in "对话摘录用户说我最近压力很大")
    assert sum(0x4E00 <= c <= 0x9FFF for c in cmap) == len(set("对话摘录用户说我最近压力很大"))
    assert len(found.group(1)) < 40_000
    english = render_report(
        [Section(title="Leaderboard", description="d", table=None)],
        title="EYT",
        generated_at="now",
        slate_yaml="",
        prompt_hashes={},
        baseline_targets=[],
    )
    assert "@font-face" not in english


@pytest.mark.browser
@pytest.mark.slow
def test_a_browser_loads_the_reports_embedded_font_and_draws_the_chinese_text(tmp_path):
    """Headless Chromium opens the report: the embedded face loads and covers the page's Chinese characters."""
    from support.ui_browser import Chromium

    text = "用户说：我最近压力很大，总是睡不着。"
    page = tmp_path / "report.html"
    page.write_text(
        render_report(
            [Section(title="对话摘录", description=text, table=None)],
            title="EYT",
            generated_at="now",
            slate_yaml="",
            prompt_hashes={},
            baseline_targets=[],
        ),
        encoding="utf-8",
    )
    with Chromium(tmp_path / "chromium", width=900, height=600) as browser:
        browser.navigate(page.as_uri())
        browser.wait_until("document.readyState", lambda state: state == "complete", "the report to load")
        faces = browser.evaluate(f"document.fonts.load(\"16px 'EYT Sans SC'\", {text!r}).then(f => f.length)")
        assert faces == 1
        assert browser.evaluate(f"document.fonts.check(\"16px 'EYT Sans SC'\", {text!r})") is True
        # the face is loaded, not merely declared: its status says so
        status = browser.evaluate("[...document.fonts].filter(f => f.family.includes('EYT Sans SC'))[0].status")
        assert status == "loaded"
