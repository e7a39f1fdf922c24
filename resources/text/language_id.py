"""Language identification of replies and simulator turns: py3langid (a naive-Bayes model over byte n-grams,
BSD-3-Clause, ~4.6 MB with numpy only), restricted to a short list of candidate languages.

Why py3langid: on the hand-built set in eyt_dagster/fixtures/language_id/replies.tsv (short and long English and
Chinese replies, mixed ones, other languages, code, numbers, emoji) it was right on 80 of 81 texts against
lingua-language-detector's 79 (high-accuracy mode, a 96 MB wheel) and langdetect's 68, and the fastest of the
three (0.04 ms a text; docs/languages.md#language-identification). It has no randomness: the same text gives the
same answer on every call.

What counts as "too little language to tell" (the answer is None):
- fenced code (```...```), inline code (`...`) and URLs are removed first: they are not written in a language;
- what is left needs at least one CJK character (Chinese, Japanese, Korean: one carries a word) or at least
  three letters of another script. So digits, punctuation, emoji, "OK" and "no" give None; "Yes" and "好" do not.
  "OK" is None on purpose: it is written the same way in Chinese chat as in English.
Mixed text gets the detector's top language for the whole text (docs/eyt-metrics.md#language-consistency).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Sequence
from typing import Any

from eyt_dagster.core.languages import LANGUAGES

# The languages a text may be given: every language a pool can be played in, and the commonest others a model
# might slip into, so "not the pool's language" is detected as such instead of forced onto en or zh. A short list
# keeps short texts from landing on a rare language that shares their letters.
CANDIDATES: tuple[str, ...] = (
    *LANGUAGES,
    *(c for c in ("ja", "ko", "es", "fr", "de", "pt", "it", "ru") if c not in LANGUAGES),
)

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_URL = re.compile(r"(?:https?://|www\.)\S+")
_MIN_OTHER_LETTERS = 3


_CJK_BLOCKS = (  # kana, CJK ideographs (extension A, unified, compatibility), Hangul syllables, ideograph planes 2-3
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3134F),
)
# A letter is a character of a Unicode letter category (L*), which is exactly what `str.isalpha` tests. `[^\W\d_]`
# matches every letter and a few numerals besides (categories Nl, No such as "½"), so each match is tested again.
_LETTER_LIKE = re.compile(r"[^\W\d_]")


def _is_cjk(char: str) -> bool:
    """A Han, kana or Hangul character (one of them carries a word; a Latin letter does not)."""
    return any(start <= ord(char) <= end for start, end in _CJK_BLOCKS)


def language_text(text: str) -> str | None:
    """The part of `text` a language is told from (code and URLs removed), or None when it has too little language."""
    prose = _URL.sub(" ", _CODE.sub(" ", text))
    letters: list[str] = []
    for match in _LETTER_LIKE.finditer(prose):  # stops at the third letter: most texts are decided in a few characters
        char = match.group()
        if char.isalpha():
            letters.append(char)
            if len(letters) >= _MIN_OTHER_LETTERS:
                return prose
    return prose if any(_is_cjk(c) for c in letters) else None


_LOADING = threading.Lock()


def _identifier() -> Any:
    with _LOADING:
        return _load()


@functools.lru_cache(maxsize=1)
def _load() -> Any:
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError as exc:
        raise OSError(
            f"language identification needs the package py3langid ({exc}); install it with `pip install py3langid` "
            "(it is a dependency of eyt-dagster)"
        ) from exc
    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(CANDIDATES))
    return identifier


def detect(texts: Sequence[str | None]) -> list[str | None]:
    """The ISO 639-1 code of each text's language among CANDIDATES, or None where the text has too little language
    (see the module's docstring; a missing text is None too). Safe to call from several threads: the model is read
    only."""
    identifier = _identifier()
    found: list[str | None] = []
    for text in texts:
        prose = language_text(text) if isinstance(text, str) else None
        found.append(None if prose is None else str(identifier.classify(prose)[0]))
    return found
