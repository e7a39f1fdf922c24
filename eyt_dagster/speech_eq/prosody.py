"""From a tone instruction's physical words to espeak-ng prosody (docs/method.md#speech-synthesis): the lexicon.

Each lexicon entry is an `Adjustment`: a factor on speaking rate and on volume, and an offset on base pitch,
pitch range and the pause between words. An instruction is matched case-insensitively on whole words and
phrases ("high-pitched" and "high pitched" are the same entry; the longest phrase wins, so "low pitch" is
not also "low"). All matches are combined (factors multiply, offsets add). Up to two modifier words right
before a match change it: a negator ("not loud", "without rushing") drops it, an intensifier ("very fast")
applies it 1.5 times, a softener ("slightly slower") half. `strength` then scales the whole deviation from
`NEUTRAL` (factors as powers, offsets linearly): 0 is neutral, 1 the lexicon, 2 twice as far - what a
regeneration uses to make a weak contrast stronger. Results are clamped to espeak's ranges; volume keeps a
floor so a clip is never silent. Words with no physical meaning ("nice", "soft") are deliberately absent.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Prosody:
    """espeak-ng settings: rate in words/min, pitch and pitch range 0-99, amplitude 0-200, word gap in 10 ms."""

    rate: int
    pitch: int
    pitch_range: int
    volume: int
    word_gap: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


NEUTRAL = Prosody(rate=175, pitch=50, pitch_range=50, volume=100, word_gap=0)
LIMITS: dict[str, tuple[int, int]] = {
    "rate": (80, 450),
    "pitch": (0, 99),
    "pitch_range": (0, 99),
    "volume": (10, 200),
    "word_gap": (0, 50),
}


@dataclass(frozen=True)
class Adjustment:
    """One lexicon entry: rate and volume factors; pitch, pitch-range and word-gap offsets."""

    rate: float = 1.0
    pitch: float = 0.0
    pitch_range: float = 0.0
    volume: float = 1.0
    word_gap: float = 0.0


LEXICON: dict[str, Adjustment] = {}


def _e(phrases: str, **kw: float) -> None:
    for phrase in phrases.split("|"):
        LEXICON[phrase] = Adjustment(**kw)


# --- tempo ---------------------------------------------------------------------------------------------
_e("fast|faster|quick|quickly|speeds|speeding", rate=1.35)
_e("rapid|rapidly|hurried|hurriedly", rate=1.4)
_e("rushed|rushing|racing|breakneck", rate=1.45, pitch_range=-5)
_e("brisk|briskly|snappy", rate=1.2, volume=1.1)
_e("slow|slower|slowly|unhurried|sluggish", rate=0.7)
_e("drawn-out|drawn out|drawling|dragging", rate=0.65, word_gap=3)
_e("deliberate|deliberately|measured", rate=0.8, word_gap=3, pitch_range=-5)
# --- loudness ------------------------------------------------------------------------------------------
_e("loud|louder|loudly|raised voice|projecting", volume=1.5, pitch=4)
_e("shouting|shouted|shout|yelling|yelled|bellowing", volume=1.8, pitch=10, pitch_range=15, rate=1.1)
_e("booming|thunderous", volume=1.7, pitch=-10, rate=0.9)
_e("firm|firmly|forceful|emphatic|stressed", volume=1.2, pitch_range=-5)
_e("quiet|quieter|quietly|hushed|muted", volume=0.55, pitch_range=-5)
_e("whispered|whispering|whisper|whispery|barely audible", volume=0.35, rate=0.9, pitch_range=-15)
_e("murmured|murmuring|mumbled|mumbling", volume=0.5, pitch=-5, pitch_range=-10)
_e("breathy|airy", volume=0.75, rate=0.95)
# --- pitch ---------------------------------------------------------------------------------------------
_e("high-pitched|high pitch|higher pitch|squeaky", pitch=22)
_e("shrill|piercing|screechy", pitch=28, pitch_range=10, volume=1.15)
_e("low|low-pitched|low pitch|lower pitch", pitch=-18, volume=0.95)
_e("deep|deeper|gravelly|husky|rumbling", pitch=-22, rate=0.95)
_e("rising|upward inflection", pitch=5, pitch_range=12)
_e("falling|sinking", pitch=-6, pitch_range=-5)
# --- melody --------------------------------------------------------------------------------------------
_e("flat|level pitch|even pitch|steady pitch", pitch_range=-35)
_e("monotone|monotonous|deadpan|expressionless|no variation", pitch_range=-45)
_e("lifeless|listless|droning", pitch_range=-35, volume=0.8, rate=0.85)
_e("steady|steadily", pitch_range=-10)
_e("sing-song|singsong|melodic|lilting|swoops|swooping", pitch_range=30)
_e("exaggerated|animated|expressive|bouncy", pitch_range=22, rate=1.05)
_e("bright|brightly|lively|chirpy|bubbly|upbeat", pitch=10, pitch_range=15, rate=1.1, volume=1.1)
_e("warm|warmly|rich", pitch=-4, pitch_range=8, rate=0.93)
# --- tension and voice quality -------------------------------------------------------------------------
_e("trembling|tremble|trembles|tremulous|quavering|quivering|wavering|cracking", pitch_range=22, word_gap=2, rate=0.9)
_e("shaky|shaking|unsteady|uneven", pitch_range=18, word_gap=2)
_e("clipped|curt|curtly|terse|tersely|abrupt|abruptly", rate=1.2, pitch_range=-12, volume=1.1)
_e("sharp|sharply|harsh|biting|cutting|barking", volume=1.3, pitch=6, rate=1.1)
_e("tense|tight|strained|pinched", pitch=8, pitch_range=-12, rate=1.1)
_e("breathless|panting|gasping|out of breath", rate=1.25, pitch=6, word_gap=2, volume=0.9)
_e("heavy|heavily|weighed down|leaden", rate=0.78, pitch=-10, pitch_range=-12)
_e("weary|tired|exhausted|sighing|defeated", rate=0.8, pitch=-8, pitch_range=-15, volume=0.8)
_e("excited|excitedly|eager|energetic", rate=1.2, pitch=10, pitch_range=18, volume=1.2)
# --- pauses --------------------------------------------------------------------------------------------
_e("halting|haltingly|faltering|stammering|stuttering", rate=0.8, word_gap=6)
_e("hesitant|hesitantly|hesitating", rate=0.85, word_gap=5, volume=0.85)
_e("long pauses|long pause", word_gap=6)
_e("pausing|pauses|pause", word_gap=4)
_e("short pauses|short pause|brief pauses", word_gap=2)
_e("no pauses|without pausing|run-on", rate=1.15)
_e("medium pace|moderate pace|normal pace", rate=1.0)  # named so the match is reported, changes nothing

NEGATORS = frozenset({"not", "no", "never", "without", "nor", "hardly"})
INTENSIFIERS = frozenset({"very", "extremely", "really", "so", "too", "highly", "intensely", "utterly"})
SOFTENERS = frozenset({"slightly", "somewhat", "little", "mildly", "fairly", "barely"})
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_INDEX: dict[tuple[str, ...], str] = {}
for _phrase in LEXICON:
    _INDEX[tuple(_WORD.findall(_phrase.replace("-", " ")))] = _phrase
_LONGEST = max(len(k) for k in _INDEX)


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("-", " ").replace("\u2019", "'"))


def match_lexicon(instruction: str) -> list[tuple[str, float]]:
    """(lexicon key, weight) per match in order; weight 1.5 after an intensifier, 0.5 after a softener."""
    tokens, out, i, free_from = _tokens(instruction), [], 0, 0
    while i < len(tokens):
        size = next((n for n in range(min(_LONGEST, len(tokens) - i), 0, -1) if tuple(tokens[i : i + n]) in _INDEX), 0)
        if not size:
            i += 1
            continue
        key = _INDEX[tuple(tokens[i : i + size])]
        before = tokens[max(free_from, i - 2) : i]
        if not any(w in NEGATORS for w in before):
            weight = 1.5 if any(w in INTENSIFIERS for w in before) else 1.0
            out.append((key, weight * (0.5 if any(w in SOFTENERS for w in before) else 1.0)))
        i += size
        free_from = i
    return out


def _clamp(field: str, value: float) -> int:
    low, high = LIMITS[field]
    return int(min(high, max(low, round(value))))


def prosody_for(instruction: str, strength: float = 1.0) -> tuple[Prosody, tuple[str, ...]]:
    """The prosody an instruction asks for, and the lexicon keys that matched, in order
    (a key applied at another weight is labelled e.g. 'fast (x1.5)').

    `strength` (>= 0) multiplies every deviation from NEUTRAL; no match gives NEUTRAL and ()."""
    if strength < 0 or not math.isfinite(strength):
        raise ValueError(f"strength must be a finite number >= 0, got {strength}")
    log_rate = log_volume = pitch = pitch_range = word_gap = 0.0
    labels: list[str] = []
    for key, weight in match_lexicon(instruction):
        adj = LEXICON[key]
        log_rate += weight * math.log(adj.rate)
        log_volume += weight * math.log(adj.volume)
        pitch += weight * adj.pitch
        pitch_range += weight * adj.pitch_range
        word_gap += weight * adj.word_gap
        labels.append(key if weight == 1.0 else f"{key} (x{weight:g})")
    s = strength
    prosody = Prosody(
        rate=_clamp("rate", NEUTRAL.rate * math.exp(s * log_rate)),
        pitch=_clamp("pitch", NEUTRAL.pitch + s * pitch),
        pitch_range=_clamp("pitch_range", NEUTRAL.pitch_range + s * pitch_range),
        volume=_clamp("volume", NEUTRAL.volume * math.exp(s * log_volume)),
        word_gap=_clamp("word_gap", NEUTRAL.word_gap + s * word_gap),
    )
    return prosody, tuple(labels)


# espeak-ng voices ("language+variant"; the variants ship in espeak-ng-data/voices/!v). Slots 0 and 1 are the
# two speakers of a scenario when they share a gender: their base pitch differs by ~3 semitones (f3 ~220 Hz
# vs f4 ~183 Hz; m3 ~111 Hz vs m4 ~94 Hz, measured) and the accent (US / British) as well.
VOICES: dict[str, tuple[str, ...]] = {
    "female": ("en-us+f3", "en+f4", "en-us+f2", "en+f5"),
    "male": ("en-us+m3", "en+m4", "en-us+m1", "en+m7"),
    "neutral": ("en-us", "en+f1"),
}
_GENDER_WORDS = {"female": "female", "f": "female", "woman": "female", "male": "male", "m": "male", "man": "male"}


def gender_key(gender: str | None) -> str:
    """'female', 'male' or 'neutral' for a scenario's speaker gender text."""
    return _GENDER_WORDS.get((gender or "").strip().lower(), "neutral")


def voice_for(gender: str | None, slot: int = 0) -> str:
    """The espeak voice for a speaker's gender ("female"/"male"/other) and speaker slot (0, 1, ...)."""
    voices = VOICES[gender_key(gender)]
    return voices[slot % len(voices)]
