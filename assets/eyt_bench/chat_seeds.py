"""chat_seeds: one ChatSEED per persona, written by the simulator (paper §3.3)."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, stats_metadata, table_of, table_output
from assets.eyt_bench.partitions import pool_partitions
from eyt_dagster.eyt_bench.chat_seeds import write_chat_seeds
from eyt_dagster.eyt_bench.prompts import code_version_hash, prompt_hash
from eyt_dagster.eyt_bench.table_contracts import ChatSeedsFrame, conform_table
from resources.models.model_access import ModelAccess, SlateAccess
from resources.roles.eyt_roles import EytRoles

LOGIC_VERSION = "1"
PROMPT_HASH = prompt_hash("seed_generation")  # English; a pool in another language records its own


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=pool_partitions,
    ins={"persona_pool": AssetIn(key=["dialogue", "persona_pool"])},
    dagster_type=ChatSeedsFrame,
    metadata={"partition_expr": "pool"},
    code_version=f"{LOGIC_VERSION}-{code_version_hash('seed_generation')}",
)
def chat_seeds(
    context: AssetExecutionContext, slate: SlateAccess, models: ModelAccess, persona_pool: pd.DataFrame
) -> Output[pd.DataFrame]:
    """ChatSEEDs for the first `dialogues_per_pool` personas. A rerun asks the simulator again: seeds whose
    request finished before come from the call cache unchanged, rows that failed are retried (as dialogue_turns
    resumes)."""
    current, pool = slate.slate, context.partition_key
    simulator = EytRoles(slate.slate, models).simulator(context.run_id, pool)
    pool_prompt_hash = prompt_hash("seed_generation", language=current.pool_language(pool))
    seeds = write_chat_seeds(
        persona_pool,
        simulator,
        pool=pool,
        count=current.dialogues_per_pool,
        workers=current.simulator.max_concurrency,
        prompt_hash=pool_prompt_hash,
        slate_seed=current.seed,
    )
    df = seeds.rows
    df["created_at"] = now_utc()
    if seeds.errors:
        context.log.warning(f"{seeds.errors} ChatSEED(s) failed in pool {pool}; rerun the asset to retry only those")
    return table_output(
        conform_table(df, table_of(context)),
        simulator=simulator.model_id,
        prompt_hash=pool_prompt_hash,
        reused_rows=seeds.reused,
        **stats_metadata("simulator", seeds.stats),
    )
