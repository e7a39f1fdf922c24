"""Word and character error rates (eyt_voice/error_rates.py), counted by hand."""

from __future__ import annotations

import pytest

from eyt_dagster.eyt_voice.error_rates import characters, errors, tokens, word_errors, words

pytestmark = pytest.mark.unit


def test_english_is_scored_in_words_as_before() -> None:
    pairs = [
        ("I feel so alone today", "i feel so alone today."),
        ("I feel so alone today", "I fell alone to day"),
        ("", "hello there"),
        ("one two", ""),
        ("I don\u2019t know", "I don't no"),
    ]
    assert [errors(r, h, "en") for r, h in pairs] == [word_errors(r, h) for r, h in pairs] == [0, 4, 2, 2, 1]
    assert tokens("I don\u2019t know, 15 times!", "en") == words("I don\u2019t know, 15 times!")
    assert tokens("I don\u2019t know, 15 times!", "en") == ["i", "don't", "know", "15", "times"]
    assert words("我今天很难过") == []  # why Chinese needs its own tokens: it has no words in this sense


def test_chinese_is_scored_in_characters() -> None:
    ref = "我今天很难过"
    assert tokens(ref, "zh") == ["我", "今", "天", "很", "难", "过"]
    assert errors(ref, "我今天很男过", "zh") == 1  # one substitution of six
    assert errors(ref, "我今天很很难过", "zh") == 1  # one insertion
    assert errors(ref, "我今天难过", "zh") == 1  # one deletion
    assert errors(ref, "", "zh") == 6 and errors("", ref, "zh") == 6
    # 气 dropped and 啊 added: 2, fewer than the 3 substitutions that keep the positions
    assert errors("今天天气很好", "今天天很好啊", "zh") == 2


def test_latin_runs_inside_chinese_count_once() -> None:
    mixed = ["我", "用", "iphone", "15", "拍", "的"]
    assert tokens("我用iPhone 15拍的", "zh") == mixed
    assert tokens("我用ｉＰｈｏｎｅ　１５拍的。", "zh") == mixed  # full-width letters, digits and space folded
    assert errors("我用iPhone 15拍的", "我用iPad 15拍的", "zh") == 1  # the English word is one token
    assert errors("我用iPhone 15拍的", "我用 iphone15 拍的", "zh") == 2  # iphone -> iphone15, and 15 dropped
    assert characters("二〇二四年") == ["二", "〇", "二", "四", "年"]  # the ideographic zero is a character
    assert characters("\U00020000字") == ["\U00020000", "字"]  # an Extension B ideograph is one token


def test_traditional_characters_count_as_their_simplified_forms() -> None:
    # Whisper often writes Mandarin in traditional characters: 們 for 们, 後 for 后, 說 for 说, 會議 for 会议
    assert tokens("他們後來說會議很長", "zh") == tokens("他们后来说会议很长", "zh") == list("他们后来说会议很长")
    assert errors("他们后来说会议很长", "他們後來說會議很長", "zh") == 0
    assert errors("他们后来说会议很长", "他們後來說會很長", "zh") == 1  # 议 dropped is still an error
    assert words("He said 後") == ["he", "said"]  # English is untouched: no conversion there


def test_punctuation_and_spaces_do_not_count_in_chinese() -> None:
    assert errors("你好，我很好。", "你好 我很好!", "zh") == 0
    assert errors("“真的吗？”她问。", "真的吗她问", "zh") == 0
    assert errors("他说：「好吧……」", "他 说 好 吧", "zh") == 0
    assert tokens("，。！？、；：“”（）《》 ", "zh") == []


def test_unknown_language_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown language 'cn'.*en, zh"):
        tokens("我今天很难过", "cn")
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        errors("bonjour", "bonjour", "fr")
