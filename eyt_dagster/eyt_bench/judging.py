"""Running judges over finished dialogues: one row per turn (15 sub-indicators) or per dialogue (final
verdict) for each judge. Used by the judge-verdict assets and by the cross-judge ablation. Pure logic."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from eyt_dagster.core.errors import PER_ITEM_ERRORS, describe_error
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.core.provider_profiles import split_notes
from eyt_dagster.core.replies import CallStats, merge_notes
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.prompts import code_version_hash, prompt_hash
from eyt_dagster.eyt_bench.role_protocols import Judge
from eyt_dagster.eyt_bench.settings import EytSlate
from eyt_dagster.eyt_bench.table_rows import (
    FINAL_COLUMNS,
    VERDICT_COLUMNS,
    final_row,
    history_from_turns,
    seed_from_row,
    stat_column_names,
    verdict_row,
)
from eyt_dagster.eyt_bench.types import ChatSeed, Exchange

Dialogue = tuple[str, ChatSeed, list[Exchange]]  # (target, ChatSEED, rolling context)
# The judge prompts' hashes: the English ones recorded in every verdict row judged with English prompts
# (`verdict_prompt_hash` gives any language's), and the verdict assets' code versions (every language's).
TURN_PROMPT_HASH = prompt_hash("judge_turn")
FINAL_PROMPT_HASH = prompt_hash("judge_final")
TURN_CODE_HASH = code_version_hash("judge_turn")
FINAL_CODE_HASH = code_version_hash("judge_final")


def verdict_prompt_hash(final: bool, language: str) -> str:
    """The hash of the judge prompt a verdict row was asked with: the final-intent or the turn prompt of `language`."""
    return prompt_hash("judge_final" if final else "judge_turn", language=language)


def finished_dialogues(turns: pd.DataFrame, seeds: pd.DataFrame) -> list[Dialogue]:
    """Finished dialogues (incomplete ones are not judged), with their ChatSEEDs, ordered by target and seed."""
    seed_by_id = {r["seed_id"]: seed_from_row(r) for r in seeds[seeds["error"].isna()].to_dict("records")}
    answered = answered_turns(turns)
    return [
        (target, seed_by_id[seed_id], history_from_turns(group))
        for (target, seed_id), group in answered.groupby(["target", "seed_id"], sort=True)
        if seed_id in seed_by_id
    ]


def _failure(exc: Exception) -> str:
    return describe_error(exc)


def turn_verdict(judge: Judge, dialogue: Dialogue, turn: int) -> dict[str, Any]:
    """The judge's scores for one turn of one dialogue; a failed call becomes an error row."""
    target, seed, history = dialogue
    try:
        return verdict_row(target, seed, turn, judge.model_id, judge.score_turn(seed, history, turn), None)
    except PER_ITEM_ERRORS as exc:  # kept as an error row; a rerun retries it
        return verdict_row(target, seed, turn, judge.model_id, None, _failure(exc))


def final_verdict(judge: Judge, dialogue: Dialogue) -> dict[str, Any]:
    """The judge's final-intent verdict on one dialogue (or an error row)."""
    target, seed, history = dialogue
    try:
        return final_row(target, seed, judge.model_id, judge.judge_final(seed, history), None)
    except PER_ITEM_ERRORS as exc:
        return final_row(target, seed, judge.model_id, None, _failure(exc))


def judge_all(
    judges: list[Judge],
    dialogues: list[Dialogue],
    *,
    final: bool,
    workers: int,
    on_done: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every judge on every dialogue (every turn of it, or its final verdict), as one flat pool of independent
    calls, `workers` at a time (each judge's endpoint budget caps its own share); rows in judge, dialogue,
    turn order. `on_done(done, total)` is told after each verdict (in order), for progress logs."""
    if final:
        return ordered_map(
            lambda job: final_verdict(*job), [(j, d) for j in judges for d in dialogues], workers, on_done
        )
    jobs = [(j, d, turn) for j in judges for d in dialogues for turn in range(1, len(d[2]) + 1)]
    return ordered_map(lambda job: turn_verdict(*job), jobs, workers, on_done)


def verdict_calls(judges: int, dialogues: Sequence[Dialogue], *, final: bool) -> int:
    """How many verdicts `judge_all` asks `judges` judges for on these dialogues: one per dialogue each (final), or
    one per turn of each (a step knows its total before it builds its judges)."""
    return judges * (len(dialogues) if final else sum(len(history) for _, _, history in dialogues))


def verdict_frame(
    rows: list[dict[str, Any]], *, final: bool, judge_models: dict[str, str], prompt_hash: str, seed: int
) -> pd.DataFrame:
    """Rows as a table with fixed columns (also when empty) and provenance."""
    columns = FINAL_COLUMNS if final else VERDICT_COLUMNS
    df = pd.DataFrame(rows, columns=[*columns, *stat_column_names("judge_")])
    df["judge_model"] = df["judge"].map(judge_models)
    df["prompt_hash"] = prompt_hash
    df["slate_seed"] = seed
    return df


def failed_verdicts_message(df: pd.DataFrame, what: str, table: str, partition: str) -> str | None:
    """A line such as "3 of 165 turn verdicts failed in pool|target; see dialogue.judge_verdicts.error",
    or None when no call failed."""
    failed = int(df["error"].notna().sum()) if len(df) else 0
    if not failed:
        return None
    return (
        f"{failed} of {len(df)} {what} failed in {partition}; see dialogue.{table}.error "
        "(rerun the partition to retry them: finished calls come from the call cache)"
    )


def run_judges(
    slate: EytSlate,
    judges: list[Judge],
    dialogues: list[Dialogue],
    *,
    final: bool,
    prompt: str,
    on_done: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Judge the dialogues with each judge and return the table with provenance (`on_done` reports progress)."""
    rows = judge_all(judges, dialogues, final=final, workers=judge_workers(slate, judges), on_done=on_done)
    return verdict_frame(rows, final=final, judge_models=judge_models(slate), prompt_hash=prompt, seed=slate.seed)


def _judge_refs(slate: EytSlate) -> list[ModelRef]:
    return [*slate.judges, *([slate.replacement_judge] if slate.replacement_judge else [])]


def judge_models(slate: EytSlate) -> dict[str, str]:
    """Judge id -> its model, for every judge the slate names (the replacement judge too)."""
    return {r.id: r.model for r in _judge_refs(slate)}


def judge_workers(slate: EytSlate, judges: Sequence[Judge]) -> int:
    """Calls under way at once to fill these judges' budgets together (each endpoint's gate caps its own)."""
    used = {j.model_id for j in judges}
    return sum(r.max_concurrency for r in _judge_refs(slate) if r.id in used)


def judge_stats(df: pd.DataFrame) -> CallStats:
    """What the judge calls behind these rows cost (cache hits report the original reply's cost)."""
    notes = df["judge_adaptations"].dropna() if "judge_adaptations" in df.columns else ()
    return CallStats(
        tokens_in=int(df["judge_tokens_in"].sum()),
        tokens_out=int(df["judge_tokens_out"].sum()),
        cost_usd=float(df["judge_cost_usd"].sum()),
        latency_s=float(df["judge_latency_s"].sum()),
        reasoning_tokens=int(df["judge_reasoning_tokens"].fillna(0).sum()) if "judge_reasoning_tokens" in df else 0,
        adaptations=merge_notes(*(split_notes(str(text)) for text in notes)),
    )
