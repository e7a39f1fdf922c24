"""repeat_dialogues and repeat_scores: the extra samples of one target x pool cell that the slate's `repeats` and
`judge_repeats` ask for (eyt_dagster/eyt_bench/repeats.py). With both at 1 (the default) they hold no row and make
no call."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import explorer_link, now_utc, stats_metadata, table_of, table_output
from assets._progress import PROGRESS_EVERY, step_progress
from assets.eyt_bench.partitions import JUDGE_POOL, SIMULATOR_POOL, by_pool, target_pool_partitions
from eyt_dagster.core import explorer_links
from eyt_dagster.core.replies import CallStats
from eyt_dagster.eyt_bench.dialogue_turns import dialogue_workers
from eyt_dagster.eyt_bench.judging import (
    FINAL_CODE_HASH,
    TURN_CODE_HASH,
    judge_models,
    judge_stats,
    judge_workers,
    verdict_prompt_hash,
)
from eyt_dagster.eyt_bench.prompts import code_version_hash, prompt_hash
from eyt_dagster.eyt_bench.repeats import CellSamples, Judging, play_repeats, sample_verdicts, samples, score_samples
from eyt_dagster.eyt_bench.table_contracts import conform_table
from eyt_dagster.eyt_bench.table_rows import stat_column_names
from resources.models.model_access import EmbeddingAccess, ModelAccess, SlateAccess
from resources.roles.eyt_roles import EytRoles

LOGIC_VERSION = "1"
DIALOGUE_PROMPT_KEYS = ("simulator", "perception", "target")
_CELL_META = {"partition_expr": {"target": "target", "pool": "pool"}}
_SEEDS = AssetIn(key=["dialogue", "chat_seeds"], partition_mapping=by_pool)


def _cell(context: AssetExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension
    return keys["target"], keys["pool"]


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins={"chat_seeds": _SEEDS},
    metadata=_CELL_META,
    code_version=f"{LOGIC_VERSION}-{code_version_hash(*DIALOGUE_PROMPT_KEYS)}",
    pool=SIMULATOR_POOL,
    op_tags={"dagster/priority": "-3"},  # after the cell's own dialogues, verdicts and audit
)
def repeat_dialogues(
    context: AssetExecutionContext, slate: SlateAccess, models: ModelAccess, chat_seeds: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Every ChatSEED of the pool played again by repeats 1..k-1 of the target (repeat 0 is dialogue_turns)."""
    target_id, pool = _cell(context)
    current = slate.slate
    repeats = range(1, current.repeats)
    ref = current.target(target_id)
    progress = step_progress(
        context,
        models.data_dir,
        "dialogues",
        lambda done, total: f"repeated dialogues done: {done} of {total} ({target_id})",
        total=int(chat_seeds["error"].isna().sum()) * len(repeats),  # play_repeats: every written seed per repeat
    )
    with progress as on_done:  # the count is there before the roles are built
        roles = EytRoles(current, models)
        targets = {r: roles.target(target_id, context.run_id, repeat=r, pool=pool) for r in repeats}
        df, results = play_repeats(
            chat_seeds,
            roles.simulator(context.run_id, pool),
            targets,
            target_id=target_id,
            t_max=current.t_max,
            slate_seed=current.seed,
            workers=dialogue_workers(ref, current.simulator),
            on_done=on_done,
        )
    failed = [(r, res) for r, res in results if res.error]
    if failed:
        repeat, first = failed[0]
        context.log.warning(
            f"{len(failed)} of {len(results)} repeated dialogues of {target_id} on {pool} are unfinished (first: "
            f"{first.seed.seed_id}, repeat {repeat}: {(first.error or '')[:300]}); they are left out of the noise "
            "floor. Rerun the partition to finish them: answered calls come from the call cache."
        )
    df["simulator"] = current.simulator.id
    df["target_model"] = ref.model
    df["prompt_hash"] = prompt_hash(*DIALOGUE_PROMPT_KEYS, language=current.pool_language(pool))
    df["slate_seed"] = current.seed
    df["created_at"] = now_utc()
    turns = [t for _, res in results for t in res.turns]
    return table_output(
        conform_table(df, table_of(context)),
        repeats=current.repeats,
        dialogues=len(results),
        unfinished_dialogues=len(failed),
        **stats_metadata("target", sum((t.target_stats for t in turns), CallStats())),
        **stats_metadata("simulator", sum((t.simulator_stats for t in turns), CallStats())),
        **explorer_link(explorer_links.dialogues_path(target=target_id, pool=pool)),
    )


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins={
        "chat_seeds": _SEEDS,
        **{
            name: AssetIn(key=["dialogue", name])
            for name in ("dialogue_turns", "repeat_dialogues", "intent_similarity")
        },
    },
    metadata=_CELL_META,
    code_version=f"{LOGIC_VERSION}-{TURN_CODE_HASH}-{FINAL_CODE_HASH}",
    pool=JUDGE_POOL,
    op_tags={"dagster/priority": "-3"},
)
def repeat_scores(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    embeddings: EmbeddingAccess,
    chat_seeds: pd.DataFrame,
    dialogue_turns: pd.DataFrame,
    repeat_dialogues: pd.DataFrame,
    intent_similarity: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """dialogue_scores of every sample past (repeat 0, judge repeat 0): each repeated dialogue judged by every
    judge repeat, and the cell's own dialogues by judge repeats 1..j-1."""
    target_id, pool = _cell(context)
    current = slate.slate
    wanted = samples(current.repeats, current.judge_repeats)
    cell = CellSamples(
        chat_seeds=chat_seeds,
        dialogue_turns=dialogue_turns,
        repeat_dialogues=repeat_dialogues,
        intent_similarity=intent_similarity,
    )
    progress = step_progress(
        context,
        models.data_dir,
        "verdicts",
        lambda done, total: f"repeated verdicts: {done} of {total} done ({target_id} on {pool})",
        every=PROGRESS_EVERY * 10,
        # every judge repeat asks each of the slate's judges
        total=sample_verdicts(
            cell, repeats=current.repeats, judge_repeats=current.judge_repeats, judges=len(current.judges)
        ),
    )
    with progress as on_done:  # the count is there before the judges are built
        roles = EytRoles(current, models)
        judges = {q: roles.judges(context.run_id, repeat=q, pool=pool) for q in sorted({q for _, q in wanted})}
        judge_language = roles.judge_language(pool)
        judging = Judging(
            judges=judges,
            judge_models=judge_models(current),
            turn_prompt=verdict_prompt_hash(False, judge_language),
            final_prompt=verdict_prompt_hash(True, judge_language),
            slate_seed=current.seed,
            workers=judge_workers(current, next(iter(judges.values()), [])),  # every judge repeat has the same judges
        )
        encoder = embeddings.early_embeddings(current.pool_embedding_model(pool))
        df, calls = score_samples(
            cell,
            judging,
            encoder.embed,
            repeats=current.repeats,
            judge_repeats=current.judge_repeats,
            alpha=current.alpha,
            combine=current.judge_combine,
            calibration=current.pool_calibration(pool),
            on_done=on_done,
        )
    failed = int(calls["error"].notna().sum()) if len(calls) else 0
    if failed:
        context.log.warning(
            f"{failed} of {len(calls)} repeated verdicts failed in {context.partition_key}; their values are missing "
            "and the noise floor leaves those ChatSEEDs out. Rerun the partition to retry them: finished calls come "
            "from the call cache."
        )
    df["alpha"] = current.alpha
    df["judge_combine"] = current.judge_combine
    df["created_at"] = now_utc()
    judged = calls if len(calls) and set(stat_column_names("judge_")) <= set(calls.columns) else None
    return table_output(
        conform_table(df, table_of(context)),
        repeats=current.repeats,
        judge_repeats=current.judge_repeats,
        samples=len(wanted),
        failed_verdicts=failed,
        **(stats_metadata("judge", judge_stats(judged)) if judged is not None else {}),
        **explorer_link(explorer_links.dialogues_path(target=target_id, pool=pool)),
    )
