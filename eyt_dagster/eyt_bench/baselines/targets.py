"""Two baseline targets of clearly different quality (baselines, not language models).

- `ReflectiveTarget`: an ELIZA-style responder. Perception scores the lexicon's cue words for every label
  over the query and the recent user turns; the reply acknowledges the detected emotion, reflects the
  user's words back, recalls something said earlier, offers a topic-specific suggestion and asks a
  follow-up question. When the user says the last reply missed, it avoids the aspect it just covered.
- `TerseTarget`: a floor. Perception always returns the same majority guess; replies are a few words.

Perception and generation are separate calls: `respond` never sees what `perceive` returned; it recomputes
the cues it needs from the same history.
"""

from __future__ import annotations

import json
import re

import eyt_dagster.eyt_bench.baselines.lexicon as lx
from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.types import Exchange, UserLabels

# Weight of the query and of the previous user turns (most recent first) when scoring cues.
HISTORY_WEIGHTS = {"explicit": (1.0,), "latent": (1.0, 0.5, 0.25), "emotion": (1.0, 0.3)}
# With `thinking: true` in the slate the reflective baseline deliberates: its perception weighs every
# earlier user turn (decaying by 0.6 per turn) for all three labels, instead of the short windows above.
# It is the embedded stand-in for a reasoning pair (paper Table 7), not a model's reasoning mode.
DELIBERATE_WEIGHTS = tuple(0.6**i for i in range(12))
_INTRO = re.compile(r"\bI'?m an? ([a-z]+(?: [a-z]+){0,2}?) (?:from|in)\b", re.IGNORECASE)


def _user_texts(history: list[Exchange], query: str) -> list[str]:
    """The query, then earlier user turns, most recent first."""
    return [query] + [h.user_text for h in reversed(history)]


def best_label(
    texts: list[str], cues: dict[str, tuple[str, ...]], weights: tuple[float, ...], prior: tuple[str, ...]
) -> str | None:
    """The label with the highest weighted cue count; ties go to the earlier label in `prior`."""
    scores = {label: sum(w * lx.count_cues(t, c) for t, w in zip(texts, weights)) for label, c in cues.items()}
    top = max(scores.values())
    return None if top <= 0 else min((lab for lab, s in scores.items() if s == top), key=prior.index)


def detect_emotion(history: list[Exchange], query: str) -> str:
    """The emotion with the most cues in the query (weight 1) and the previous user turn (0.3); else neutral."""
    return (
        best_label(_user_texts(history, query), lx.EMOTION_CUES, HISTORY_WEIGHTS["emotion"], lx.EMOTION_PRIOR)
        or "neutral"
    )


def detect_topic(history: list[Exchange], query: str) -> str | None:
    """The topic whose words occur most in the user's turns (the query counts double)."""
    scores: dict[str, float] = {}
    texts = _user_texts(history, query)
    for name, topic in lx.TOPICS.items():
        cues = topic.match + tuple(k for a in topic.aspects for k in a.keywords)
        scores[name] = sum((2.0 if i == 0 else 1.0) * lx.count_cues(t, cues) for i, t in enumerate(texts))
    top = max(scores.values())
    return None if top <= 0 else next(n for n, s in scores.items() if s == top)


def detect_aspect(text: str, topic: str | None, avoid: str = "") -> lx.Aspect | None:
    """The aspect whose keywords occur most in the text; the conversation's topic wins ties (+0.5), then
    list order. Aspects whose suggestion occurs in `avoid` (a reply the user just rejected) are skipped."""
    best, best_score = None, 0.0
    for name, candidate in lx.TOPICS.items():
        for aspect in candidate.aspects:
            hits = 0 if aspect.suggestion in avoid else lx.count_cues(text, aspect.keywords)
            score = hits + (0.5 if hits and name == topic else 0.0)
            if score > best_score:
                best, best_score = aspect, score
    return best


def rejected_reply(history: list[Exchange], query: str) -> str:
    """The previous reply when the query says it missed the point (a clarification/complaint cue), else ''."""
    missed = lx.has_cue(query, lx.EXPLICIT_CUES["clarification"] + ("you keep", "same thing", "not helping"))
    return history[-1].response_text if history and missed else ""


def key_phrase(query: str, aspect: lx.Aspect | None, topic: str | None) -> str:
    """What the query is about, in the user's person: the aspect's phrase, else its most repeated noun
    chunk (first wins ties), else the topic's goal, else 'this'."""
    if aspect:
        return aspect.phrase
    chunks = lx.noun_phrases(query)
    if chunks:
        return max(chunks, key=chunks.count)
    return lx.TOPICS[topic].goal if topic else "this"


class ReflectiveTarget:
    """Lexicon perception + an ELIZA-style reply (see the module docstring)."""

    def __init__(self, model_id: str, deliberate: bool = False) -> None:
        self.model_id = model_id
        self.weights = {k: DELIBERATE_WEIGHTS for k in HISTORY_WEIGHTS} if deliberate else HISTORY_WEIGHTS

    def perceive(self, history: list[Exchange], query: str) -> Reply[UserLabels]:
        """Score cue words per label; the description joins the intent's gloss and the query's key phrase."""
        texts = _user_texts(history, query)
        explicit = best_label(texts, lx.EXPLICIT_CUES, self.weights["explicit"], lx.EXPLICIT_PRIOR)
        explicit = explicit or ("information_seeking" if "?" in query else "experience_sharing")
        latent = best_label(texts, lx.LATENT_CUES, self.weights["latent"], lx.LATENT_PRIOR) or lx.LATENT_PRIOR[0]
        topic = detect_topic(history, query)
        aspect = detect_aspect(query, topic, rejected_reply(history, query))
        phrase = lx.shift_person(key_phrase(query, aspect, topic), "third")
        emotion = best_label(texts, lx.EMOTION_CUES, self.weights["emotion"], lx.EMOTION_PRIOR) or "neutral"
        labels = UserLabels(
            explicit_intent=explicit,
            latent_intent=latent,
            emotion=emotion,
            intent_description=f"The user wants {lx.EXPLICIT_GLOSS[explicit]} {phrase}.",
        )
        return Reply(value=labels, raw=labels.model_dump_json())

    def respond(self, history: list[Exchange], query: str) -> Reply[str]:
        """Acknowledge, reflect, recall, suggest, ask; a warm wrap-up when the user is closing."""
        turn = len(history)
        emotion = detect_emotion(history, query)
        topic = detect_topic(history, query)
        aspect = detect_aspect(query, topic, rejected_reply(history, query))
        phrase = lx.shift_person(key_phrase(query, aspect, topic), "second")
        parts = [lx.ACKNOWLEDGE[emotion][turn % 2]]
        if lx.has_cue(query, lx.CLOSURE) and emotion in ("gratitude", "joy", "relief", "hope"):
            goal = lx.shift_person(lx.TOPICS[topic].goal, "second") if topic else "this"
            parts.append(
                f"It was good working through {goal} with you. "
                "You've got a clear next step, so take it one day at a time, and come back any time."
            )
            return _reply(" ".join(parts))
        reflections = (
            f"It sounds like you're thinking about {phrase} right now.",
            f"So you'd like to sort out {phrase} next.",
            f"If I follow you, you want some help with {phrase}.",
        )
        parts.append(reflections[turn % 3])
        recall = _recall(history, aspect)
        if recall:
            parts.append(recall)
        suggestion = aspect.suggestion if aspect else lx.FALLBACK_SUGGESTION
        parts.append(("One concrete idea: " if turn % 2 == 0 else "You could try this: ") + suggestion + ".")
        parts.append(lx.FOLLOW_UP_QUESTIONS[turn % 3].format(phrase=phrase))
        return _reply(" ".join(parts))


def _recall(history: list[Exchange], current: lx.Aspect | None) -> str:
    """Refer back to the user's self-introduction, else to the last different thing they asked about."""
    if not history:
        return ""
    intro = _INTRO.search(history[0].user_text)
    if intro and len(history) % 2 == 1:
        return f"You mentioned you're a {intro.group(1).lower()}, so let's keep that in mind."
    for exchange in reversed(history):
        earlier = detect_aspect(exchange.user_text, None)
        if earlier and earlier != current:
            return f"Earlier you mentioned {lx.shift_person(earlier.phrase, 'second')}, and this builds on that."
    return ""


def _reply(text: str) -> Reply[str]:
    return Reply(value=text, raw=json.dumps(text))


class TerseTarget:
    """A floor baseline: a fixed majority label guess and a few-word generic reply."""

    GUESS = UserLabels(
        explicit_intent="information_seeking",
        latent_intent="seeking_validation",
        emotion="neutral",
        intent_description="The user wants some information.",
    )

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id

    def perceive(self, history: list[Exchange], query: str) -> Reply[UserLabels]:
        return Reply(value=self.GUESS, raw=self.GUESS.model_dump_json())

    def respond(self, history: list[Exchange], query: str) -> Reply[str]:
        """One of a few generic replies, cycled by turn index."""
        return _reply(lx.TERSE_REPLIES[len(history) % len(lx.TERSE_REPLIES)])
