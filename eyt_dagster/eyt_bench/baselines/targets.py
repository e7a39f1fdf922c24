"""Two baseline targets of clearly different quality (baselines, not language models).

- `ReflectiveTarget`: an ELIZA-style responder. Perception scores the lexicon's cue words for every label
  over the query and the recent user turns; the reply acknowledges the detected emotion, reflects the
  user's words back, recalls something said earlier, offers a topic-specific suggestion and asks a
  follow-up question. When the user says the last reply missed, it avoids the aspect it just covered.
- `TerseTarget`: a floor. Perception always returns the same majority guess; replies are a few words.

Perception and generation are separate calls: `respond` never sees what `perceive` returned; it recomputes
the cues it needs from the same history. The words come from the lexicon of the pool's language (lexicons.py).
"""

from __future__ import annotations

import json
from types import ModuleType

import eyt_dagster.eyt_bench.baselines.lexicon as english
from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.baselines.lexicons import lexicon
from eyt_dagster.eyt_bench.types import Exchange, UserLabels

# Weight of the query and of the previous user turns (most recent first) when scoring cues.
HISTORY_WEIGHTS = {"explicit": (1.0,), "latent": (1.0, 0.5, 0.25), "emotion": (1.0, 0.3)}
# With `thinking: true` in the slate the reflective baseline deliberates: its perception weighs every
# earlier user turn (decaying by 0.6 per turn) for all three labels, instead of the short windows above.
# It is the embedded stand-in for a reasoning pair (paper Table 7), not a model's reasoning mode.
DELIBERATE_WEIGHTS = tuple(0.6**i for i in range(12))


def _user_texts(history: list[Exchange], query: str) -> list[str]:
    """The query, then earlier user turns, most recent first."""
    return [query] + [h.user_text for h in reversed(history)]


def best_label(
    texts: list[str],
    cues: dict[str, tuple[str, ...]],
    weights: tuple[float, ...],
    prior: tuple[str, ...],
    lx: ModuleType = english,
) -> str | None:
    """The label with the highest weighted cue count; ties go to the earlier label in `prior`."""
    scores = {label: sum(w * lx.count_cues(t, c) for t, w in zip(texts, weights)) for label, c in cues.items()}
    top = max(scores.values())
    return None if top <= 0 else min((lab for lab, s in scores.items() if s == top), key=prior.index)


def detect_emotion(history: list[Exchange], query: str, lx: ModuleType = english) -> str:
    """The emotion with the most cues in the query (weight 1) and the previous user turn (0.3); else neutral."""
    return (
        best_label(_user_texts(history, query), lx.EMOTION_CUES, HISTORY_WEIGHTS["emotion"], lx.EMOTION_PRIOR, lx)
        or "neutral"
    )


def detect_topic(history: list[Exchange], query: str, lx: ModuleType = english) -> str | None:
    """The topic whose words occur most in the user's turns (the query counts double)."""
    scores: dict[str, float] = {}
    texts = _user_texts(history, query)
    for name, topic in lx.TOPICS.items():
        cues = topic.match + tuple(k for a in topic.aspects for k in a.keywords)
        scores[name] = sum((2.0 if i == 0 else 1.0) * lx.count_cues(t, cues) for i, t in enumerate(texts))
    top = max(scores.values())
    return None if top <= 0 else next(n for n, s in scores.items() if s == top)


def detect_aspect(text: str, topic: str | None, avoid: str = "", lx: ModuleType = english) -> english.Aspect | None:
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


def rejected_reply(history: list[Exchange], query: str, lx: ModuleType = english) -> str:
    """The previous reply when the query says it missed the point (a clarification/complaint cue), else ''."""
    missed = lx.has_cue(query, lx.EXPLICIT_CUES["clarification"] + lx.COMPLAINT_CUES)
    return history[-1].response_text if history and missed else ""


def key_phrase(query: str, aspect: english.Aspect | None, topic: str | None, lx: ModuleType = english) -> str:
    """What the query is about, in the user's person: the aspect's phrase, else its most repeated noun
    chunk (first wins ties), else the topic's goal, else 'this'."""
    if aspect:
        return aspect.phrase
    chunks = lx.noun_phrases(query)
    if chunks:
        return max(chunks, key=chunks.count)
    return str(lx.TOPICS[topic].goal) if topic else str(lx.DEFAULT_PHRASE)


class ReflectiveTarget:
    """Lexicon perception + an ELIZA-style reply (see the module docstring)."""

    def __init__(self, model_id: str, deliberate: bool = False, language: str = "en") -> None:
        self.model_id = model_id
        self.weights = {k: DELIBERATE_WEIGHTS for k in HISTORY_WEIGHTS} if deliberate else HISTORY_WEIGHTS
        self.lx = lexicon(language)

    def perceive(self, history: list[Exchange], query: str) -> Reply[UserLabels]:
        """Score cue words per label; the description joins the intent's gloss and the query's key phrase."""
        lx = self.lx
        texts = _user_texts(history, query)
        explicit = best_label(texts, lx.EXPLICIT_CUES, self.weights["explicit"], lx.EXPLICIT_PRIOR, lx)
        asks = any(q in query for q in lx.QUESTION_MARKS)
        explicit = explicit or ("information_seeking" if asks else "experience_sharing")
        latent = best_label(texts, lx.LATENT_CUES, self.weights["latent"], lx.LATENT_PRIOR, lx) or lx.LATENT_PRIOR[0]
        topic = detect_topic(history, query, lx)
        aspect = detect_aspect(query, topic, rejected_reply(history, query, lx), lx)
        phrase = lx.shift_person(key_phrase(query, aspect, topic, lx), "third")
        emotion = best_label(texts, lx.EMOTION_CUES, self.weights["emotion"], lx.EMOTION_PRIOR, lx) or "neutral"
        labels = UserLabels(
            explicit_intent=explicit,
            latent_intent=latent,
            emotion=emotion,
            intent_description=lx.DESCRIBE.format(gloss=lx.EXPLICIT_GLOSS[explicit], phrase=phrase),
        )
        return Reply(value=labels, raw=labels.model_dump_json())

    def respond(self, history: list[Exchange], query: str) -> Reply[str]:
        """Acknowledge, reflect, recall, suggest, ask; a warm wrap-up when the user is closing."""
        lx = self.lx
        turn = len(history)
        emotion = detect_emotion(history, query, lx)
        topic = detect_topic(history, query, lx)
        aspect = detect_aspect(query, topic, rejected_reply(history, query, lx), lx)
        phrase = lx.shift_person(key_phrase(query, aspect, topic, lx), "second")
        parts = [lx.ACKNOWLEDGE[emotion][turn % 2]]
        if lx.has_cue(query, lx.CLOSURE) and emotion in ("gratitude", "joy", "relief", "hope"):
            goal = lx.shift_person(lx.TOPICS[topic].goal, "second") if topic else lx.DEFAULT_PHRASE
            parts.append(lx.WRAP_UP.format(goal=goal))
            return _reply(lx.JOIN.join(parts))
        parts.append(lx.REFLECTIONS[turn % 3].format(phrase=phrase))
        recall = _recall(history, aspect, lx)
        if recall:
            parts.append(recall)
        suggestion = aspect.suggestion if aspect else lx.FALLBACK_SUGGESTION
        parts.append(lx.IDEA_LEADS[turn % 2] + suggestion + lx.SENTENCE_END)
        parts.append(lx.FOLLOW_UP_QUESTIONS[turn % 3].format(phrase=phrase))
        return _reply(lx.JOIN.join(parts))


def _recall(history: list[Exchange], current: english.Aspect | None, lx: ModuleType) -> str:
    """Refer back to the user's self-introduction, else to the last different thing they asked about."""
    if not history:
        return ""
    job = lx.introduced_job(history[0].user_text)
    if job and len(history) % 2 == 1:
        return str(lx.RECALL_INTRO.format(job=job))
    for exchange in reversed(history):
        earlier = detect_aspect(exchange.user_text, None, lx=lx)
        if earlier and earlier != current:
            return str(lx.RECALL_EARLIER.format(phrase=lx.shift_person(earlier.phrase, "second")))
    return ""


def _reply(text: str) -> Reply[str]:
    return Reply(value=text, raw=json.dumps(text))


class TerseTarget:
    """A floor baseline: a fixed majority label guess and a few-word generic reply."""

    def __init__(self, model_id: str, language: str = "en") -> None:
        self.model_id = model_id
        self.lx = lexicon(language)
        self.guess = UserLabels(
            explicit_intent="information_seeking",
            latent_intent="seeking_validation",
            emotion="neutral",
            intent_description=self.lx.TERSE_DESCRIPTION,
        )

    def perceive(self, history: list[Exchange], query: str) -> Reply[UserLabels]:
        return Reply(value=self.guess, raw=self.guess.model_dump_json())

    def respond(self, history: list[Exchange], query: str) -> Reply[str]:
        """One of a few generic replies, cycled by turn index."""
        replies = self.lx.TERSE_REPLIES
        return _reply(replies[len(history) % len(replies)])
