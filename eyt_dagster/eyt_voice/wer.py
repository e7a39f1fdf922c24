"""Word error rate of a transcript against the words that were synthesised (a cascade's ASR errors).

Both sides are normalised the same way: lower case, apostrophes kept inside words, every other non-letter and
non-digit a word break. The error count is the word-level Levenshtein distance (substitutions, deletions and
insertions, each 1); WER = errors / reference words, summed over turns before dividing (a cell's WER weighs long
turns by their length, as the usual corpus WER does)."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def word_errors(reference: str, hypothesis: str) -> int:
    """The word-level edit distance between `reference` and `hypothesis`."""
    ref, hyp = words(reference), words(hypothesis)
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, start=1):
        current = [i]
        for j, h in enumerate(hyp, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1]
