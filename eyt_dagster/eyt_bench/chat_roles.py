"""The three EYT-Bench roles played by chat models through a ChatClient, and the simulator audit's model check.

Each method renders its prompt from the prompt file, makes one chat call and returns the validated reply.
Algorithm 1 keeps perception and generation apart: `LLMTarget.perceive` and `LLMTarget.respond` are two
calls, and the prediction prompt is never part of the generation call's messages.
"""

from __future__ import annotations

from eyt_dagster.core.chat_protocol import ChatClient, Messages
from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.prompts import AUDIT_PROMPT_KEY, render
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


def transcript(history: list[Exchange]) -> str:
    """The conversation as plain text, one line per message, turns numbered from 1."""
    if not history:
        return "(no earlier messages)"
    lines = []
    for t, ex in enumerate(history, start=1):
        lines.append(f"[turn {t}] User: {ex.user_text}")
        lines.append(f"[turn {t}] Assistant: {ex.response_text}")
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

    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self.model_id = client.model_id

    def generate_seed(self, persona: PersonaRecord, *, seed_id: str) -> Reply[ChatSeedContent]:
        messages = [
            {"role": "system", "content": render("seed_generation", "system")},
            {"role": "user", "content": render("seed_generation", "user", persona_text=persona.persona_text)},
        ]
        return self.client.complete_json(messages, ChatSeedContent, purpose=f"chat_seed:{seed_id}")

    def next_turn(self, seed: ChatSeed, history: list[Exchange]) -> Reply[SimulatorTurn]:
        system = render(
            "simulator",
            "system",
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

    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self.model_id = client.model_id

    def perceive(self, history: list[Exchange], query: str) -> Reply[UserLabels]:
        messages = [
            {"role": "system", "content": render("perception", "system")},
            {"role": "user", "content": render("perception", "user", transcript=transcript(history), query=query)},
        ]
        return self.client.complete_json(messages, UserLabels, purpose=f"perceive:{len(history) + 1}")

    def respond(self, history: list[Exchange], query: str) -> Reply[str]:
        messages = chat_messages(render("target", "system"), history, query)
        return self.client.complete_text(messages, purpose=f"respond:{len(history) + 1}")


class LLMJudge:
    """The third-party judge as a chat model (temperature comes from the slate; the paper uses 0)."""

    def __init__(self, client: ChatClient, scale: tuple[float, ...]) -> None:
        self.client = client
        self.model_id = client.model_id
        self.scale = scale

    def score_turn(self, seed: ChatSeed, history: list[Exchange], turn: int) -> Reply[TurnScores]:
        half_note = ", 0.5 = partly met" if 0.5 in self.scale else ""
        messages = [
            {
                "role": "system",
                "content": render(
                    "judge_turn", "system", scale=", ".join(f"{v:g}" for v in self.scale), half_note=half_note
                ),
            },
            {
                "role": "user",
                "content": render(
                    "judge_turn",
                    "user",
                    persona_text=seed.persona_text,
                    turn=turn,
                    transcript=transcript(history[:turn]),
                ),
            },
        ]
        return self.client.complete_json(
            messages, turn_scores_model(self.scale), purpose=f"judge_turn:{seed.seed_id}:{turn}"
        )

    def judge_final(self, seed: ChatSeed, history: list[Exchange]) -> Reply[FinalVerdict]:
        messages = [
            {"role": "system", "content": render("judge_final", "system")},
            {
                "role": "user",
                "content": render(
                    "judge_final", "user", final_intent=seed.final_intent, transcript=transcript(history)
                ),
            },
        ]
        return self.client.complete_json(messages, FinalVerdict, purpose=f"judge_final:{seed.seed_id}")


class LLMAuditor:
    """The simulator audit's model check as a chat model: one call per simulator turn, answering AuditVerdict."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self.model_id = client.model_id

    def check_turn(self, turn: AuditedTurn) -> Reply[AuditVerdict]:
        messages = [
            {"role": "system", "content": render(AUDIT_PROMPT_KEY, "system")},
            {
                "role": "user",
                "content": render(
                    AUDIT_PROMPT_KEY,
                    "user",
                    latent_intent=turn.latent_intent,
                    latent_statement=turn.latent_statement or "(no statement for this intent)",
                    previous_reply=turn.previous_reply or "(none: this is the user's first message)",
                    utterance=turn.utterance,
                ),
            },
        ]
        return self.client.complete_json(messages, AuditVerdict, purpose=f"simulator_audit:{turn.seed_id}:{turn.turn}")
