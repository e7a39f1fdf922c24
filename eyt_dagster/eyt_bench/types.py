"""EYT-Bench's records: what flows between its roles (simulator, target, judge), in one file.

Every reply a model gives is validated into one of these; a value outside a taxonomy is a validation
error (rejected and retried, never coerced). The JSON schema of a reply model is what the chat client sends
to the server, so it states every rule the parser applies: labels as enums, free text with a maximum
length (eyt_dagster/core/reply_limits.py), judge scores as the values of the configured scale
(`turn_scores_model`). See docs/remote-models.md.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from eyt_dagster.core.reply_limits import LABEL_CHARS, MESSAGE_CHARS, PARAGRAPH_CHARS, SENTENCE_CHARS
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS, Emotion, ExplicitIntent, LatentIntent, Progress


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class PersonaRecord(_Strict):
    """One row of a persona pool (docs/method.md#persona-pools): the same fields for both pools."""

    persona_id: str
    pool: str
    source: str
    persona_text: str
    attributes: dict[str, Any] = Field(default_factory=dict)
    topic_tags: list[str] = Field(default_factory=list)
    length_bucket: str = ""


class UserLabels(_Strict):
    """The labels of one user turn: gold (from the simulator) or predicted (by the target)."""

    explicit_intent: ExplicitIntent
    latent_intent: LatentIntent
    emotion: Emotion
    intent_description: str = Field(
        min_length=1, max_length=SENTENCE_CHARS, description="One sentence: what the user wants now."
    )


class ChatSeedContent(_Strict):
    """What the simulator writes for a ChatSEED (paper §3.3): the dialogue's start and goal."""

    topic: str = Field(min_length=1, max_length=LABEL_CHARS)
    initial_emotion: Emotion
    initial_explicit_intent: ExplicitIntent
    initial_latent_intent: LatentIntent
    initial_intent_description: str = Field(min_length=1, max_length=SENTENCE_CHARS)
    final_intent: str = Field(
        min_length=1, max_length=SENTENCE_CHARS, description="One sentence the user must reach by the end."
    )
    first_query: str = Field(min_length=1, max_length=MESSAGE_CHARS)


class ChatSeed(ChatSeedContent):
    """A ChatSEED with its identity and the persona it was made from."""

    seed_id: str
    pool: str
    persona_id: str
    persona_text: str

    def opening_labels(self) -> UserLabels:
        return UserLabels(
            explicit_intent=self.initial_explicit_intent,
            latent_intent=self.initial_latent_intent,
            emotion=self.initial_emotion,
            intent_description=self.initial_intent_description,
        )


class SimulatorTurn(_Strict):
    """The simulator's next user turn with its gold labels and final-intent progress (Alg. 1, line 7)."""

    user_text: str = Field(min_length=1, max_length=MESSAGE_CHARS)
    labels: UserLabels
    progress: Progress


class Exchange(_Strict):
    """One completed turn of the rolling context C: the user's query and the target's reply."""

    user_text: str
    response_text: str


class TurnScores(_Strict):
    """The judge's 15 sub-indicators for one turn (paper §3.5.3). The allowed values are a setting: a
    judge model is sent, and validated with, `turn_scores_model(scale)`, whose fields take only the scale's
    values; this base class (any float) is what the embedded judge baseline fills in."""

    empathy_recognition: float
    empathy_attribution: float
    empathy_resonance: float
    empathy_response: float
    empathy_support: float
    persona_style: float
    persona_value: float
    persona_culture: float
    persona_memory: float
    persona_security: float
    anthro_colloquial: float
    anthro_emotional: float
    anthro_flow: float
    anthro_flexibility: float
    anthro_rhythm: float
    rationale: str = Field(default="", max_length=PARAGRAPH_CHARS)


@lru_cache(maxsize=8)
def turn_scores_model(scale: tuple[float, ...]) -> type[TurnScores]:
    """TurnScores whose 15 sub-scores take only the values of `scale` (e.g. (0.0, 0.5, 1.0)): the JSON
    schema says so with an enum, so a server that enforces the schema cannot send a value the parser
    rejects, and the parser rejects any other value (a server that does not enforce it is re-asked)."""
    allowed = Literal[tuple(float(v) for v in scale)]  # type: ignore[valid-type]  # a run-time Literal of floats
    fields: dict[str, Any] = {column: (allowed, ...) for column in SUBSCORE_COLUMNS}
    name = "TurnScores_" + "_".join(f"{v:g}".replace(".", "p") for v in scale)
    return create_model(name, __base__=TurnScores, **fields)


class FinalVerdict(_Strict):
    """The judge's end-of-dialogue verdict (paper §3.5.2): completion and satisfaction 1-5."""

    completed: bool
    satisfaction: int = Field(ge=1, le=5)
    rationale: str = Field(default="", max_length=PARAGRAPH_CHARS)


class AuditedTurn(_Strict):
    """One simulator turn as the simulator audit's model check sees it: what the persona hides, what the assistant
    said last, and what the simulator wrote next. `seed_id` and `turn` name it in the call ledger."""

    seed_id: str
    turn: int
    latent_intent: str
    latent_statement: str
    previous_reply: str
    utterance: str


class AuditVerdict(_Strict):
    """The audit model's answer on one simulator turn: does it state the hidden intent, does it talk as the
    assistant, and why (a short reason)."""

    leaks_intent: bool
    speaks_as_assistant: bool
    reason: str = Field(max_length=SENTENCE_CHARS)
