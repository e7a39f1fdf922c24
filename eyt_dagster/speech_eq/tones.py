"""Tone instructions (paper §2.3): physical vocal directions of 8-15 words; bland register words are
rejected (and every rejected attempt is kept with its reason by the caller)."""

from __future__ import annotations

import re

from eyt_dagster.speech_eq.vocabulary import BLAND_WORDS, TONE_WORDS_MAX, TONE_WORDS_MIN

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def words(instruction: str) -> list[str]:
    return _WORD.findall(instruction)


def bland_words_in(instruction: str, bland: tuple[str, ...] = BLAND_WORDS) -> list[str]:
    """The bland words an instruction uses (whole words, case-insensitive), in order of appearance."""
    banned = {b.lower() for b in bland}
    return [w for w in words(instruction) if w.lower() in banned]


def rejection_reason(
    instruction: str,
    bland: tuple[str, ...] = BLAND_WORDS,
    min_words: int = TONE_WORDS_MIN,
    max_words: int = TONE_WORDS_MAX,
) -> str | None:
    """Why an instruction is rejected, or None when it is usable."""
    found = bland_words_in(instruction, bland)
    if found:
        return f"bland word(s) {sorted(set(w.lower() for w in found))}"
    n = len(words(instruction))
    if not min_words <= n <= max_words:
        return f"{n} words, outside {min_words}-{max_words}"
    return None
