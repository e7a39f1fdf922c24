"""A font for Chinese text in the figures and the HTML report: one the system has, else the one shipped.

matplotlib's default font (DejaVu Sans) has no Chinese characters, so a figure naming a Chinese topic would draw
empty boxes. A figure whose text holds Chinese characters draws those texts with DejaVu Sans and, for the
characters it lacks, a CJK family: the first of `SYSTEM_FAMILIES` matplotlib finds on the machine, else the
shipped subset of Noto Sans CJK SC (fonts/NotoSansSC-GB2312.otf, the 6,763 characters of GB 2312, SIL Open Font
License: fonts/OFL.txt). Figures without Chinese text are drawn exactly as before. The HTML report embeds the
shipped font cut down to the characters it shows (`embedded_css`), so it renders on a machine without a CJK font.
"""

from __future__ import annotations

import base64
import functools
import io
import re
from collections.abc import Iterable
from importlib import resources as importlib_resources
from pathlib import Path

CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
SYSTEM_FAMILIES = (
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei",
    "PingFang SC",
    "Microsoft YaHei",
)
SHIPPED_FAMILY = "EYT Sans SC"
LATIN_FAMILY = "DejaVu Sans"


def shipped_font() -> Path:
    return Path(str(importlib_resources.files("eyt_dagster") / "reporting" / "fonts" / "NotoSansSC-GB2312.otf"))


def has_cjk(text: str) -> bool:
    return CJK.search(text) is not None


@functools.cache
def cjk_family(prefer_system: bool = True) -> str:
    """The CJK family figures fall back to: a system one matplotlib finds, else the shipped font (registered with
    matplotlib's font manager in this process; nothing is written to its cache)."""
    from matplotlib import font_manager

    if prefer_system:
        known = {f.name for f in font_manager.fontManager.ttflist}
        for family in SYSTEM_FAMILIES:
            if family in known:
                return family
    return _registered_shipped()


@functools.cache
def _registered_shipped() -> str:
    """Register the shipped font with matplotlib's font manager (in this process only) and name its family."""
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(shipped_font()))
    return SHIPPED_FAMILY


def use_cjk_where_needed(texts: Iterable[object]) -> int:
    """Give every matplotlib Text among `texts` that holds Chinese characters the Latin + CJK fallback families;
    the number of texts changed (0 for a figure without Chinese: it is drawn as it always was)."""
    changed = 0
    for text in texts:
        content = text.get_text() if hasattr(text, "get_text") else ""
        if content and has_cjk(content):
            text.set_fontfamily([LATIN_FAMILY, cjk_family()])  # type: ignore[attr-defined]
            changed += 1
    return changed


def subset_font(characters: str) -> bytes:
    """The shipped font cut down to `characters` (and ASCII), as OpenType bytes: a few kilobytes for a report."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(str(shipped_font()), recalcTimestamp=False)
    options = subset.Options()
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(sorted(set(characters))) + "".join(map(chr, range(0x20, 0x7F))))
    subsetter.subset(font)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


def embedded_css(text: str) -> str:
    """An @font-face rule embedding the shipped font cut down to the Chinese characters of `text` (unicode-range
    limits it to them, so Latin text keeps the page's font); '' when the text has none."""
    characters = "".join(sorted(set(CJK.findall(text))))
    if not characters:
        return ""
    data = base64.b64encode(subset_font(characters)).decode()
    return (
        f"@font-face{{font-family:'{SHIPPED_FAMILY}';src:url(data:font/otf;base64,{data}) format('opentype');"
        "unicode-range:U+3000-303F,U+4E00-9FFF,U+FF00-FFEF}"
    )
