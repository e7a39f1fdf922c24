"""Tone instructions (paper §2.3): physical vocal directions of 8-15 words (12-24 characters in Chinese); bland
register words are rejected (and every rejected attempt is kept with its reason by the caller). An English
instruction is matched on whole words, case-insensitively; a Chinese one has no spaces, so a bland word is found
wherever it occurs, and its length is its count of Chinese characters (punctuation not counted)."""

from __future__ import annotations

import re

from eyt_dagster.core.languages import DEFAULT_LANGUAGE, chinese_characters
from eyt_dagster.speech_eq.vocabulary import BLAND_WORDS, TONE_CHARS_MAX, TONE_CHARS_MIN, TONE_WORDS_MAX, TONE_WORDS_MIN

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def words(instruction: str) -> list[str]:
    return _WORD.findall(instruction)


def bland_words_in(
    instruction: str, bland: tuple[str, ...] = BLAND_WORDS, language: str = DEFAULT_LANGUAGE
) -> list[str]:
    """The bland words an instruction uses, in order of appearance: whole words, case-insensitive; in Chinese,
    every place a bland word occurs."""
    if language == "zh":
        found = [(instruction.find(b), b) for b in bland if b and b in instruction]
        return [b for _, b in sorted(found)]
    banned = {b.lower() for b in bland}
    return [w for w in words(instruction) if w.lower() in banned]


def rejection_reason(
    instruction: str,
    bland: tuple[str, ...] = BLAND_WORDS,
    min_words: int = TONE_WORDS_MIN,
    max_words: int = TONE_WORDS_MAX,
    language: str = DEFAULT_LANGUAGE,
) -> str | None:
    """Why an instruction is rejected, or None when it is usable. In Chinese the bounds are TONE_CHARS_MIN and
    TONE_CHARS_MAX characters, whatever `min_words` and `max_words` say."""
    found = bland_words_in(instruction, bland, language)
    if found:
        return f"bland word(s) {sorted(set(w.lower() for w in found))}"
    if language == "zh":
        n = len(chinese_characters(instruction))
        if not TONE_CHARS_MIN <= n <= TONE_CHARS_MAX:
            return f"{n} characters, outside {TONE_CHARS_MIN}-{TONE_CHARS_MAX}"
        return None
    n = len(words(instruction))
    if not min_words <= n <= max_words:
        return f"{n} words, outside {min_words}-{max_words}"
    return None
