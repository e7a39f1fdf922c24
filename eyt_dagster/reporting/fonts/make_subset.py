"""Make the shipped Chinese font: Noto Sans CJK SC Regular cut down to the characters of GB 2312.

Noto Sans CJK (SIL Open Font License 1.1, OFL.txt beside this file) covers every Chinese character but weighs
16 MB; the 6,763 characters of the GB 2312 standard cover everyday simplified Chinese, so the subset (about 3 MB)
renders the reports' Chinese text on a machine without a CJK font. The reports prefer a CJK font the system has
(eyt_dagster/reporting/cjk_font.py); this one is the fallback. Made with fontTools' subsetter from Debian's
fonts-noto-cjk package (`apt-get install fonts-noto-cjk`), deterministically:

    python eyt_dagster/reporting/fonts/make_subset.py /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
"""

from __future__ import annotations

import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection

OUT = Path(__file__).parent / "NotoSansSC-GB2312.otf"
FAMILY = "Noto Sans CJK SC"
# The subset carries its own family name, so it is never mistaken for a full install of the font.
SUBSET_FAMILY = "EYT Sans SC"


def characters() -> list[int]:
    """GB 2312's Chinese characters, ASCII, CJK punctuation and the full-width forms."""
    hanzi = [c for c in range(0x4E00, 0xA000) if _in_gb2312(chr(c))]
    return [*range(0x20, 0x7F), *range(0x3000, 0x3040), *range(0xFF00, 0xFFF0), 0x2014, 0x2026, 0x201C, 0x201D, *hanzi]


def _in_gb2312(char: str) -> bool:
    try:
        char.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return True


def main(source: str) -> None:
    collection = TTCollection(source)
    font = next(f for f in collection.fonts if f["name"].getDebugName(1) == FAMILY)
    font.recalcTimestamp = False  # keep the source's timestamp: the same bytes on every run
    options = subset.Options()
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.layout_features = ["*"]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=characters())
    subsetter.subset(font)
    names = font["name"]
    for record in list(names.names):
        if record.nameID in (1, 3, 4, 6, 16, 17, 21, 22):
            names.removeNames(nameID=record.nameID)
    for name_id, value in ((1, SUBSET_FAMILY), (4, SUBSET_FAMILY), (6, "EYTSansSC-Regular"), (3, "EYTSansSC-Regular")):
        names.setName(value, name_id, 3, 1, 0x409)
        names.setName(value, name_id, 1, 0, 0)
    font.save(OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(characters())} characters asked for)")


if __name__ == "__main__":
    main(sys.argv[1])
