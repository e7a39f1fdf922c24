"""The languages a run can be played in: their codes, the one place they are listed.

A pool (and a SpeechEQ build) is played in one language, English unless the slate says otherwise. Codes are
ISO 639-1 as language-identification libraries report them; `zh` is Mandarin Chinese written in simplified
characters. Label ids stay canonical (English snake case) in every language, so runs in different languages
join in one table; only what a person reads (prompts, display names, the baselines' words) changes.
"""

from __future__ import annotations

from typing import Literal, get_args

Language = Literal["en", "zh"]
LANGUAGES: tuple[str, ...] = get_args(Language)
DEFAULT_LANGUAGE: Language = "en"
LANGUAGE_NAMES: dict[str, str] = {"en": "English", "zh": "Chinese (Mandarin)"}
