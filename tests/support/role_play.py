"""A stub-server handler that plays every EYT role from the prompts it receives, so the whole graph can
run against a real OpenAI-compatible HTTP endpoint in tests. It recognises a role, and the language of its
prompts, by the system prompt; asked in Chinese, it answers in Chinese."""

from __future__ import annotations

import json
from typing import Any

from eyt_dagster.eyt_bench.prompts import load_prompts
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS


def _opening(key: str, language: str = "en") -> str:
    """The first line of a role's system prompt (no placeholders there), which identifies the role."""
    return load_prompts(language)[key]["system"].splitlines()[0]


LABELS = {
    "explicit_intent": "seeking_advice",
    "latent_intent": "self_improvement",
    "emotion": "hope",
    "intent_description": "The user wants a concrete plan for the week.",
}


ROLES = ("seed_generation", "simulator", "perception", "target", "judge_turn", "judge_final")
# What the stub says in Chinese (the labels stay ids, as the prompts ask)
ZH = {
    "topic": "一周的晚饭安排",
    "initial_intent_description": "用户想请人帮忙安排这周的晚饭。",
    "final_intent": "用户拿到一份不超预算的五天晚饭计划。",
    "first_query": "能帮我安排一下这周的晚饭吗？我的情况：",
    "intent_description": "用户想要一份具体的一周计划。",
    "user_text": "谢谢，那第 {day} 天呢？",
    "target": "先做一顿简单的番茄鸡蛋面，再来一锅土豆炖牛肉，都省钱又管饱。",
    "rationale": "计划已经给出",
}


class RolePlay:
    """Answers by role, in the language of the role's prompt; counts requests per role and per language."""

    def __init__(self) -> None:
        self.openings = {(key, language): _opening(key, language) for key in ROLES for language in ("en", "zh")}
        self.by_role: dict[str, int] = {key: 0 for key in ROLES}
        self.by_language: dict[str, int] = {"en": 0, "zh": 0}

    def role_and_language(self, request: dict[str, Any]) -> tuple[str, str]:
        system = next((m["content"] for m in request["messages"] if m["role"] == "system"), "")
        for (key, language), opening in self.openings.items():
            if system.startswith(opening):
                return key, language
        raise AssertionError(f"unrecognised prompt: {system[:80]!r}")

    def role_of(self, request: dict[str, Any]) -> str:
        return self.role_and_language(request)[0]

    def __call__(self, request: dict[str, Any]) -> str:
        role, language = self.role_and_language(request)
        self.by_role[role] += 1
        self.by_language[language] += 1
        if language == "zh":
            return self._chinese(role, request)
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

    def _chinese(self, role: str, request: dict[str, Any]) -> str:
        labels = {**LABELS, "intent_description": ZH["intent_description"]}
        if role == "seed_generation":
            persona = request["messages"][-1]["content"].split("人物设定：", 1)[-1].strip()
            return json.dumps(
                {
                    "topic": ZH["topic"],
                    "initial_emotion": "anxiety",
                    "initial_explicit_intent": "planning",
                    "initial_latent_intent": "need_for_security",
                    "initial_intent_description": ZH["initial_intent_description"],
                    "final_intent": ZH["final_intent"],
                    "first_query": ZH["first_query"] + persona[:40],
                },
                ensure_ascii=False,
            )
        if role == "simulator":
            answered = sum(1 for m in request["messages"] if m["role"] == "user")
            progress = "achieved" if answered >= 2 else "in_progress"
            text = ZH["user_text"].format(day=answered + 1)
            return json.dumps({"user_text": text, "labels": labels, "progress": progress}, ensure_ascii=False)
        if role == "perception":
            return json.dumps(labels, ensure_ascii=False)
        if role == "target":
            return ZH["target"]
        if role == "judge_turn":
            scores = {c: 1.0 if i % 3 else 0.5 for i, c in enumerate(SUBSCORE_COLUMNS)}
            return json.dumps({**scores, "rationale": ZH["rationale"]}, ensure_ascii=False)
        return json.dumps({"completed": True, "satisfaction": 4, "rationale": ZH["rationale"]}, ensure_ascii=False)
