"""Row builders: records and dialogue results to the warehouse tables' rows. Pure logic."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from eyt_dagster.core.provider_profiles import join_notes
from eyt_dagster.core.replies import CallStats, Reply
from eyt_dagster.eyt_bench.dialogue_loop import DialogueResult
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from eyt_dagster.eyt_bench.types import ChatSeed, ChatSeedContent, Exchange, FinalVerdict, PersonaRecord, TurnScores

LABEL_FIELDS = ("explicit_intent", "latent_intent", "emotion", "intent_description")

PERSONA_COLUMNS = ["persona_id", "pool", "source", "persona_text", "attributes", "topic_tags", "length_bucket"]
SEED_COLUMNS = [
    "seed_id",
    "pool",
    "persona_id",
    "persona_text",
    "topic",
    "initial_emotion",
    "initial_explicit_intent",
    "initial_latent_intent",
    "initial_intent_description",
    "final_intent",
    "first_query",
]
TURN_COLUMNS = [
    "target",
    "pool",
    "seed_id",
    "turn",
    "user_text",
    *(f"gold_{f}" for f in LABEL_FIELDS),
    "progress",
    *(f"pred_{f}" for f in LABEL_FIELDS),
    "response_text",
    "response_reasoning",
    "error",
    "error_role",
    "error_kind",
    "complete",
]
VERDICT_COLUMNS = ["target", "pool", "seed_id", "turn", "judge", *SUBSCORE_COLUMNS, "rationale", "raw_reply", "error"]
FINAL_COLUMNS = ["target", "pool", "seed_id", "judge", "completed", "satisfaction", "rationale", "raw_reply", "error"]


# What a role's calls cost, per row: reasoning_tokens are part of tokens_out; cut_replies counts text replies cut at
# max_tokens; adaptations are the notes of what the provider's profile or refusals changed (join_notes).
STAT_FIELDS = ("tokens_in", "tokens_out", "cost_usd", "latency_s", "reasoning_tokens", "cut_replies", "adaptations")


def stat_column_names(*prefixes: str) -> list[str]:
    return [f"{prefix}{field}" for prefix in prefixes for field in STAT_FIELDS]


def stats_columns(prefix: str, stats: CallStats) -> dict[str, Any]:
    return {
        f"{prefix}tokens_in": stats.tokens_in,
        f"{prefix}tokens_out": stats.tokens_out,
        f"{prefix}cost_usd": stats.cost_usd,
        f"{prefix}latency_s": stats.latency_s,
        f"{prefix}reasoning_tokens": stats.reasoning_tokens,
        f"{prefix}cut_replies": stats.cut_replies,
        f"{prefix}adaptations": join_notes(stats.adaptations),
    }


def persona_rows(records: list[PersonaRecord]) -> pd.DataFrame:
    rows = [
        {
            **r.model_dump(exclude={"attributes", "topic_tags"}),
            "attributes": json.dumps(r.attributes, sort_keys=True, default=str),
            "topic_tags": json.dumps(r.topic_tags),
        }
        for r in records
    ]
    return pd.DataFrame(rows, columns=PERSONA_COLUMNS)


def persona_from_row(row: dict[str, Any]) -> PersonaRecord:
    return PersonaRecord(
        **{k: row[k] for k in ("persona_id", "pool", "source", "persona_text", "length_bucket")},
        attributes=json.loads(row["attributes"] or "{}"),
        topic_tags=json.loads(row["topic_tags"] or "[]"),
    )


def seed_from_row(row: dict[str, Any]) -> ChatSeed:
    return ChatSeed.model_validate({k: row[k] for k in SEED_COLUMNS})


def seed_row(
    seed_id: str, persona: PersonaRecord, reply: Reply[ChatSeedContent] | None, error: str | None
) -> dict[str, Any]:
    """One chat_seeds row: the generated content, or an error row that the next run retries."""
    row: dict[str, Any] = {c: None for c in SEED_COLUMNS}
    row.update(seed_id=seed_id, pool=persona.pool, persona_id=persona.persona_id, persona_text=persona.persona_text)
    if reply is not None:
        row.update(reply.value.model_dump())
    row.update(
        error=error,
        raw_reply=reply.raw if reply else None,
        **stats_columns("simulator_", reply.stats if reply else CallStats()),
    )
    return row


def turn_rows(result: DialogueResult, target: str) -> list[dict[str, Any]]:
    """One row per answered turn. A dialogue that failed keeps the turns it answered, marked
    complete = False, and gets one more row with turn 0 and the error; metrics and judges skip it, and a
    rerun replays its answered turns from the call cache (see docs/eyt-metrics.md)."""
    seed = result.seed
    complete = result.error is None
    rows = []
    for t in result.turns:
        row = {"target": target, "pool": seed.pool, "seed_id": seed.seed_id, "turn": t.turn, "user_text": t.user_text}
        row.update({f"gold_{f}": getattr(t.gold, f) for f in LABEL_FIELDS})
        row["progress"] = t.progress
        row.update({f"pred_{f}": getattr(t.predicted, f) for f in LABEL_FIELDS})
        row.update(
            response_text=t.response_text,
            response_reasoning=t.reasoning or None,
            error=None,
            error_role=None,
            error_kind=None,
            complete=complete,
        )
        row.update(stats_columns("target_", t.target_stats))
        row.update(stats_columns("simulator_", t.simulator_stats))
        rows.append(row)
    if not complete:
        row = {c: None for c in TURN_COLUMNS}
        row.update(
            target=target,
            pool=seed.pool,
            seed_id=seed.seed_id,
            turn=0,
            error=result.error,
            error_role=result.error_role,
            error_kind=result.error_kind,
            complete=False,
        )
        rows.append(row)
    return rows


def verdict_row(
    target: str, seed: ChatSeed, turn: int, judge: str, reply: Reply[TurnScores] | None, error: str | None
) -> dict[str, Any]:
    row: dict[str, Any] = {"target": target, "pool": seed.pool, "seed_id": seed.seed_id, "turn": turn, "judge": judge}
    scores = reply.value.model_dump() if reply else {}
    row.update({c: scores.get(c) for c in SUBSCORE_COLUMNS})
    row.update(rationale=scores.get("rationale"), raw_reply=reply.raw if reply else None, error=error)
    row.update(stats_columns("judge_", reply.stats if reply else CallStats()))
    return row


def final_row(
    target: str, seed: ChatSeed, judge: str, reply: Reply[FinalVerdict] | None, error: str | None
) -> dict[str, Any]:
    verdict = reply.value if reply else None
    row: dict[str, Any] = {"target": target, "pool": seed.pool, "seed_id": seed.seed_id, "judge": judge}
    row.update(
        completed=verdict.completed if verdict else None,
        satisfaction=verdict.satisfaction if verdict else None,
        rationale=verdict.rationale if verdict else None,
        raw_reply=reply.raw if reply else None,
        error=error,
    )
    row.update(stats_columns("judge_", reply.stats if reply else CallStats()))
    return row


def history_from_turns(turns: pd.DataFrame) -> list[Exchange]:
    """The rolling context C of one dialogue, rebuilt from its dialogue_turns rows."""
    ordered = turns.sort_values("turn")
    return [Exchange(user_text=u, response_text=r) for u, r in zip(ordered["user_text"], ordered["response_text"])]
