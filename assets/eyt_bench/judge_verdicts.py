"""judge_verdicts and final_intent_verdicts: the third-party judge on each dialogue (paper §3.5.2-3.5.3)."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import PROGRESS_EVERY, now_utc, progress_logger, stats_metadata, table_output
from eyt_dagster.eyt_bench.judging import (
    failed_verdicts_message,
    finished_dialogues,
    judge_all,
    verdict_frame,
)
from eyt_dagster.partitions import JUDGE_POOL, by_pool, target_pool_partitions
from eyt_dagster.core.prompts import prompt_hash
from eyt_dagster.core.role_types import CallStats
from eyt_dagster.eyt_bench.table_contracts import FinalIntentVerdictsFrame, JudgeVerdictsFrame, conform_table
from resources.benchmark import BenchmarkResource

LOGIC_VERSION = "1"
TURN_PROMPT_HASH = prompt_hash("judge_turn")
FINAL_PROMPT_HASH = prompt_hash("judge_final")
_INS = {
    "dialogue_turns": AssetIn(key=["dialogue", "dialogue_turns"]),
    "chat_seeds": AssetIn(key=["dialogue", "chat_seeds"], partition_mapping=by_pool),
}
_PARTITION_EXPR = {"partition_expr": {"target": "target", "pool": "pool"}}


def judge_stats(df: pd.DataFrame) -> CallStats:
    """What the judge calls behind these rows cost (cache hits report the original reply's cost)."""
    return CallStats(
        tokens_in=int(df["judge_tokens_in"].sum()), tokens_out=int(df["judge_tokens_out"].sum()),
        cost_usd=float(df["judge_cost_usd"].sum()), latency_s=float(df["judge_latency_s"].sum()),
    )




def run_judges(eyt: BenchmarkResource, judges, dialogues, *, final: bool, prompt: str,  # noqa: ANN001
               context: AssetExecutionContext | None = None) -> pd.DataFrame:
    """Judge the dialogues with each judge and return the table with provenance (progress to the run log)."""
    refs = [*eyt.slate.judges, *([eyt.slate.replacement_judge] if eyt.slate.replacement_judge else [])]
    # enough calls under way to fill every judge's budget at once (each endpoint's gate caps its own)
    used = {j.model_id for j in judges}
    workers = sum(r.max_concurrency for r in refs if r.id in used)
    report = progress_logger(context, lambda done, total: f"{'final verdicts' if final else 'turn verdicts'}: {done} of {total} done",
                             every=PROGRESS_EVERY * (1 if final else 10))

    rows = judge_all(judges, dialogues, final=final, workers=workers, on_done=report)
    df = verdict_frame(rows, final=final, judge_models={r.id: r.model for r in refs}, prompt_hash=prompt,
                       seed=eyt.slate.seed)
    df["created_at"] = now_utc()
    return df


@asset(
    key_prefix=["dialogue"], group_name="dialogue", partitions_def=target_pool_partitions, ins=_INS,
    dagster_type=JudgeVerdictsFrame, metadata=_PARTITION_EXPR, code_version=f"{LOGIC_VERSION}-{TURN_PROMPT_HASH}",
    pool=JUDGE_POOL,
)
def judge_verdicts(
    context: AssetExecutionContext, eyt: BenchmarkResource, dialogue_turns: pd.DataFrame, chat_seeds: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Each judge's 15 sub-indicator scores for every turn, with its raw reply."""
    judges = eyt.judges(context.run_id)
    dialogues = finished_dialogues(dialogue_turns, chat_seeds)
    df = run_judges(eyt, judges, dialogues, final=False, prompt=TURN_PROMPT_HASH, context=context)
    context.log.info(f"judged {len(df)} turns of {len(dialogues)} dialogues with {len(judges)} judge(s)")
    log_failed_verdicts(context, df, "turn verdicts", "judge_verdicts")
    return table_output(conform_table(df, "dialogue.judge_verdicts"), judges=", ".join(j.model_id for j in judges),
                        prompt_hash=TURN_PROMPT_HASH, **stats_metadata("judge", judge_stats(df)))


@asset(
    key_prefix=["dialogue"], group_name="dialogue", partitions_def=target_pool_partitions, ins=_INS,
    dagster_type=FinalIntentVerdictsFrame, metadata=_PARTITION_EXPR,
    code_version=f"{LOGIC_VERSION}-{FINAL_PROMPT_HASH}", pool=JUDGE_POOL,
)
def final_intent_verdicts(
    context: AssetExecutionContext, eyt: BenchmarkResource, dialogue_turns: pd.DataFrame, chat_seeds: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Each judge's verdict on whether the dialogue reached the ChatSEED's final intent, and satisfaction."""
    judges = eyt.judges(context.run_id)
    df = run_judges(eyt, judges, finished_dialogues(dialogue_turns, chat_seeds), final=True, prompt=FINAL_PROMPT_HASH,
                    context=context)
    log_failed_verdicts(context, df, "final verdicts", "final_intent_verdicts")
    completed = df["completed"].dropna()
    return table_output(conform_table(df, "dialogue.final_intent_verdicts"),
                        judges=", ".join(j.model_id for j in judges), prompt_hash=FINAL_PROMPT_HASH,
                        completed_share=float(completed.astype(float).mean()) if len(completed) else 0.0,
                        **stats_metadata("judge", judge_stats(df)))


def log_failed_verdicts(context: AssetExecutionContext, df: pd.DataFrame, what: str, table: str) -> None:
    message = failed_verdicts_message(df, what, table, context.partition_key)
    if message:
        context.log.warning(message)
