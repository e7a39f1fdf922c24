"""The agenda-based rule user simulator (a baseline, not a language model).

In the style of Schatzmann et al. (2007), a ChatSEED expands deterministically into an agenda of 3-5 steps
towards the final intent; each step is one aspect of the seed's topic with its own gold labels. The user
keeps pushing the current step until a reply addresses it (`addresses`), then moves on. Progress is
not_started until the first step is done, in_progress while steps remain, achieved once the agenda is
empty (the user then closes warmly). Every draw uses `random.Random` seeded from a SHA-256 of
(simulator seed, seed_id, purpose), so the same (seed, seed_id, history) always gives the same turn. The
words come from the lexicon of the pool's language (lexicons.py); the rules are the same in every language.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from types import ModuleType

import eyt_dagster.eyt_bench.baselines.lexicon as english
from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.baselines.lexicons import lexicon
from eyt_dagster.eyt_bench.taxonomy import EMOTIONS, LATENT_INTENTS, NEGATIVE_EMOTIONS, Progress
from eyt_dagster.eyt_bench.types import ChatSeed, ChatSeedContent, Exchange, PersonaRecord, SimulatorTurn, UserLabels

OPENING_INTENTS = (
    "information_seeking",
    "seeking_advice",
    "task_completion",
    "decision_support",
    "planning",
    "recommendation_request",
    "opinion_seeking",
    "emotional_venting",
    "experience_sharing",
)
FOLLOW_UP_INTENTS = tuple(i for i in OPENING_INTENTS if i != "emotional_venting")
# The 'addressed' rule: a reply moves the agenda on when it has at least this many content words, names
# the current step (one of its aspect keywords) and offers something (a suggestion marker or a question).
MIN_CONTENT_WORDS = 8
CASUAL_AGE_LIMIT = 40


def rng_for(seed: int, seed_id: str, purpose: str) -> random.Random:
    """A generator seeded by a stable hash (Python's hash() is salted per process)."""
    digest = hashlib.sha256(f"{seed}|{seed_id}|{purpose}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def addresses(reply: str, keywords: tuple[str, ...], lx: ModuleType = english) -> bool:
    """True when a reply addresses an agenda step (the documented rule above MIN_CONTENT_WORDS)."""
    offers = any(q in reply for q in lx.QUESTION_MARKS) or lx.has_cue(reply, lx.SUGGESTION_MARKERS)
    return len(lx.content_words(reply)) >= MIN_CONTENT_WORDS and lx.has_cue(reply, keywords) and offers


def describe(explicit: str, phrase: str, lx: ModuleType = english) -> str:
    """The gold intent description of a turn: 'The user wants <gloss> <phrase, third person>.'"""
    return str(lx.DESCRIBE.format(gloss=lx.EXPLICIT_GLOSS[explicit], phrase=lx.shift_person(phrase, "third")))


@dataclass(frozen=True)
class Step:
    """One agenda step: the aspect the user wants help with and the gold labels of asking for it."""

    aspect: english.Aspect
    labels: UserLabels


class AgendaSimulator:
    """Rule-based user simulator driven by the ChatSEED (see the module docstring)."""

    def __init__(self, model_id: str, seed: int, language: str = "en") -> None:
        self.model_id = model_id
        self.seed = seed
        self.lx = lexicon(language)

    # --- ChatSEED ---------------------------------------------------------------------------------
    def generate_seed(self, persona: PersonaRecord, *, seed_id: str) -> Reply[ChatSeedContent]:
        """Draw topic, agenda aspects and opening labels from the persona; write the first query."""
        lx = self.lx
        rng = rng_for(self.seed, seed_id, "seed")
        topic_name = _pick_topic(persona, rng, lx)
        topic = lx.TOPICS[topic_name]
        aspects = rng.sample(topic.aspects, rng.randint(3, 5))
        emotion, explicit = rng.choice(EMOTIONS), rng.choice(OPENING_INTENTS)
        latent = rng.choice(LATENT_INTENTS)
        phrases = [lx.shift_person(a.phrase, "third") for a in aspects]
        final = lx.FINAL_INTENT.format(
            goal=lx.shift_person(topic.goal, "third"), rest=lx.LIST_SEP.join(phrases[:-1]), last=phrases[-1]
        )
        voice = _casual(persona, rng)
        parts = [rng.choice(lx.CASUAL_GREETINGS) if voice else lx.PLAIN_GREETING, lx.intro(persona.attributes)]
        parts += [_request(explicit, aspects[0].phrase, rng, lx), rng.choice(lx.USER_OPENERS[emotion])]
        if rng.random() < 0.7:
            parts.append(lx.LATENT_HINTS[latent])
        content = ChatSeedContent(
            topic=topic_name,
            initial_emotion=emotion,
            initial_explicit_intent=explicit,
            initial_latent_intent=latent,
            initial_intent_description=describe(explicit, aspects[0].phrase, lx),
            final_intent=final,
            first_query=lx.JOIN.join(p for p in parts if p),
        )
        return Reply(value=content, raw=content.model_dump_json())

    # --- agenda -----------------------------------------------------------------------------------
    def agenda(self, seed: ChatSeed) -> list[Step]:
        """Expand a ChatSEED into its agenda: the aspects named in the final intent, in that order."""
        rng = rng_for(self.seed, seed.seed_id, "agenda")
        aspects = _agenda_aspects(seed, self.lx)
        steps = [Step(aspects[0], seed.opening_labels())]
        start_negative = seed.initial_emotion in NEGATIVE_EMOTIONS
        for k, aspect in enumerate(aspects[1:], start=1):
            last = k == len(aspects) - 1
            pool: tuple[str, ...]  # the emotions this step's label is drawn from
            if start_negative:
                pool = ("hope", "relief", "curiosity") if last else (seed.initial_emotion,) * 2 + ("hope", "curiosity")
            else:
                pool = ("curiosity", "hope", "neutral", "excitement", seed.initial_emotion)
            explicit = rng.choice(FOLLOW_UP_INTENTS)
            labels = UserLabels(
                explicit_intent=explicit,
                latent_intent=seed.initial_latent_intent,
                emotion=rng.choice(pool),
                intent_description=describe(explicit, aspect.phrase, self.lx),
            )
            steps.append(Step(aspect, labels))
        return steps

    def next_turn(self, seed: ChatSeed, history: list[Exchange]) -> Reply[SimulatorTurn]:
        """Replay the history against the agenda, then write the next user message with its gold labels."""
        steps = self.agenda(seed)
        done, misses, after = 0, 0, 0
        for exchange in history:
            if done == len(steps):
                after += 1
            elif addresses(exchange.response_text, steps[done].aspect.keywords, self.lx):
                done, misses = done + 1, 0
            else:
                misses += 1
        rng = rng_for(self.seed, seed.seed_id, f"turn{len(history)}")
        if done == len(steps):
            turn = _closing(seed, after, rng, self.lx)
        else:
            step = steps[done]
            text, labels = _push(step, misses, rng, self.lx) if misses else _ask(step, done > 0, rng, self.lx)
            progress: Progress = "in_progress" if done else "not_started"
            turn = SimulatorTurn(user_text=text, labels=labels, progress=progress)
        return Reply(value=turn, raw=turn.model_dump_json())


# --- helpers ------------------------------------------------------------------------------------------
def _pick_topic(persona: PersonaRecord, rng: random.Random, lx: ModuleType) -> str:
    """Draw among the topics the persona's tags match; without a tag match, among the three topics its
    attributes and text match best, plus career when it names an occupation; else any topic."""
    tags = " ".join(persona.topic_tags)
    tags = "".join(f" {c.lower()}" if c.isupper() else c for c in tags).replace("_", " ")
    attrs = " ".join(str(v) for v in persona.attributes.values()) + " " + persona.persona_text
    for text, top in ((tags, None), (attrs, 3)):
        scores = {
            name: lx.count_cues(text, t.match + tuple(k for a in t.aspects for k in a.keywords))
            for name, t in lx.TOPICS.items()
        }
        ranked = sorted((n for n in scores if scores[n] > 0), key=lambda n: -scores[n])[:top]
        if top and persona.attributes.get("occupation") and "career" not in ranked:
            ranked.append("career")
        if ranked:
            return rng.choice(ranked)
    return rng.choice(sorted(lx.TOPICS))


def _casual(persona: PersonaRecord, rng: random.Random) -> bool:
    """Younger personas write casually; without an age, a coin flip."""
    try:
        return int(persona.attributes["age"]) < CASUAL_AGE_LIMIT
    except (KeyError, TypeError, ValueError):
        return rng.random() < 0.5


def _agenda_aspects(seed: ChatSeed, lx: ModuleType) -> list[english.Aspect]:
    """The topic's aspects named in the final intent, in order. A seed written by another simulator (unknown
    topic) gets the lexicon's fallback steps from its final intent (`fallback_aspects`)."""
    final = lx.normalise(seed.final_intent)
    topic = lx.TOPICS.get(seed.topic)
    found: list[tuple[int, english.Aspect]] = []
    for aspect in topic.aspects if topic else ():
        pos = final.find(lx.normalise(lx.shift_person(aspect.phrase, "third")))
        if pos >= 0:
            found.append((pos, aspect))
    if len(found) >= 2:
        return [a for _, a in sorted(found, key=lambda pa: pa[0])]
    return list(lx.fallback_aspects(seed.final_intent))


def _ask(step: Step, moved_on: bool, rng: random.Random, lx: ModuleType) -> tuple[str, UserLabels]:
    """Ask for a fresh step: a short transition, the request, often a feeling, sometimes the deeper need."""
    lab = step.labels
    parts = [rng.choice(lx.TRANSITIONS)] if moved_on else []
    parts.append(_request(lab.explicit_intent, step.aspect.phrase, rng, lx))
    if rng.random() < 0.75:
        parts.append(rng.choice(lx.USER_OPENERS[lab.emotion]))
    if rng.random() < 0.35:
        parts.append(lx.LATENT_HINTS[lab.latent_intent])
    return str(lx.JOIN.join(parts)), lab


def _request(explicit: str, phrase: str, rng: random.Random, lx: ModuleType) -> str:
    return str(rng.choice(lx.USER_REQUESTS[explicit]).format(a=phrase, A=lx.capitalise(phrase)))


def _push(step: Step, misses: int, rng: random.Random, lx: ModuleType) -> tuple[str, UserLabels]:
    """Restate an unaddressed step: first a clarification, then complaints with rising frustration."""
    phrase = step.aspect.phrase
    if misses == 1:
        emotion = "frustration" if step.labels.emotion in NEGATIVE_EMOTIONS else step.labels.emotion
        request = _request(step.labels.explicit_intent, phrase, rng, lx)
        text = lx.JOIN.join((lx.RESTATE.format(a=phrase), request))
        labels = UserLabels(
            explicit_intent="clarification",
            latent_intent=step.labels.latent_intent,
            emotion=emotion,
            intent_description=describe("clarification", phrase, lx),
        )
    else:
        emotion = "anger" if misses >= 4 else "frustration"
        text = lx.JOIN.join((rng.choice(lx.USER_OPENERS[emotion]), lx.PUSHBACK.format(a=phrase)))
        labels = UserLabels(
            explicit_intent="feedback",
            latent_intent="need_to_be_understood",
            emotion=emotion,
            intent_description=describe("feedback", phrase, lx),
        )
    return text, labels


def _closing(seed: ChatSeed, after: int, rng: random.Random, lx: ModuleType) -> SimulatorTurn:
    """Close warmly once the agenda is empty: thanks first, then a goodbye."""
    topic = lx.TOPICS.get(seed.topic)
    goal = topic.goal if topic else lx.DEFAULT_PHRASE
    if after == 0:
        thanks = lx.THANKS_DESCRIPTION.format(goal=lx.shift_person(goal, "third"))
        labels = UserLabels(
            explicit_intent="feedback",
            latent_intent=seed.initial_latent_intent,
            emotion="gratitude",
            intent_description=thanks,
        )
        text = rng.choice(lx.CLOSING).format(g=goal)
    else:
        labels = UserLabels(
            explicit_intent="small_talk",
            latent_intent="building_connection",
            emotion="joy",
            intent_description=lx.GOODBYE_DESCRIPTION,
        )
        text = rng.choice(lx.GOODBYE)
    return SimulatorTurn(user_text=text, labels=labels, progress="achieved")
