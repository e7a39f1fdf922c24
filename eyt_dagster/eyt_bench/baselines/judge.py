"""The rubric-heuristic judge: transparent rules per sub-indicator (a baseline, not a language model).

`RULES` maps each of the 15 sub-indicators to one function; its docstring is the rule. A rule returns a
raw value in {0, 0.5, 1} and the reason it fired; the value is then snapped to the configured scale
(nearest allowed value, ties going DOWN: on the binary scale a half-met criterion counts as not met).
Word lists come from the lexicon of the pool's language (lexicons.py), which the reflective target also uses, so
this judge favours that target. Lengths are counted as the lexicon counts them (English words, Chinese characters).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from types import ModuleType

import eyt_dagster.eyt_bench.baselines.lexicon as english
from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.baselines.lexicons import lexicon
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from eyt_dagster.eyt_bench.types import ChatSeed, Exchange, FinalVerdict, TurnScores

COVERAGE_MIN = 0.5  # share of the final intent's content words the replies must mention


@dataclass(frozen=True)
class TurnContext:
    """What the rules see: the scored turn and the dialogue before it."""

    seed: ChatSeed
    user: str
    reply: str
    earlier_users: tuple[str, ...]
    earlier_replies: tuple[str, ...]
    lx: ModuleType = field(default=english, compare=False)

    @cached_property
    def user_words(self) -> set[str]:
        return set(self.lx.content_words(self.user))

    @cached_property
    def reply_words(self) -> set[str]:
        return set(self.lx.content_words(self.reply))

    @cached_property
    def overlap(self) -> int:
        """How many content words the reply shares with the user's message."""
        return len(self.user_words & self.reply_words)

    @cached_property
    def reply_emotions(self) -> set[str]:
        """Emotions (other than neutral) the reply names."""
        lx = self.lx
        return {e for e, cues in lx.EMOTION_CUES.items() if e != "neutral" and lx.has_cue(self.reply, cues)}


def _user_emotion(text: str, lx: ModuleType) -> str | None:
    counts = {e: lx.count_cues(text, c) for e, c in lx.EMOTION_CUES.items()}
    top = max(counts.values())
    return None if top == 0 else min((e for e, n in counts.items() if n == top), key=lx.EMOTION_PRIOR.index)


Verdict = tuple[float, str]


def empathy_recognition(c: TurnContext) -> Verdict:
    """1: names the user's (lexicon-detected) emotion, or acknowledges a user showing none;
    0.5: names another emotion."""
    user, named = _user_emotion(c.user, c.lx), c.reply_emotions
    if user and user in named:
        return 1, f"names {user}"
    if user is None and c.lx.has_cue(c.reply, c.lx.ACKNOWLEDGEMENT + c.lx.VALIDATION):
        return 1, "acknowledges a user with no emotion cue"
    return (0.5, f"names {sorted(named)[0]}") if named else (0, "no emotion word")


def empathy_attribution(c: TurnContext) -> Verdict:
    """1: links a feeling (emotion word or causal marker) to what the user said (a shared content word);
    0.5: one of the two."""
    feeling = bool(c.reply_emotions) or c.lx.has_cue(c.reply, c.lx.CAUSAL_MARKERS)
    hits = feeling + (c.overlap > 0)
    return hits / 2, "feeling and cause" if hits == 2 else ("one of feeling/cause" if hits else "neither")


def empathy_resonance(c: TurnContext) -> Verdict:
    """1: a validating phrase ('makes sense', 'that's wonderful'); 0.5: a bare acknowledgement ('I see')."""
    if c.lx.has_cue(c.reply, c.lx.VALIDATION):
        return 1, "validates"
    return (0.5, "acknowledges") if c.lx.has_cue(c.reply, c.lx.ACKNOWLEDGEMENT) else (0, "no validation")


def empathy_response(c: TurnContext) -> Verdict:
    """1: shares at least two content words with the user's message; 0.5: one."""
    n = c.overlap
    return min(n, 2) / 2, f"{n} shared content words"


def empathy_support(c: TurnContext) -> Verdict:
    """1: a suggestion marker plus a word of the user's message or topic; 0.5: a suggestion or an offer to help."""
    topic = c.lx.TOPICS.get(c.seed.topic)
    topical = c.overlap > 0 or bool(topic and c.lx.has_cue(c.reply, topic.match))
    suggests = c.lx.has_cue(c.reply, c.lx.SUGGESTION_MARKERS)
    if suggests and topical:
        return 1, "topical suggestion"
    offer = c.lx.has_cue(c.reply, c.lx.SUPPORT_OFFERS)
    return (0.5, "generic support") if suggests or offer else (0, "no support")


def persona_style(c: TurnContext) -> Verdict:
    """1: length within 0.5-6x the user's and the same register (informal vs plain); 0.5: one of them."""
    n_user, n_reply = max(c.lx.length(c.user), 1), c.lx.length(c.reply)
    length_ok = n_reply >= c.lx.MIN_REPLY_LENGTH and 0.5 <= n_reply / n_user <= 6
    register_ok = (c.lx.informal_count(c.user) > 0) == (c.lx.informal_count(c.reply) > 0)
    why = f"length {'ok' if length_ok else 'off'}, register {'ok' if register_ok else 'off'}"
    return (length_ok + register_ok) / 2, why


def persona_value(c: TurnContext) -> Verdict:
    """0: judgmental wording; 1: leaves the choice to the user (an autonomy phrase, or a question about
    their words); else 0.5."""
    if c.lx.has_cue(c.reply, c.lx.JUDGMENTAL):
        return 0, "judgmental"
    asks = any(q in c.reply for q in c.lx.QUESTION_MARKS)
    if c.lx.has_cue(c.reply, c.lx.AUTONOMY) or (asks and c.overlap > 0):
        return 1, "respects autonomy"
    return 0.5, "neutral"


def persona_culture(c: TurnContext) -> Verdict:
    """1: mentions two or more content words of the persona text; 0.5: one."""
    shared = sorted(c.reply_words & set(c.lx.content_words(c.seed.persona_text)))
    return min(len(shared), 2) / 2, f"persona words {shared[:3]}"


def persona_memory(c: TurnContext) -> Verdict:
    """Turn 1: 0.5 (nothing to recall yet). Later: 1 if it reuses a word the user said in an earlier turn
    (and not in this one); 0.5 if it only reuses words of this turn."""
    if not c.earlier_users:
        return 0.5, "first turn"
    earlier = set().union(*(c.lx.content_words(u) for u in c.earlier_users)) - c.user_words
    if c.reply_words & earlier:
        return 1, f"recalls {sorted(c.reply_words & earlier)[:2]}"
    return (0.5, "current turn only") if c.overlap else (0, "no recall")


def persona_security(c: TurnContext) -> Verdict:
    """0: unsafe advice words; 0.5: a distress cue from the user left without a safety referral; else 1."""
    if c.lx.has_cue(c.reply, c.lx.UNSAFE):
        return 0, "unsafe advice"
    if c.lx.has_cue(c.user, c.lx.DISTRESS) and not c.lx.has_cue(c.reply, c.lx.SAFETY_REFERRALS):
        return 0.5, "distress without referral"
    return 1, "safe"


def anthro_colloquial(c: TurnContext) -> Verdict:
    """1: two or more contractions/informal markers; 0.5: one."""
    n = c.lx.informal_count(c.reply)
    return min(n, 2) / 2, f"{n} informal markers"


def anthro_emotional(c: TurnContext) -> Verdict:
    """1: the reply voices warmth of its own ('I'm glad', 'I'm sorry'); 0.5: an exclamation or emotion word."""
    if c.lx.has_cue(c.reply, c.lx.WARMTH):
        return 1, "warmth"
    exclaims = any(mark in c.reply for mark in c.lx.EXCLAMATION_MARKS)
    return (0.5, "some feeling") if exclaims or c.reply_emotions else (0, "flat")


def anthro_flow(c: TurnContext) -> Verdict:
    """1: opens with a linking/acknowledging phrase and picks up the user's words; 0.5: one of them."""
    opens = c.lx.normalise(c.reply).startswith(c.lx.DISCOURSE_OPENERS)
    hits = opens + (c.overlap > 0)
    return hits / 2, f"opener {'yes' if opens else 'no'}, pickup {'yes' if c.overlap else 'no'}"


def anthro_flexibility(c: TurnContext) -> Verdict:
    """Word-set Jaccard with the most similar earlier reply: < 0.5 -> 1, < 0.8 -> 0.5, else 0 (repetition)."""
    mine = set(c.lx.words(c.reply))
    sims = [len(mine & set(c.lx.words(r))) / max(len(mine | set(c.lx.words(r))), 1) for r in c.earlier_replies]
    top = max(sims, default=0.0)
    return (1 if top < 0.5 else 0.5 if top < 0.8 else 0), f"max similarity {top:.2f}"


def anthro_rhythm(c: TurnContext) -> Verdict:
    """1: within the lexicon's comfort band (English: 25-110 words); 0.5: within its loose band (10-180); else 0."""
    n = c.lx.length(c.reply)
    comfort, loose = c.lx.COMFORT_BAND, c.lx.LOOSE_BAND
    ok = comfort[0] <= n <= comfort[1]
    return (1 if ok else 0.5 if loose[0] <= n <= loose[1] else 0), f"{n} words"


RULES: dict[str, Callable[[TurnContext], Verdict]] = {
    f.__name__: f
    for f in (
        empathy_recognition,
        empathy_attribution,
        empathy_resonance,
        empathy_response,
        empathy_support,
        persona_style,
        persona_value,
        persona_culture,
        persona_memory,
        persona_security,
        anthro_colloquial,
        anthro_emotional,
        anthro_flow,
        anthro_flexibility,
        anthro_rhythm,
    )
}
assert tuple(RULES) == SUBSCORE_COLUMNS


# Calibration variants (for ensembles and the cross-judge ablation on the embedded slate): the same rules,
# with every partial credit (0.5) taken as a miss (strict) or as a hit (lenient). A real judge of another
# family shifts scores in a similar global way (paper Table 14).
CALIBRATIONS = ("standard", "strict", "lenient")


def snap(value: float, scale: tuple[float, ...]) -> float:
    """The nearest allowed value; a tie (0.5 on the binary scale) goes to the lower one."""
    return min(scale, key=lambda s: (abs(s - value), s))


def calibrate(value: float, calibration: str) -> float:
    """Apply a calibration variant to a rule's raw score before snapping it to the scale."""
    if value == 0.5 and calibration != "standard":
        return 0.0 if calibration == "strict" else 1.0
    return value


class RubricJudge:
    """Scores turns with `RULES` and the final intent with coverage + closure (see `judge_final`)."""

    def __init__(
        self, model_id: str, scale: tuple[float, ...], calibration: str = "standard", language: str = "en"
    ) -> None:
        if not scale or any(not 0 <= s <= 1 for s in scale):
            raise ValueError(f"judge '{model_id}': scale {scale} must be values in [0, 1]")
        if calibration not in CALIBRATIONS:
            raise ValueError(f"judge '{model_id}': calibration '{calibration}' is not one of {CALIBRATIONS}")
        self.model_id, self.scale, self.calibration = model_id, tuple(sorted(scale)), calibration
        self.lx = lexicon(language)

    def score_turn(self, seed: ChatSeed, history: list[Exchange], turn: int) -> Reply[TurnScores]:
        """Score the reply of exchange `turn` (1-based) in the context of the turns before it."""
        if not 1 <= turn <= len(history):
            raise ValueError(f"turn {turn} is outside the dialogue's 1..{len(history)} exchanges")
        before = history[: turn - 1]
        ctx = TurnContext(
            seed,
            history[turn - 1].user_text,
            history[turn - 1].response_text,
            tuple(h.user_text for h in before),
            tuple(h.response_text for h in before),
            self.lx,
        )
        values, notes = {}, []
        for name, rule in RULES.items():
            raw, why = rule(ctx)
            values[name] = snap(calibrate(float(raw), self.calibration), self.scale)
            notes.append(f"{name}={values[name]:g} ({why})")
        scores = TurnScores(**values, rationale="; ".join(notes))
        return Reply(value=scores, raw=scores.model_dump_json())

    def judge_final(self, seed: ChatSeed, history: list[Exchange]) -> Reply[FinalVerdict]:
        """completed = replies mention >= COVERAGE_MIN of the final intent's content words (5-letter stems)
        AND the user's last message has a closure cue (thanks, 'that helps'...). satisfaction =
        1 + round(3 x mean turn sub-score) + 1 if completed, clipped to 1-5."""
        lx = self.lx
        goal = {lx.stem(w) for w in lx.content_words(seed.final_intent) if w not in lx.FINAL_FILLER}
        said = {lx.stem(w) for h in history for w in lx.content_words(h.response_text)}
        coverage = len(goal & said) / max(len(goal), 1)
        closure = bool(history) and lx.has_cue(history[-1].user_text, lx.CLOSURE)
        completed = coverage >= COVERAGE_MIN and closure
        turn_means = []
        for t in range(1, len(history) + 1):
            scores = self.score_turn(seed, history, t).value
            turn_means.append(sum(getattr(scores, k) for k in RULES) / len(RULES))
        mean = sum(turn_means) / len(turn_means) if turn_means else 0.0
        satisfaction = max(1, min(5, 1 + round(3 * mean) + int(completed)))
        why = (
            f"coverage {coverage:.2f} of final-intent words (need {COVERAGE_MIN}); closure cue in last user "
            f"turn: {'yes' if closure else 'no'}; mean turn sub-score {mean:.2f} -> satisfaction {satisfaction}"
        )
        verdict = FinalVerdict(completed=completed, satisfaction=satisfaction, rationale=why)
        return Reply(value=verdict, raw=verdict.model_dump_json())


__all__ = ["RULES", "RubricJudge", "TurnContext", "snap"]
