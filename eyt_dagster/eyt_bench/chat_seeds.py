"""The chat_seeds table of one pool (paper §3.3): the simulator writes a ChatSEED for each of the first
personas of the pool's evaluation order. A failed request is kept as an error row, so the next run asks again
for exactly those (the finished ones come back from the call cache). Pure logic: the simulator is handed in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from eyt_dagster.core.errors import PER_ITEM_ERRORS, describe_error
from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.core.replies import CallStats
from eyt_dagster.eyt_bench.role_protocols import Simulator
from eyt_dagster.eyt_bench.table_rows import persona_from_row, seed_row


def seed_id(pool: str, persona_id: str) -> str:
    """A ChatSEED's id: its pool and persona (one seed per persona)."""
    return f"{pool}:{persona_id}"


@dataclass(frozen=True)
class ChatSeeds:
    rows: pd.DataFrame
    stats: CallStats  # the simulator's calls, summed
    reused: int  # seeds that came from the call cache alone
    errors: int  # error rows (retried by the next run)


def write_chat_seeds(
    persona_pool: pd.DataFrame,
    simulator: Simulator,
    *,
    pool: str,
    count: int,
    workers: int,
    prompt_hash: str,
    slate_seed: int,
) -> ChatSeeds:
    """ChatSEEDs for the first `count` personas, up to `workers` requests at once (the simulator's budget), rows
    in persona order."""

    def one_seed(persona_row: dict[str, Any]) -> tuple[dict[str, Any], CallStats]:
        persona = persona_from_row(persona_row)
        sid = seed_id(pool, persona.persona_id)
        try:
            reply = simulator.generate_seed(persona, seed_id=sid)
            return seed_row(sid, persona, reply, None), reply.stats
        except PER_ITEM_ERRORS as exc:  # kept as an error row; the next run retries exactly these
            return seed_row(sid, persona, None, describe_error(exc)), CallStats()

    done = ordered_map(one_seed, persona_pool.head(count).to_dict("records"), workers)
    df = pd.DataFrame([row for row, _ in done])
    df["simulator"] = simulator.model_id
    df["prompt_hash"] = prompt_hash
    df["slate_seed"] = slate_seed
    return ChatSeeds(
        rows=df,
        stats=sum((s for _, s in done), CallStats()),
        reused=sum(1 for _, s in done if s.calls == 0 and s.cache_hits > 0),
        errors=int(df["error"].notna().sum()),
    )
