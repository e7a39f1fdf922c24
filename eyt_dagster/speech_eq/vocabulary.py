"""SpeechEQ's fixed vocabulary (paper §2.1-2.2, App. A-B; docs/method.md#speecheq): the EQ-i 2.0 composites and
subscales, valences, scenario types, the failure archetypes for dissonant personas, the bland tone words
that are rejected, and the released data's turn/audio layout. One place for each of these facts."""

from __future__ import annotations

from typing import Literal, get_args

# EQ-i 2.0: five composites of three subscales; slugs are the released data's folder names.
COMPOSITES: dict[str, tuple[str, tuple[str, ...]]] = {
    "self_perception": ("Self-Perception", ("self_regard", "self_actualization", "emotional_self_awareness")),
    "self_expression": ("Self-Expression", ("emotional_expression", "assertiveness", "independence")),
    "interpersonal": ("Interpersonal", ("interpersonal_relationships", "empathy", "social_responsibility")),
    "decision_making": ("Decision Making", ("problem_solving", "reality_testing", "impulse_control")),
    "stress_management": ("Stress Management", ("flexibility", "stress_tolerance", "optimism")),
}
SUBSCALE_NAMES: dict[str, str] = {
    "self_regard": "Self-Regard",
    "self_actualization": "Self-Actualization",
    "emotional_self_awareness": "Emotional Self-Awareness",
    "emotional_expression": "Emotional Expression",
    "assertiveness": "Assertiveness",
    "independence": "Independence",
    "interpersonal_relationships": "Interpersonal Relationships",
    "empathy": "Empathy",
    "social_responsibility": "Social Responsibility",
    "problem_solving": "Problem Solving",
    "reality_testing": "Reality Testing",
    "impulse_control": "Impulse Control",
    "flexibility": "Flexibility",
    "stress_tolerance": "Stress Tolerance",
    "optimism": "Optimism",
}
# subscale slug (folder name) -> (composite key, subscale key)
SUBSCALES: dict[str, tuple[str, str]] = {
    f"{composite}_{sub}": (composite, sub) for composite, (_, subs) in COMPOSITES.items() for sub in subs
}
assert len(SUBSCALES) == 15 and set(s for _, s in SUBSCALES.values()) == set(SUBSCALE_NAMES)


def eq_scale(slug: str) -> str:
    """The released metadata's `eq_scale` text, e.g. 'Interpersonal - Empathy'."""
    composite, sub = SUBSCALES[slug]
    return f"{COMPOSITES[composite][0]} - {SUBSCALE_NAMES[sub]}"


def slug_from_eq_scale(text: str) -> str:
    """The folder slug for an `eq_scale` text; ValueError naming the text when it is not an EQ-i subscale."""
    for slug in SUBSCALES:
        if eq_scale(slug).lower() == text.strip().lower():
            return slug
    raise ValueError(
        f"eq_scale '{text}' is not one of the 15 EQ-i 2.0 subscales, e.g. '{eq_scale('interpersonal_empathy')}'"
    )


Valence = Literal["Positive", "Negative", "Conflict"]
VALENCES: tuple[str, ...] = get_args(Valence)
SCENARIO_TYPES: tuple[str, ...] = (
    "workplace",
    "medical",
    "educational",
    "family",
    "friendship",
    "romantic",
    "customer service",
    "community",
)
# Dissonant personas are drawn from these failure archetypes; the apathetic wall only sparingly, since a flat
# delivery is the weakest distractor (the tone judge prefers an actively wrong emotion over a flat one).
FAILURE_ARCHETYPES: tuple[str, ...] = (
    "toxic optimist",
    "defensive snappy reactor",
    "condescending explainer",
    "impatient evader",
    "anxious spiraler",
    "apathetic wall",
)
SPARING_ARCHETYPE = "apathetic wall"
# Tone instructions containing these words are rejected and regenerated (paper §2.3): they describe a polite
# register, not a physical voice. The list is the default of a setting.
BLAND_WORDS: tuple[str, ...] = (
    "nice",
    "polite",
    "politely",
    "mild",
    "mildly",
    "calm",
    "calmly",
    "gentle",
    "gently",
    "soft",
    "softly",
    "pleasant",
    "kind",
    "kindly",
    "friendly",
    "neutral",
    "normal",
    "appropriate",
    "respectful",
)
TONE_WORDS_MIN, TONE_WORDS_MAX = 8, 15
# The same rule for tone instructions written in Chinese (prompts/speech_zh.yaml). Chinese has no spaces, so a
# word is found wherever it occurs in the text, not as a whole word; each entry is a whole word of two or more
# characters, so that it does not hit inside an unrelated one. Each kind says how someone should come across,
# not what the voice does, so a synthesiser cannot act on it and a listener cannot hear it:
BLAND_WORDS_ZH: tuple[str, ...] = (
    # manners and propriety (polite, respectful, appropriate): a social judgement of the speaker
    # (得体, "proper", is left out: as a substring it also hits 觉得体贴 or 显得体力不支, across two words)
    "礼貌",
    "客气",
    "恰当",
    "尊重",
    # softness and mildness (gentle, soft, mild): a manner; the physical side is said as 轻声 (quiet) or 放慢
    # (slower), which stay allowed
    "温柔",
    "柔和",
    "轻柔",
    "温和",
    # calm (calm, calmly): the absence of a state, which names no pace, pitch or loudness
    "平静",
    "冷静",
    "平和",
    # kindness and pleasantness (friendly, kind, pleasant, nice): how the listener should feel
    "友好",
    "友善",
    "和善",
    "亲切",
    "和气",
    "好听",
    "悦耳",
    # the default register (neutral, normal): no direction at all
    "自然",
    "正常",
    "中性",
)
# Length of a Chinese tone instruction in Chinese characters, punctuation not counted (Chinese has no spaces; the
# English 8-15 words at about 1.6 characters per word, rounded out); speech_zh.yaml's {min_words} and {max_words}
# take these.
TONE_CHARS_MIN, TONE_CHARS_MAX = 12, 24
# The tone length rule per language: (min, max) words, or characters for Chinese.
TONE_LENGTH: dict[str, tuple[int, int]] = {
    "en": (TONE_WORDS_MIN, TONE_WORDS_MAX),
    "zh": (TONE_CHARS_MIN, TONE_CHARS_MAX),
}
# Each language's default bland words (the setting speech.bland_words replaces the build language's list).
BLAND_WORDS_BY_LANGUAGE: dict[str, tuple[str, ...]] = {"en": BLAND_WORDS, "zh": BLAND_WORDS_ZH}

# The six-turn arc (paper §2.2): speaker 1 is the catalyst, speaker 2 the test subject.
TURN_SPEAKER: dict[int, int] = {1: 1, 2: 2, 3: 1, 4: 2, 5: 1, 6: 2}
TURN_ROLE: dict[int, str] = {
    1: "opens the situation",
    2: "acknowledges",
    3: "the catalyst's emotional peak",
    4: "first test response",
    5: "sustains",
    6: "second test response",
}
TEST_TURNS: tuple[int, int] = (4, 6)
CONTEXT_TURNS: tuple[int, ...] = (1, 2, 3, 5)

# The released layout's audio files: file number -> (turn, eq_level); 'high' is the resonant (correct) clip.
AUDIO_FILES: dict[str, tuple[int, str | None]] = {
    "01": (1, None),
    "02": (2, None),
    "03": (3, None),
    "04": (4, "high"),
    "05": (4, "low"),
    "06": (5, None),
    "07": (6, "high"),
    "08": (6, "low"),
}
