"""The embedded SpeechEQ text generator: a template baseline, not a language model (it says so in every row
it writes). It covers all 15 EQ-i subscales x 3 valences deterministically under the seed, so the speech
pipeline runs offline; a configured chat model replaces it for real datasets."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence

from eyt_dagster.speech_eq.item_types import Line, Scenario, Speaker
from eyt_dagster.speech_eq.vocabulary import FAILURE_ARCHETYPES, SCENARIO_TYPES, SPARING_ARCHETYPE, SUBSCALES

GENERATOR_NAME = "template-baseline"

# What each subscale's scenario puts at stake, in the catalyst's words (kept short; the valence adds colour).
KERNELS: dict[str, tuple[str, str]] = {
    "self_regard": ("my review said I am not ready to lead", "accepting an honest assessment of yourself"),
    "self_actualization": ("I turned down the course I always wanted to take", "pursuing meaningful goals"),
    "emotional_self_awareness": ("I snapped at everyone today and do not know why", "naming your own feelings"),
    "emotional_expression": ("I never told my sister how much her comment hurt", "expressing feelings openly"),
    "assertiveness": ("my manager keeps giving my work to someone else", "standing up for yourself"),
    "independence": ("I cannot decide anything without asking my parents first", "deciding for yourself"),
    "interpersonal_relationships": ("my best friend has not called me in months", "keeping close relationships"),
    "empathy": ("my dog died this morning and I still have to work", "recognising another person's feelings"),
    "social_responsibility": ("the neighbours ignore the flooded road again", "contributing to the group"),
    "problem_solving": ("the project is due tomorrow and the data is gone", "solving problems under emotion"),
    "reality_testing": ("I am sure the whole team secretly hates me", "seeing things as they are"),
    "impulse_control": ("I almost quit by email in front of everyone", "resisting an impulse"),
    "flexibility": ("they changed the whole plan an hour before launch", "adapting to change"),
    "stress_tolerance": ("three deadlines landed on the same afternoon", "coping with pressure"),
    "optimism": ("I failed the exam a second time", "keeping hope after a setback"),
}
assert set(KERNELS) == {sub for _, sub in SUBSCALES.values()}

VALENCE_OPENERS = {
    "Positive": ("I have some news and I honestly do not know how to feel", "hopeful"),
    "Negative": ("I need to tell you something and it is not good", "distressed"),
    "Conflict": ("We need to talk about something you did", "confrontational"),
}
NAMES = {"female": ("Maya", "Lena", "Priya", "Sofia"), "male": ("Daniel", "Omar", "Lucas", "Ken")}
# Test-subject lines that read plausibly in a resonant or a dissonant voice (semantically neutral).
NEUTRAL_TURN4 = ("Okay. Tell me what happened from the beginning.", "I hear you. What happens now?")
NEUTRAL_TURN6 = ("Alright. Let's figure out the next step together.", "Right. We will deal with it today.")

# Physical vocal directions (8-15 words, no bland register words; see tones.py).
CONTEXT_TONES = {
    "Positive": "Quick, bright voice with rising pitch and short breathless pauses between phrases",
    "Negative": "Slow, heavy voice with a low pitch and long trembling pauses between words",
    "Conflict": "Loud, clipped voice with sharp stressed consonants and a fast clipped rhythm",
}
SUBJECT_CONTEXT_TONE = "Steady medium pace with a low even pitch and clear separate words"
RESONANT_TONES = {
    "Positive": "Bright, lively voice at a medium pace with a rising warm pitch contour",
    "Negative": "Slow, low-pitched and quiet voice with long pauses and a steady breathy tone",
    "Conflict": "Firm, slow and low voice with deliberate pauses and a level steady pitch",
}
ARCHETYPE_TONES = {
    "toxic optimist": "Very fast, high-pitched and loud voice with bouncy exaggerated rising intonation",
    "defensive snappy reactor": "Loud, clipped and fast voice with sharp stressed consonants and no pauses",
    "condescending explainer": "Slow, drawn-out and loud voice with exaggerated high pitch swoops on each word",
    "impatient evader": "Rushed, fast and clipped voice that speeds through words with no pauses at all",
    "anxious spiraler": "Fast, shaky and high-pitched breathless voice with trembling uneven rapid phrasing",
    "apathetic wall": "Flat, monotone and slow voice with a low pitch and no variation",
}


def _rng(*parts: object) -> random.Random:
    return random.Random(int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:16], 16))


def draw_cast(
    rng: random.Random, names: Mapping[str, Sequence[str]]
) -> tuple[tuple[str, str], tuple[str, str], list[str], str]:
    """The draws of a scenario, in this order whatever its language: (gender, name) of each speaker, the two
    dissonant archetypes (the apathetic wall only when the draw lands on it, sparingly) and the scenario type."""
    g1, g2 = rng.choice(("female", "male")), rng.choice(("female", "male"))
    n1 = rng.choice(names[g1])
    n2 = rng.choice([n for n in names[g2] if n != n1])
    pool = [a for a in FAILURE_ARCHETYPES if a != SPARING_ARCHETYPE]
    dissonant = rng.sample(pool, 2)
    if rng.random() < 0.1:
        dissonant[1] = SPARING_ARCHETYPE
    return (g1, n1), (g2, n2), dissonant, rng.choice(SCENARIO_TYPES)


def make_scenario(slug: str, valence: str, index: int, seed: int) -> Scenario:
    """A scenario for one subscale and valence; the two dissonant personas come from the failure archetypes
    (the apathetic wall only when the draw lands on it twice, i.e. sparingly)."""
    rng = _rng(seed, slug, valence, index)
    _, sub = SUBSCALES[slug]
    stake, skill = KERNELS[sub]
    (g1, n1), (g2, n2), dissonant, kind = draw_cast(rng, NAMES)
    return Scenario(
        subscale=slug,
        valence=valence,
        scenario_type=kind,
        title=f"{skill.capitalize()} ({valence.lower()}, {kind})",
        context=f"A {kind} conversation between {n1} and {n2}.",
        description=f"{n1} tells {n2}: {stake}.",
        speaker1=Speaker(name=n1, role="catalyst", gender=g1, persona=VALENCE_OPENERS[valence][1]),
        speaker2=Speaker(name=n2, role="test subject", gender=g2),
        resonant_persona=f"someone skilled at {skill}",
        dissonant_personas=dissonant,
        skill_tested=skill,
        target_social_intent=f"help {n1} with {skill}",
    )


def make_dialogue(scenario: Scenario, seed: int) -> list[Line]:
    """Six turns: 1 opens, 2 acknowledges, 3 peaks, 4 tests, 5 sustains, 6 tests (neutral test lines)."""
    rng = _rng(seed, scenario.title, scenario.description)
    opener = VALENCE_OPENERS[scenario.valence][0]
    stake = scenario.description.split(": ", 1)[1].rstrip(".")
    return [
        Line(turn=1, speaker=1, text=f"{scenario.speaker2.name}, {opener.lower()}."),
        Line(turn=2, speaker=2, text="Of course. I am listening."),
        Line(turn=3, speaker=1, text=f"Honestly, {stake}, and it is all I can think about."),
        Line(turn=4, speaker=2, text=rng.choice(NEUTRAL_TURN4)),
        Line(turn=5, speaker=1, text="I just do not know what to do with myself right now."),
        Line(turn=6, speaker=2, text=rng.choice(NEUTRAL_TURN6)),
    ]


def tone_options(
    scenario: Scenario,
    context: dict[str, str] = CONTEXT_TONES,
    subject: str = SUBJECT_CONTEXT_TONE,
    resonant: dict[str, str] = RESONANT_TONES,
    archetypes: dict[str, str] = ARCHETYPE_TONES,
) -> dict[int, list[tuple[str, str]]]:
    """Per turn, (persona kind, instruction): one for context turns; resonant + two dissonant for 4 and 6.
    The instructions come from the tone tables given (by default the English ones above)."""
    out: dict[int, list[tuple[str, str]]] = {
        1: [("context", context[scenario.valence])],
        2: [("context", subject)],
        3: [("context", context[scenario.valence])],
        5: [("context", context[scenario.valence])],
    }
    for turn in (4, 6):
        out[turn] = [("resonant", resonant[scenario.valence])] + [
            (f"dissonant:{a}", archetypes[a]) for a in scenario.dissonant_personas
        ]
    return out


def select_tones(options: list[tuple[str, str]]) -> tuple[int, int, str]:
    """The embedded tone judge: the resonant option, and the most dissonant one, preferring an actively wrong
    emotion over a flat delivery (paper §2.3). Returns (resonant index, dissonant index, reasoning)."""
    resonant = next(i for i, (kind, _) in enumerate(options) if kind == "resonant")
    dissonant = [i for i, (kind, _) in enumerate(options) if kind.startswith("dissonant")]
    active = [i for i in dissonant if not options[i][0].endswith(SPARING_ARCHETYPE)]
    chosen = (active or dissonant)[0]
    why = f"resonant: option {resonant}; dissonant: option {chosen} ({options[chosen][0].split(':', 1)[1]}), " + (
        "an actively wrong emotion preferred over a flat one"
        if len(active) < len(dissonant)
        else "the first actively wrong emotion"
    )
    return resonant, chosen, why
