"""A stub-server handler that plays every EYT role from the prompts it receives, so the whole graph can
run against a real OpenAI-compatible HTTP endpoint in tests. It recognises a role by its system prompt."""

from __future__ import annotations

import json
from typing import Any

from eyt_dagster.eyt_bench.prompts import load_prompts
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS


def _opening(key: str) -> str:
    """The first line of a role's system prompt (no placeholders there), which identifies the role."""
    return load_prompts()[key]["system"].splitlines()[0]


LABELS = {
    "explicit_intent": "seeking_advice",
    "latent_intent": "self_improvement",
    "emotion": "hope",
    "intent_description": "The user wants a concrete plan for the week.",
}


class RolePlay:
    """Answers by role; counts requests per role."""

    def __init__(self) -> None:
        self.openings = {
            key: _opening(key)
            for key in ("seed_generation", "simulator", "perception", "target", "judge_turn", "judge_final")
        }
        self.by_role: dict[str, int] = {key: 0 for key in self.openings}

    def role_of(self, request: dict[str, Any]) -> str:
        system = next((m["content"] for m in request["messages"] if m["role"] == "system"), "")
        for key, opening in self.openings.items():
            if system.startswith(opening):
                return key
        raise AssertionError(f"unrecognised prompt: {system[:80]!r}")

    def __call__(self, request: dict[str, Any]) -> str:
        role = self.role_of(request)
        self.by_role[role] += 1
        if role == "seed_generation":
            persona = request["messages"][-1]["content"].split("Persona:", 1)[-1].strip()
            return json.dumps(
                {
                    "topic": "weekly meal planning",
                    "initial_emotion": "anxiety",
                    "initial_explicit_intent": "planning",
                    "initial_latent_intent": "need_for_security",
                    "initial_intent_description": "The user wants help planning meals.",
                    "final_intent": "The user leaves with a five-day dinner plan within budget.",
                    "first_query": f"Can you help me plan dinners for this week? About me: {persona[:60]}",
                }
            )
        if role == "simulator":
            answered = sum(1 for m in request["messages"] if m["role"] == "user")
            progress = "achieved" if answered >= 2 else "in_progress"
            return json.dumps(
                {"user_text": f"Thanks, and what about day {answered + 1}?", "labels": LABELS, "progress": progress}
            )
        if role == "perception":
            return json.dumps(LABELS)
        if role == "target":
            return "Let's start with a simple pasta night and a bean chili; both are cheap and filling."
        if role == "judge_turn":
            return json.dumps({**{c: 1.0 if i % 3 else 0.5 for i, c in enumerate(SUBSCORE_COLUMNS)}, "rationale": "ok"})
        return json.dumps({"completed": True, "satisfaction": 4, "rationale": "plan delivered"})
