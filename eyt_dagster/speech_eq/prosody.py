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

from eyt_dagster.core.languages import chinese_characters


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


# -- Chinese tone instructions ----------------------------------------------------------------------------
# A Chinese instruction is matched on the same entries: each phrase below names the English entry whose
# adjustment it asks for, so an effect is written once and both languages render a direction alike. Chinese
# has no spaces: a phrase matches wherever it occurs, the longest phrase at a position first ("低沉" before
# "低", "毫无停顿" before "停顿"). The modifiers are read from the up to three characters between the previous
# match and this one. 很 is not an intensifier: a Chinese adjective takes it as a matter of grammar ("很快" is
# plain "fast"), not for emphasis.
LEXICON_ZH: dict[str, str] = {}


def _z(phrases: str, key: str) -> None:
    assert key in LEXICON, key
    for phrase in phrases.split("|"):
        LEXICON_ZH[phrase] = key


# --- tempo ---------------------------------------------------------------------------------------------
_z("快|语速快|加快", "fast")
_z("飞快|急急忙忙", "rapid")
_z("仓促|匆忙|赶着说", "rushed")
_z("轻快|利落|干脆", "brisk")
_z("慢|缓慢|语速慢|放慢", "slow")
_z("拖长|拖腔|拖沓|慢吞吞", "drawn-out")
_z("从容|不紧不慢|一字一顿|字斟句酌", "deliberate")
# --- loudness ------------------------------------------------------------------------------------------
_z("响亮|大声|提高嗓门|高声", "loud")
_z("喊|吼|喊叫|嚷", "shouting")
_z("洪亮|雄浑", "booming")
_z("坚定|有力|斩钉截铁|加重", "firm")
_z("轻声|小声|低声|声音轻|音量小", "quiet")
_z("耳语|悄声|几乎听不见", "whispered")
_z("含糊|嘟囔|咕哝", "mumbled")
_z("气声|带着气息|气息声", "breathy")
# --- pitch ---------------------------------------------------------------------------------------------
_z("高亢|音调高|尖高|高音", "high-pitched")
_z("尖利|尖锐|刺耳", "shrill")
_z("低|低沉|音调低|低音", "low")
_z("浑厚|沙哑|粗哑", "deep")
_z("上扬|上升|扬起", "rising")
_z("下沉|下降|下行|往下落", "falling")
# --- melody --------------------------------------------------------------------------------------------
_z("平板|平直|音调平", "flat")
_z("单调|毫无起伏|没有起伏|面无表情", "monotone")
_z("无精打采|有气无力", "lifeless")
_z("平稳|稳定", "steady")
_z("抑扬顿挫|起伏|唱歌似的", "sing-song")
_z("夸张|跳跃|蹦跳", "exaggerated")
_z("明亮|活泼|欢快|清亮", "bright")
_z("温暖|饱满|醇厚", "warm")
# --- tension and voice quality -------------------------------------------------------------------------
_z("颤抖|发抖|发颤|哽咽", "trembling")
_z("不稳|凌乱|忽高忽低", "shaky")
_z("短促|生硬|简短|急躁", "clipped")
_z("尖刻|严厉|厉声|咄咄逼人", "sharp")
_z("紧绷|紧张|发紧", "tense")
_z("气喘吁吁|上气不接下气|喘着气", "breathless")
_z("沉重|沉甸甸", "heavy")
_z("疲惫|叹气|有气没力|泄气", "weary")
_z("兴奋|激动|迫不及待", "excited")
# --- pauses --------------------------------------------------------------------------------------------
_z("断断续续|结结巴巴|结巴", "halting")
_z("犹豫|迟疑|吞吞吐吐", "hesitant")
_z("长停顿|长长的停顿|停顿很长|停顿长", "long pauses")
_z("停顿|停一停", "pausing")
_z("短停顿|短暂的停顿|短促的停顿|停顿短", "short pauses")
_z("毫无停顿|不带停顿|没有停顿|一口气", "no pauses")
_z("语速适中|不快不慢|正常语速", "medium pace")

NEGATORS_ZH = ("不", "没", "无", "别", "未")
INTENSIFIERS_ZH = ("非常", "极", "特别", "十分", "格外", "太", "超级")
SOFTENERS_ZH = ("稍", "略", "有点", "有些", "微微", "一点")
_LONGEST_ZH = max(len(p) for p in LEXICON_ZH)


def match_lexicon_zh(instruction: str) -> list[tuple[str, float]]:
    """`match_lexicon` for a Chinese instruction: (English lexicon key, weight) per matched phrase, in order."""
    out: list[tuple[str, float]] = []
    i, free_from = 0, 0
    while i < len(instruction):
        size = next(
            (n for n in range(min(_LONGEST_ZH, len(instruction) - i), 0, -1) if instruction[i : i + n] in LEXICON_ZH), 0
        )
        if not size:
            i += 1
            continue
        before = instruction[max(free_from, i - 3) : i]
        if not any(w in before for w in NEGATORS_ZH):
            weight = 1.5 if any(w in before for w in INTENSIFIERS_ZH) else 1.0
            softened = 0.5 if any(w in before for w in SOFTENERS_ZH) else 1.0
            out.append((LEXICON_ZH[instruction[i : i + size]], weight * softened))
        i += size
        free_from = i
    return out


def _clamp(field: str, value: float) -> int:
    low, high = LIMITS[field]
    return int(min(high, max(low, round(value))))


def prosody_for(instruction: str, strength: float = 1.0) -> tuple[Prosody, tuple[str, ...]]:
    """The prosody an instruction asks for, and the lexicon keys that matched, in order
    (a key applied at another weight is labelled e.g. 'fast (x1.5)').

    `strength` (>= 0) multiplies every deviation from NEUTRAL; no match gives NEUTRAL and (). An instruction with
    Chinese characters is read with the Chinese phrases (LEXICON_ZH); the labels are the entries' English keys."""
    if strength < 0 or not math.isfinite(strength):
        raise ValueError(f"strength must be a finite number >= 0, got {strength}")
    log_rate = log_volume = pitch = pitch_range = word_gap = 0.0
    labels: list[str] = []
    matches = match_lexicon_zh(instruction) if chinese_characters(instruction) else match_lexicon(instruction)
    for key, weight in matches:
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


# espeak-ng voices ("language+variant"; the variants ship in espeak-ng-data/voices/!v), per language. Slots 0 and 1
# are the two speakers of a scenario when they share a gender: their base pitch differs by ~3 semitones (f3 ~220 Hz
# vs f4 ~183 Hz; m3 ~111 Hz vs m4 ~94 Hz, measured) and, in English, the accent (US / British) as well. Mandarin
# has one espeak voice, `cmn`; its speakers differ by the variant only.
VOICES_BY_LANGUAGE: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "female": ("en-us+f3", "en+f4", "en-us+f2", "en+f5"),
        "male": ("en-us+m3", "en+m4", "en-us+m1", "en+m7"),
        "neutral": ("en-us", "en+f1"),
    },
    "zh": {
        "female": ("cmn+f3", "cmn+f4", "cmn+f2", "cmn+f5"),
        "male": ("cmn+m3", "cmn+m4", "cmn+m1", "cmn+m7"),
        "neutral": ("cmn", "cmn+f1"),
    },
}
VOICES = VOICES_BY_LANGUAGE["en"]
_GENDER_WORDS = {"female": "female", "f": "female", "woman": "female", "male": "male", "m": "male", "man": "male"}


def gender_key(gender: str | None) -> str:
    """'female', 'male' or 'neutral' for a scenario's speaker gender text."""
    return _GENDER_WORDS.get((gender or "").strip().lower(), "neutral")


def voice_for(gender: str | None, slot: int = 0, language: str = "en") -> str:
    """The espeak voice for a speaker's gender ("female"/"male"/other), speaker slot (0, 1, ...) and language;
    ValueError naming the language when espeak has no voices listed for it here."""
    if language not in VOICES_BY_LANGUAGE:
        raise ValueError(
            f"espeak-ng: no voices listed for language '{language}'; the languages are {list(VOICES_BY_LANGUAGE)}"
        )
    voices = VOICES_BY_LANGUAGE[language][gender_key(gender)]
    return voices[slot % len(voices)]
