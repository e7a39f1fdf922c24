"""The bland-word filter and the word-count rule for tone instructions."""

import pytest

from eyt_dagster.speech_eq.tones import bland_words_in, rejection_reason

pytestmark = pytest.mark.unit


def test_bland_words_are_found_as_whole_words_only():
    assert bland_words_in("Speak in a calm, gentle and polite voice") == ["calm", "gentle", "polite"]
    assert bland_words_in("Calmly, NICELY spoken") == ["Calmly"]  # 'nicely' is not on the default list
    assert bland_words_in("a nicety of tone, with calmness") == []  # no partial-word matches


def test_rejection_reasons():
    good = "Fast, clipped delivery with a sharp rising pitch and loud stressed consonants"
    assert rejection_reason(good) is None
    assert (
        rejection_reason("Warm, soft and slow voice with long pauses between every phrase") == "bland word(s) ['soft']"
    )
    assert rejection_reason("Loud and fast") == "3 words, outside 8-15"
    long = " ".join(["loud"] * 16)
    assert rejection_reason(long) == "16 words, outside 8-15"
    assert (
        rejection_reason("Whispered, trembling voice", bland=("whispered",), min_words=1)
        == "bland word(s) ['whispered']"
    )
