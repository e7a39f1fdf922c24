"""The languages a run can be played in: their codes, the one place they are listed.

A pool (and a SpeechEQ build) is played in one language, English unless the slate says otherwise. Codes are
ISO 639-1 as language-identification libraries report them; `zh` is Mandarin Chinese written in simplified
characters. Label ids stay canonical (English snake case) in every language, so runs in different languages
join in one table; only what a person reads (prompts, display names, the baselines' words) changes.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

Language = Literal["en", "zh"]
LANGUAGES: tuple[str, ...] = get_args(Language)
DEFAULT_LANGUAGE: Language = "en"
LANGUAGE_NAMES: dict[str, str] = {"en": "English", "zh": "Chinese (Mandarin)"}

# CJK ideographs: U+3007 (the ideographic zero), Extension A, the unified block, the compatibility block (NFKC folds
# most of it into the unified one) and planes 2 and 3 (Extensions B to H and their compatibility supplement).
IDEOGRAPHS = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
_IDEOGRAPH = re.compile(f"[{IDEOGRAPHS}]")


def chinese_characters(text: str) -> list[str]:
    """The CJK ideographs of `text`, in order (what a Chinese text's length is counted in)."""
    return _IDEOGRAPH.findall(text)
