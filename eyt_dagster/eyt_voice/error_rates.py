"""Error rates of a transcript against the text that was synthesised (a cascade's ASR errors): words for English,
characters for Chinese.

The error count is the Levenshtein distance between the two token sequences (substitutions, deletions and
insertions, each 1); a rate is errors / reference tokens, summed over turns before dividing (a cell's rate weighs
long turns by their length, as the usual corpus WER does).

How a text becomes tokens depends on its language (`tokens`):

- English, and any language written with spaces between words: lower case, apostrophes kept inside words, every
  other non-letter and non-digit a word break (`words`); the count is the word error rate's numerator
  (`word_errors`).
- Chinese (`zh`), written without spaces: the text is NFKC-normalised first (full-width letters, digits and
  punctuation become their ASCII forms) and converted to Simplified characters (OpenCC's `t2s`), then each CJK
  ideograph is one token and each run of Latin letters and digits is one token, lower-cased as an English word is
  (so `iPhone 15` inside a Chinese sentence counts as two tokens, not eight); punctuation, spaces and any other
  script are dropped. Its count is the character error rate's numerator. Both sides are converted, so a
  recogniser that writes the traditional form of a character (後 for 后, as Whisper often does for Mandarin) is
  not counted wrong: the script is how it is written, not what was heard.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache

from eyt_dagster.core.languages import IDEOGRAPHS, LANGUAGES

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
_CHARACTER_TOKEN = re.compile(rf"[{IDEOGRAPHS}]|[a-z0-9]+(?:'[a-z0-9]+)*")
CHARACTER_LANGUAGES: frozenset[str] = frozenset({"zh"})
"""The languages scored by characters (written without spaces between words); every other one by words."""


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


@cache
def _to_simplified() -> Callable[[str], str]:
    import opencc

    return opencc.OpenCC("t2s").convert


def characters(text: str) -> list[str]:
    """A Chinese text's tokens: each ideograph (in its Simplified form), and each run of Latin letters and digits
    (see the module's text)."""
    simplified = _to_simplified()(unicodedata.normalize("NFKC", text))
    return _CHARACTER_TOKEN.findall(simplified.lower().replace("\u2019", "'"))


def tokens(text: str, language: str) -> list[str]:
    """The units `text` is scored in: characters for Chinese, words for the others. ValueError for a language code
    the project does not know (eyt_dagster/core/languages.py)."""
    if language not in LANGUAGES:
        raise ValueError(f"error rate: unknown language '{language}'; the known codes are {', '.join(LANGUAGES)}")
    return characters(text) if language in CHARACTER_LANGUAGES else words(text)


def unit(language: str) -> str:
    """What `language`'s error counts count: "character" (Chinese) or "word"; a rate in these units is a character
    error rate (CER) or a word error rate (WER)."""
    return "character" if language in CHARACTER_LANGUAGES else "word"


def _edit_distance(ref: list[str], hyp: list[str]) -> int:
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, start=1):
        current = [i]
        for j, h in enumerate(hyp, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1]


def word_errors(reference: str, hypothesis: str) -> int:
    """The word-level edit distance between `reference` and `hypothesis`."""
    return _edit_distance(words(reference), words(hypothesis))


def errors(reference: str, hypothesis: str, language: str) -> int:
    """The edit distance between `reference` and `hypothesis` in `language`'s tokens (`tokens`): word errors for
    English, character errors for Chinese."""
    return _edit_distance(tokens(reference, language), tokens(hypothesis, language))
