"""Which ChatSEEDs a voice target plays, and each one's voice."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from eyt_dagster.eyt_bench.table_rows import seed_from_row
from eyt_dagster.eyt_bench.types import ChatSeed
from eyt_dagster.eyt_voice.voicing import VoiceChoice, choose_voice


def voice_seeds(chat_seeds: pd.DataFrame, n: int) -> list[ChatSeed]:
    """The pool's first `n` written ChatSEEDs by id (the same ones for every voice target)."""
    ok = chat_seeds[chat_seeds["error"].isna()].sort_values("seed_id").head(n)
    return [seed_from_row(r) for r in ok.to_dict("records")]


def _attributes(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value) if isinstance(value, str) and value else {}
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def seed_voices(seeds: list[ChatSeed], persona_pool: pd.DataFrame, slate_seed: int) -> dict[str, VoiceChoice]:
    """ChatSEED id -> the voice its user speaks with, from its persona's attributes (persona_pool)."""
    by_persona = dict(zip(persona_pool["persona_id"], persona_pool["attributes"].map(_attributes)))
    return {
        s.seed_id: choose_voice(by_persona.get(s.persona_id, {}), seed_id=s.seed_id, slate_seed=slate_seed)
        for s in seeds
    }
