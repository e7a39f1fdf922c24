"""How a user turn is voiced: the tone of voice of each of EYT-Bench's 15 emotions, and the voice a persona gets.

`EMOTION_VOICE` is the one place that says how an emotion sounds, in physical voice terms (tempo, loudness,
pitch, melody, pauses) that SpeechEQ's prosody lexicon turns into espeak-ng settings (speech_eq/prosody.py) and
that an instructed speech endpoint reads as its `instructions`. Every word below is a lexicon entry, so the
embedded voice carries each term (tests/eyt_voice/test_voice.py checks it). `neutral` is the plain voice.

The voice: the persona's `sex` picks the female or male voices and its `age_bucket` the voice within them (a
lower-pitched variant for older buckets); a persona that says neither gets a voice by a rule seeded with the
slate's seed and the ChatSEED id, so a rerun and every target hear the same voice. `voice_source` records which.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from eyt_dagster.eyt_bench.taxonomy import EMOTIONS

EMOTION_VOICE: dict[str, str] = {
    "sadness": "slow, low pitch, quiet, heavy, long pauses",
    "anxiety": "tense, shaky, high pitch, short pauses, slightly fast",
    "anger": "loud, sharp, clipped",
    "frustration": "firm, tense, clipped, slightly loud",
    "loneliness": "quiet, slow, weary, falling",
    "fear": "trembling, breathless, high pitch, quiet",
    "guilt": "hesitant, quiet, low pitch, slow",
    "joy": "bright, expressive",
    "excitement": "excited, loud, high pitch",
    "gratitude": "warm, steady, slightly slow",
    "hope": "warm, rising, medium pace",
    "pride": "firm, steady, warm, deliberate",
    "relief": "breathy, slow, warm, falling",
    "neutral": "medium pace",
    "curiosity": "rising, expressive, medium pace",
}
assert set(EMOTION_VOICE) == set(EMOTIONS)

AGE_ORDER = ("18-29", "30-44", "45-59", "60+")  # eyt_bench/personas.py's buckets, youngest first
Gender = Literal["female", "male"]


@dataclass(frozen=True)
class VoiceChoice:
    """The voice a ChatSEED's user speaks with: gender and age slot, and where they came from."""

    gender: Gender
    slot: int  # index into the gender's voices (the TTS maps it: resources/audio/voice_clips.py)
    source: Literal["persona", "seeded"]


def voice_instruction(emotion: str) -> str:
    """The tone instruction a turn with this gold emotion is spoken in."""
    try:
        return EMOTION_VOICE[emotion]
    except KeyError:
        raise ValueError(f"no voice for emotion '{emotion}'; the emotions are {list(EMOTIONS)}") from None


def _gender(attributes: dict[str, Any]) -> Gender | None:
    value = str(attributes.get("sex") or attributes.get("gender") or "").strip().lower()
    return {"female": "female", "f": "female", "woman": "female", "male": "male", "m": "male", "man": "male"}.get(value)  # type: ignore[return-value]


def choose_voice(attributes: dict[str, Any], *, seed_id: str, slate_seed: int) -> VoiceChoice:
    """The persona's voice: from its sex and age bucket when it gives its sex, else seeded by (seed, ChatSEED)."""
    gender = _gender(attributes)
    age = str(attributes.get("age_bucket") or "")
    if gender is not None:
        slot = AGE_ORDER.index(age) if age in AGE_ORDER else 0
        return VoiceChoice(gender, slot, "persona")
    digest = hashlib.sha256(f"{slate_seed}|{seed_id}|voice".encode()).digest()
    return VoiceChoice("female" if digest[0] % 2 else "male", digest[1] % len(AGE_ORDER), "seeded")
