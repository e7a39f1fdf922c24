"""The prosody-only probe: does hearing the tone change what a target perceives?

For every answered turn of a finished voiced dialogue whose gold emotion is not neutral, the same words are voiced
again in the plain voice (`voice_instruction("neutral")`, same voice) and the target's perception is asked once
more with the dialogue's history exactly as it heard it. Only the tone of the current turn differs. The turn's
voiced perception is the dialogue's own (voiced_turns). `prosody_effect` compares the emotion accuracy with the
tone and without it, on the same turns: a target that reads the emotion only from the words scores the same on
both. Pure logic: the listener and the voicer are handed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from eyt_dagster.core.errors import PER_ITEM_ERRORS, describe_error, failure_kind
from eyt_dagster.core.explained import Explained, Step
from eyt_dagster.core.explained_means import explained_paired_difference, explained_share, interval_steps
from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.core.replies import CallStats
from eyt_dagster.core.stats import paired_bootstrap_diff
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.table_rows import stat_column_names, stats_columns
from eyt_dagster.eyt_voice.table_contracts import PROSODY_EFFECT_COLUMNS, PROSODY_PROBE_COLUMNS
from eyt_dagster.eyt_voice.voiced_loop import Listener, UserClip, VoicedExchange, Voicer
from eyt_dagster.eyt_voice.voicing import VoiceChoice, voice_instruction

PLAIN = "neutral"
# The tables' columns as their contracts (table_contracts.py) order them, without what is added afterwards: the
# probe's call figures (appended by `probe`), created_at and the effect's baseline flags (assets/eyt_voice/).
COLUMNS = column_names(PROSODY_PROBE_COLUMNS, without=(*stat_column_names("target_"), "created_at"))
EFFECT_COLUMNS = column_names(PROSODY_EFFECT_COLUMNS, without=("is_baseline", "self_preference_risk", "created_at"))


def probed(gold_emotion: object) -> bool:
    """Whether a turn of this gold emotion is probed: a neutral turn's toned clip already is the plain voice."""
    return gold_emotion != PLAIN


def probed_turns(voiced_turns: pd.DataFrame) -> int:
    """How many turns `probe` asks about: the answered turns of finished dialogues that are probed (a step knows
    its total before it builds its voicer and listener)."""
    turns = answered_turns(voiced_turns)
    return int(turns["gold_emotion"].map(probed).sum()) if len(turns) else 0


def _clip(row: dict[str, Any], choice: VoiceChoice, resolve: Callable[[str], str]) -> UserClip:
    return UserClip(
        text=str(row["user_text"]),
        emotion=str(row["gold_emotion"]),
        instruction=str(row["instruction"]),
        gender=choice.gender,
        voice=str(row["voice"]),
        path=resolve(str(row["clip_path"])),
        sha256=str(row["clip_sha256"]),
        duration_s=float(row["clip_duration_s"]),
    )


def probe(
    voiced_turns: pd.DataFrame,
    voices: dict[str, VoiceChoice],
    listener: Listener,
    voicer: Voicer,
    resolve: Callable[[str], str],
    *,
    workers: int,
    on_done: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """One row per probed turn (a failed perception call is an error row; a rerun asks it again from the cache).
    `resolve` turns a stored clip path into a file path."""
    turns = answered_turns(voiced_turns).sort_values(["seed_id", "turn"])
    jobs = []
    for seed_id, dialogue in turns.groupby("seed_id", sort=True):
        rows = dialogue.to_dict("records")
        choice = voices[str(seed_id)]
        heard = [_clip(r, choice, resolve) for r in rows]
        for i, row in enumerate(rows):
            if not probed(row["gold_emotion"]):
                continue
            history = [VoicedExchange(heard[j], str(rows[j]["response_text"])) for j in range(i)]
            jobs.append((row, choice, history))

    def ask(job: tuple[dict[str, Any], VoiceChoice, list[VoicedExchange]]) -> dict[str, Any]:
        row, choice, history = job
        out = {c: row.get(c) for c in ("target", "pool", "seed_id", "turn", "gold_emotion")}
        out["pred_emotion_toned"] = row["pred_emotion"]
        try:
            plain = voicer.voice(str(row["user_text"]), voice_instruction(PLAIN), PLAIN, choice)
            reply = listener.perceive(history, plain)
        except PER_ITEM_ERRORS as exc:
            return {
                **out,
                "error": describe_error(exc),
                "error_kind": failure_kind(exc),
                **stats_columns("target_", CallStats()),
            }
        return {
            **out,
            "pred_emotion_plain": reply.value.emotion,
            "plain_clip_path": plain.path,
            "plain_clip_sha256": plain.sha256,
            "error": None,
            "error_kind": None,
            **stats_columns("target_", reply.stats),
        }

    rows = ordered_map(ask, jobs, workers, on_done)
    return pd.DataFrame(rows, columns=[*COLUMNS, *stats_columns("target_", CallStats())])


def answered_probes(rows: pd.DataFrame) -> pd.DataFrame:
    """The probe's turns that `prosody_effect` counts: those whose plain-voice call did not fail."""
    return rows[rows["error"].isna()] if len(rows) else rows


PROSODY_NUMBERS = ("acc_toned", "acc_plain", "delta")


def explained_prosody(cell: pd.DataFrame) -> dict[str, Explained]:
    """acc_toned, acc_plain and delta of one cell's probed turns (`answered_probes`), each with its arithmetic: the
    share of the turns whose gold emotion was heard in the turn's tone, and in the plain voice, and the mean over the
    turns of toned - plain (1, 0 or -1 a turn). What `prosody_effect` stores."""
    toned = (cell["pred_emotion_toned"] == cell["gold_emotion"]).to_numpy(dtype=float)
    plain = (cell["pred_emotion_plain"] == cell["gold_emotion"]).to_numpy(dtype=float)
    units = [f"{s} turn {t}" for s, t in zip(cell["seed_id"], cell["turn"])]
    note = ("the same words on the same turns: only the current turn's tone differs",)
    return {
        "acc_toned": explained_share(
            "emotion accuracy, toned", toned, "whose gold emotion was heard in the turn's tone", "turn"
        ).then(notes=note),
        "acc_plain": explained_share(
            "emotion accuracy, plain voice", plain, "whose gold emotion was heard in the plain voice", "turn"
        ).then(notes=note),
        "delta": explained_paired_difference(
            "emotion accuracy: toned - plain (mean over the turns)", toned, plain, units, ("toned", "plain"), "turn"
        ).then(notes=("per turn 1 = right (its gold emotion), 0 = wrong",)),
    }


def prosody_interval(n_turns: int, low: float, high: float) -> tuple[Step, ...]:
    """How a prosody_effect row's interval of delta was drawn: the turns resampled with the slate's
    `bootstrap_resamples` and `seed`, which the table does not record."""
    return interval_steps(n_turns, "turn", low, high, "the slate's bootstrap_resamples and seed, not kept in the row")


def prosody_effect(rows: pd.DataFrame, *, resamples: int, seed: int) -> pd.DataFrame:
    """Per target and pool: emotion accuracy with the tone and in the plain voice on the same probed turns, the
    difference (toned - plain) with a 95% bootstrap interval over the turns (seeded): `explained_prosody`'s values."""
    ok = answered_probes(rows)
    out = []
    for (target, pool), cell in ok.groupby(["target", "pool"], sort=True):
        toned = (cell["pred_emotion_toned"] == cell["gold_emotion"]).to_numpy(dtype=float)
        plain = (cell["pred_emotion_plain"] == cell["gold_emotion"]).to_numpy(dtype=float)
        paired = paired_bootstrap_diff(toned, plain, resamples=resamples, seed=seed)
        explained = explained_prosody(cell)
        out.append(
            {
                "target": target,
                "pool": pool,
                "n_turns": len(cell),
                "acc_toned": explained["acc_toned"].number() if len(cell) else np.nan,
                "acc_plain": explained["acc_plain"].number() if len(cell) else np.nan,
                "delta": explained["delta"].number(),
                "ci_low": paired["low"],
                "ci_high": paired["high"],
                "excludes_zero": paired["excludes_zero"],
            }
        )
    return pd.DataFrame(out, columns=EFFECT_COLUMNS)
