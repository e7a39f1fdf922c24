"""The three EYT-Bench roles played by chat models through a ChatClient, and the simulator audit's model check.

Each method renders its prompt from the prompt file, makes one chat call and returns the validated reply.
Algorithm 1 keeps perception and generation apart: `LLMTarget.perceive` and `LLMTarget.respond` are two
calls, and the prediction prompt is never part of the generation call's messages. Each role speaks one language:
its prompts come from that language's file (eyt_dagster/prompts/default_<language>.yaml), English by default.
"""

from __future__ import annotations

from eyt_dagster.core.chat_protocol import ChatClient, Messages
from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.prompts import AUDIT_PROMPT_KEY, render, transcript_labels
from eyt_dagster.eyt_bench.types import (
    AuditedTurn,
    AuditVerdict,
    ChatSeed,
    ChatSeedContent,
    Exchange,
    FinalVerdict,
    PersonaRecord,
    SimulatorTurn,
    TurnScores,
    UserLabels,
    turn_scores_model,
)


def transcript(history: list[Exchange], language: str = DEFAULT_LANGUAGE) -> str:
    """The conversation as plain text, one line per message, turns numbered from 1, labelled in `language`."""
    labels = transcript_labels(language)
    if not history:
        return labels["empty"]
    lines = []
    for t, ex in enumerate(history, start=1):
        turn = labels["turn"].format(turn=t)
        lines.append(f"{turn} {labels['user']}{ex.user_text}")
        lines.append(f"{turn} {labels['assistant']}{ex.response_text}")
    return "\n".join(lines)


def chat_messages(system: str, history: list[Exchange], query: str) -> Messages:
    """The target's view: its system prompt, then the dialogue as user/assistant turns, then q_t."""
    messages: Messages = [{"role": "system", "content": system}]
    for ex in history:
        messages.append({"role": "user", "content": ex.user_text})
        messages.append({"role": "assistant", "content": ex.response_text})
    messages.append({"role": "user", "content": query})
    return messages


class LLMSimulator:
    """The user simulator M_u as a chat model: writes ChatSEEDs and the next user turn."""

    def __init__(self, client: ChatClient, language: str = DEFAULT_LANGUAGE) -> None:
        self.client = client
        self.model_id = client.model_id
        self.language = language

    def generate_seed(self, persona: PersonaRecord, *, seed_id: str) -> Reply[ChatSeedContent]:
        messages = [
            {"role": "system", "content": render("seed_generation", "system", self.language)},
            {
                "role": "user",
                "content": render("seed_generation", "user", self.language, persona_text=persona.persona_text),
            },
        ]
        return self.client.complete_json(messages, ChatSeedContent, purpose=f"chat_seed:{seed_id}")

    def next_turn(self, seed: ChatSeed, history: list[Exchange]) -> Reply[SimulatorTurn]:
        system = render(
            "simulator",
            "system",
            self.language,
            persona_text=seed.persona_text,
            topic=seed.topic,
            initial_emotion=seed.initial_emotion,
            final_intent=seed.final_intent,
        )
        # From the simulator's side the roles are mirrored: its own lines are "assistant" turns.
        messages: Messages = [{"role": "system", "content": system}]
        for ex in history:
            messages.append({"role": "assistant", "content": ex.user_text})
            messages.append({"role": "user", "content": ex.response_text})
        return self.client.complete_json(messages, SimulatorTurn, purpose=f"simulate:{seed.seed_id}:{len(history) + 1}")


class LLMTarget:
    """The model under test M_t: perception (prediction prompt P_p) and generation (system prompt sys)."""

    def __init__(self, client: ChatClient, language: str = DEFAULT_LANGUAGE) -> None:
        self.client = client
        self.model_id = client.model_id
        self.language = language

    def perceive(self, history: list[Exchange], query: str) -> Reply[UserLabels]:
        messages = [
            {"role": "system", "content": render("perception", "system", self.language)},
            {
                "role": "user",
                "content": render(
                    "perception", "user", self.language, transcript=transcript(history, self.language), query=query
                ),
            },
        ]
        return self.client.complete_json(messages, UserLabels, purpose=f"perceive:{len(history) + 1}")

    def respond(self, history: list[Exchange], query: str) -> Reply[str]:
        messages = chat_messages(render("target", "system", self.language), history, query)
        return self.client.complete_text(messages, purpose=f"respond:{len(history) + 1}")


class LLMJudge:
    """The third-party judge as a chat model (temperature comes from the slate; the paper uses 0)."""

    def __init__(self, client: ChatClient, scale: tuple[float, ...], language: str = DEFAULT_LANGUAGE) -> None:
        self.client = client
        self.model_id = client.model_id
        self.scale = scale
        self.language = language

    def score_turn(self, seed: ChatSeed, history: list[Exchange], turn: int) -> Reply[TurnScores]:
        half_note = ", 0.5 = partly met" if 0.5 in self.scale else ""
        messages = [
            {
                "role": "system",
                "content": render(
                    "judge_turn",
                    "system",
                    self.language,
                    scale=", ".join(f"{v:g}" for v in self.scale),
                    half_note=half_note,
                ),
            },
            {
                "role": "user",
                "content": render(
                    "judge_turn",
                    "user",
                    self.language,
                    persona_text=seed.persona_text,
                    turn=turn,
                    transcript=transcript(history[:turn], self.language),
                ),
            },
        ]
        return self.client.complete_json(
            messages, turn_scores_model(self.scale), purpose=f"judge_turn:{seed.seed_id}:{turn}"
        )

    def judge_final(self, seed: ChatSeed, history: list[Exchange]) -> Reply[FinalVerdict]:
        messages = [
            {"role": "system", "content": render("judge_final", "system", self.language)},
            {
                "role": "user",
                "content": render(
                    "judge_final",
                    "user",
                    self.language,
                    final_intent=seed.final_intent,
                    transcript=transcript(history, self.language),
                ),
            },
        ]
        return self.client.complete_json(messages, FinalVerdict, purpose=f"judge_final:{seed.seed_id}")


class LLMAuditor:
    """The simulator audit's model check as a chat model: one call per simulator turn, answering AuditVerdict."""

    def __init__(self, client: ChatClient, language: str = DEFAULT_LANGUAGE) -> None:
        self.client = client
        self.model_id = client.model_id
        self.language = language

    def check_turn(self, turn: AuditedTurn) -> Reply[AuditVerdict]:
        messages = [
            {"role": "system", "content": render(AUDIT_PROMPT_KEY, "system", self.language)},
            {
                "role": "user",
                "content": render(
                    AUDIT_PROMPT_KEY,
                    "user",
                    self.language,
                    latent_intent=turn.latent_intent,
                    latent_statement=turn.latent_statement or "(no statement for this intent)",
                    previous_reply=turn.previous_reply or "(none: this is the user's first message)",
                    utterance=turn.utterance,
                ),
            },
        ]
        return self.client.complete_json(messages, AuditVerdict, purpose=f"simulator_audit:{turn.seed_id}:{turn.turn}")
