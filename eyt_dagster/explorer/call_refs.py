"""One dialogue's rows to the calls that made them (the matching rule is in calls.py): the ChatSEED, each
simulator turn after the first (turn 1 is the seed's first query), each perception and response of the target,
each judge's turn verdict and final-intent verdict."""

from __future__ import annotations

from typing import Any

from eyt_dagster.explorer.calls import CallFinder, CallRef, json_has, purposes, raw_is, reply_is
from eyt_dagster.explorer.queries import Dialogue
from resources.models.call_reads import CallReads


def dialogue_calls(reads: CallReads, d: Dialogue) -> dict[str, Any]:
    """{"seed": CallRef, "turns": {turn: {"simulate", "perceive", "respond", "judges": {judge: CallRef}}},
    "finals": {judge: CallRef}}"""
    finder = CallFinder(reads)
    p = purposes(d.seed_id)
    asks: list[tuple[tuple[Any, ...], str, str | None, str, Any]] = []  # (where, what, model id, purpose, comparison)
    if d.seed is not None:
        asks.append(
            (
                ("seed",),
                "ChatSEED generation",
                d.seed.get("simulator"),
                p["chat_seed"](),
                raw_is(d.seed.get("raw_reply")),
            )
        )
    for t in d.turns:
        n = int(t["turn"])
        if n > 1:
            asks.append(
                (
                    ("turns", n, "simulate"),
                    f"simulator, turn {n}",
                    t.get("simulator"),
                    p["simulate"](n),
                    json_has({"user_text": t["user_text"], "progress": t["progress"]}),
                )
            )
        labels = {f: t[f"pred_{f}"] for f in ("explicit_intent", "latent_intent", "emotion", "intent_description")}
        asks.append(
            (("turns", n, "perceive"), f"target's perception, turn {n}", d.target, p["perceive"](n), json_has(labels))
        )
        asks.append(
            (
                ("turns", n, "respond"),
                f"target's reply, turn {n}",
                d.target,
                p["respond"](n),
                reply_is(t["response_text"]),
            )
        )
        for v in t["verdicts"]:
            asks.append(
                (
                    ("turns", n, "judges", v["judge"]),
                    f"judge {v['judge']}, turn {n}",
                    v["judge"],
                    p["judge_turn"](n),
                    raw_is(v.get("raw_reply")),
                )
            )
    for f in d.finals:
        asks.append(
            (
                ("finals", f["judge"]),
                f"judge {f['judge']}, final intent",
                f["judge"],
                p["judge_final"](),
                raw_is(f.get("raw_reply")),
            )
        )
    finder.wanted = [(model, purpose) for _, _, model, purpose, _ in asks if model]
    finder.load()
    found: dict[str, Any] = {"seed": None, "turns": {}, "finals": {}}
    for where, what, model, purpose, same in asks:
        ref: CallRef = finder.find(what, model, purpose, same)
        box = found
        for part in where[:-1]:
            box = box.setdefault(part, {})
        box[where[-1]] = ref
    return found
