"""judge_verdicts and final_intent_verdicts: the third-party judge on each dialogue (paper §3.5.2-3.5.3)."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, stats_metadata, table_output
from eyt_dagster.frames import (
    FINAL_COLUMNS,
    VERDICT_COLUMNS,
    final_row,
    history_from_turns,
    seed_from_row,
    stat_column_names,
    verdict_row,
)
from eyt_dagster.partitions import by_pool, target_pool_partitions
from eyt_dagster.prompts import prompt_hash
from eyt_dagster.records import CallStats, ChatSeed, Exchange
from eyt_dagster.roles import PER_ITEM_ERRORS, Judge
from eyt_dagster.tables import FinalIntentVerdictsFrame, JudgeVerdictsFrame
from resources.models import BenchmarkResource

LOGIC_VERSION = "1"
TURN_PROMPT_HASH = prompt_hash("judge_turn")
FINAL_PROMPT_HASH = prompt_hash("judge_final")
_INS = {
    "dialogue_turns": AssetIn(key=["dialogue", "dialogue_turns"]),
    "chat_seeds": AssetIn(key=["dialogue", "chat_seeds"], partition_mapping=by_pool),
}
_PARTITION_EXPR = {"partition_expr": {"target": "target", "pool": "pool"}}

Dialogue = tuple[ChatSeed, list[Exchange]]


def _dialogues(turns: pd.DataFrame, seeds: pd.DataFrame) -> list[Dialogue]:
    """Finished dialogues (error rows skipped) with their ChatSEEDs, in seed order."""
    seed_by_id = {r["seed_id"]: seed_from_row(r) for r in seeds[seeds["error"].isna()].to_dict("records")}
    answered = turns[(turns["turn"] > 0) & turns["error"].isna()]
    return [
        (seed_by_id[seed_id], history_from_turns(group))
        for seed_id, group in answered.groupby("seed_id", sort=True)
        if seed_id in seed_by_id
    ]


def _judge_all(
    judges: list[Judge], dialogues: list[Dialogue], work: Callable[[Judge, Dialogue], list[dict]], workers: int
) -> list[dict]:
    jobs = [(judge, dlg) for judge in judges for dlg in dialogues]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return [row for rows in pool.map(lambda job: work(*job), jobs) for row in rows]


def _finish(rows: list[dict], columns: list[str], prompt: str, eyt: BenchmarkResource) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=[*columns, *stat_column_names("judge_")])
    models = {j.id: j.model for j in eyt.slate.judges}
    df["judge_model"] = df["judge"].map(models)
    df["prompt_hash"] = prompt
    df["slate_seed"] = eyt.slate.seed
    df["created_at"] = now_utc()
    return df


def _stats(df: pd.DataFrame) -> CallStats:
    return CallStats(
        tokens_in=int(df["judge_tokens_in"].sum()), tokens_out=int(df["judge_tokens_out"].sum()),
        cost_usd=float(df["judge_cost_usd"].sum()), latency_s=float(df["judge_latency_s"].sum()),
    )


@asset(
    key_prefix=["dialogue"], group_name="dialogue", partitions_def=target_pool_partitions, ins=_INS,
    dagster_type=JudgeVerdictsFrame, metadata=_PARTITION_EXPR, code_version=f"{LOGIC_VERSION}-{TURN_PROMPT_HASH}",
)
def judge_verdicts(
    context: AssetExecutionContext, eyt: BenchmarkResource, dialogue_turns: pd.DataFrame, chat_seeds: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Each judge's 15 sub-indicator scores for every turn, with its raw reply."""
    target_id = context.partition_key.keys_by_dimension["target"]
    judges = eyt.judges(context.run_id)

    def work(judge: Judge, dlg: Dialogue) -> list[dict]:
        seed, history = dlg
        rows = []
        for turn in range(1, len(history) + 1):
            try:
                rows.append(verdict_row(target_id, seed, turn, judge.model_id, judge.score_turn(seed, history, turn), None))
            except PER_ITEM_ERRORS as exc:  # an error row; the asset check reports it and a rerun retries it
                rows.append(verdict_row(target_id, seed, turn, judge.model_id, None, f"{type(exc).__name__}: {exc}"))
        return rows

    dialogues = _dialogues(dialogue_turns, chat_seeds)
    df = _finish(_judge_all(judges, dialogues, work, _workers(eyt)), VERDICT_COLUMNS, TURN_PROMPT_HASH, eyt)
    context.log.info(f"judged {len(df)} turns of {len(dialogues)} dialogues with {len(judges)} judge(s)")
    return table_output(df, judges=", ".join(j.model_id for j in judges), prompt_hash=TURN_PROMPT_HASH,
                        **stats_metadata("judge", _stats(df)))


@asset(
    key_prefix=["dialogue"], group_name="dialogue", partitions_def=target_pool_partitions, ins=_INS,
    dagster_type=FinalIntentVerdictsFrame, metadata=_PARTITION_EXPR,
    code_version=f"{LOGIC_VERSION}-{FINAL_PROMPT_HASH}",
)
def final_intent_verdicts(
    context: AssetExecutionContext, eyt: BenchmarkResource, dialogue_turns: pd.DataFrame, chat_seeds: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Each judge's verdict on whether the dialogue reached the ChatSEED's final intent, and satisfaction."""
    target_id = context.partition_key.keys_by_dimension["target"]
    judges = eyt.judges(context.run_id)

    def work(judge: Judge, dlg: Dialogue) -> list[dict]:
        seed, history = dlg
        try:
            return [final_row(target_id, seed, judge.model_id, judge.judge_final(seed, history), None)]
        except PER_ITEM_ERRORS as exc:
            return [final_row(target_id, seed, judge.model_id, None, f"{type(exc).__name__}: {exc}")]

    dialogues = _dialogues(dialogue_turns, chat_seeds)
    df = _finish(_judge_all(judges, dialogues, work, _workers(eyt)), FINAL_COLUMNS, FINAL_PROMPT_HASH, eyt)
    return table_output(df, judges=", ".join(j.model_id for j in judges), prompt_hash=FINAL_PROMPT_HASH,
                        completed_share=float(df["completed"].mean()) if len(df) else 0.0,
                        **stats_metadata("judge", _stats(df)))


def _workers(eyt: BenchmarkResource) -> int:
    return max(j.max_concurrency for j in eyt.slate.judges)
