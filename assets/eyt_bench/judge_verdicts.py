"""judge_verdicts and final_intent_verdicts: the third-party judge on each dialogue (paper §3.5.2-3.5.3)."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import explorer_link, now_utc, stats_metadata, table_of, table_output
from assets._progress import PROGRESS_EVERY, step_progress
from assets.eyt_bench.partitions import JUDGE_POOL, by_pool, target_pool_partitions
from eyt_dagster.core import explorer_links
from eyt_dagster.core.provider_profiles import adaptations_warning
from eyt_dagster.eyt_bench.judging import (
    FINAL_CODE_HASH,
    TURN_CODE_HASH,
    Dialogue,
    failed_verdicts_message,
    finished_dialogues,
    judge_stats,
    run_judges,
    verdict_calls,
    verdict_prompt_hash,
)
from eyt_dagster.eyt_bench.role_protocols import Judge
from eyt_dagster.eyt_bench.table_contracts import FinalIntentVerdictsFrame, JudgeVerdictsFrame, conform_table
from resources.models.model_access import ModelAccess, SlateAccess
from resources.roles.eyt_roles import EytRoles

LOGIC_VERSION = "1"
_INS = {
    "dialogue_turns": AssetIn(key=["dialogue", "dialogue_turns"]),
    "chat_seeds": AssetIn(key=["dialogue", "chat_seeds"], partition_mapping=by_pool),
}
_PARTITION_EXPR = {"partition_expr": {"target": "target", "pool": "pool"}}


def _verdicts(
    context: AssetExecutionContext, slate: SlateAccess, models: ModelAccess, dialogues: list[Dialogue], *, final: bool
) -> tuple[pd.DataFrame, list[Judge], str]:
    """The verdict table of these dialogues (with the judges and the prompt's hash), with progress to the run log:
    the count is there before the judges are built."""
    what = "final verdicts" if final else "turn verdicts"
    progress = step_progress(
        context,
        models.data_dir,
        what,
        lambda done, total: f"{what}: {done} of {total} done",
        every=PROGRESS_EVERY * (1 if final else 10),
        total=verdict_calls(len(slate.slate.judges), dialogues, final=final),
    )
    with progress as on_done:
        roles, pool = EytRoles(slate.slate, models), _cell(context)["pool"]
        judges, prompt = roles.judges(context.run_id, pool=pool), verdict_prompt_hash(final, roles.judge_language(pool))
        df = run_judges(slate.slate, judges, dialogues, final=final, prompt=prompt, on_done=on_done)
    df["created_at"] = now_utc()
    return df, judges, prompt


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins=_INS,
    dagster_type=JudgeVerdictsFrame,
    metadata=_PARTITION_EXPR,
    code_version=f"{LOGIC_VERSION}-{TURN_CODE_HASH}",
    pool=JUDGE_POOL,
)
def judge_verdicts(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    dialogue_turns: pd.DataFrame,
    chat_seeds: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Each judge's 15 sub-indicator scores for every turn, with its raw reply."""
    dialogues = finished_dialogues(dialogue_turns, chat_seeds)
    df, judges, prompt = _verdicts(context, slate, models, dialogues, final=False)
    context.log.info(f"judged {len(df)} turns of {len(dialogues)} dialogues with {len(judges)} judge(s)")
    log_failed_verdicts(context, df, "turn verdicts", "judge_verdicts")
    return table_output(
        conform_table(df, table_of(context)),
        judges=", ".join(j.model_id for j in judges),
        prompt_hash=prompt,
        **explorer_link(explorer_links.judges_path(**_cell(context))),
        **stats_metadata("judge", judge_stats(df)),
    )


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins=_INS,
    dagster_type=FinalIntentVerdictsFrame,
    metadata=_PARTITION_EXPR,
    code_version=f"{LOGIC_VERSION}-{FINAL_CODE_HASH}",
    pool=JUDGE_POOL,
)
def final_intent_verdicts(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    dialogue_turns: pd.DataFrame,
    chat_seeds: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Each judge's verdict on whether the dialogue reached the ChatSEED's final intent, and satisfaction."""
    df, judges, prompt = _verdicts(context, slate, models, finished_dialogues(dialogue_turns, chat_seeds), final=True)
    log_failed_verdicts(context, df, "final verdicts", "final_intent_verdicts")
    completed = df["completed"].dropna()
    return table_output(
        conform_table(df, table_of(context)),
        judges=", ".join(j.model_id for j in judges),
        prompt_hash=prompt,
        **explorer_link(explorer_links.dialogues_path(**_cell(context))),
        completed_share=float(completed.astype(float).mean()) if len(completed) else 0.0,
        **stats_metadata("judge", judge_stats(df)),
    )


def _cell(context: AssetExecutionContext) -> dict[str, str]:
    keys = context.partition_key.keys_by_dimension
    return {"target": keys["target"], "pool": keys["pool"]}


def log_failed_verdicts(context: AssetExecutionContext, df: pd.DataFrame, what: str, table: str) -> None:
    """The run log's warnings of a verdicts table: the failed verdicts, and the judges' adapted requests."""
    message = failed_verdicts_message(df, what, table, context.partition_key)
    if message:
        context.log.warning(message)
    for judge, rows in df.groupby("judge") if len(df) else ():
        adapted = adaptations_warning("judge", str(judge), judge_stats(rows).adaptations)
        if adapted:
            context.log.warning(adapted)
