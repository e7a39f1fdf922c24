"""chat_seeds: one ChatSEED per persona, written by the simulator (paper §3.3)."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, stats_metadata, table_output
from eyt_dagster.core.errors import PER_ITEM_ERRORS
from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.core.replies import CallStats
from eyt_dagster.eyt_bench.prompts import prompt_hash
from eyt_dagster.eyt_bench.table_contracts import ChatSeedsFrame, conform_table
from eyt_dagster.eyt_bench.table_rows import persona_from_row, seed_row
from eyt_dagster.partitions import pool_partitions
from resources.benchmark import BenchmarkResource

LOGIC_VERSION = "1"
PROMPT_HASH = prompt_hash("seed_generation")


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=pool_partitions,
    ins={"persona_pool": AssetIn(key=["dialogue", "persona_pool"])},
    dagster_type=ChatSeedsFrame,
    metadata={"partition_expr": "pool"},
    code_version=f"{LOGIC_VERSION}-{PROMPT_HASH}",
)
def chat_seeds(
    context: AssetExecutionContext, eyt: BenchmarkResource, persona_pool: pd.DataFrame
) -> Output[pd.DataFrame]:
    """ChatSEEDs for the first `dialogues_per_pool` personas. A rerun asks the simulator again: seeds whose
    request finished before come from the call cache unchanged, rows that failed are retried (as dialogue_turns
    resumes)."""
    slate, pool = eyt.slate, context.partition_key
    simulator = eyt.simulator(context.run_id)
    personas = persona_pool.head(slate.dialogues_per_pool).to_dict("records")

    def one_seed(persona_row: dict) -> tuple[dict, CallStats]:
        persona = persona_from_row(persona_row)
        seed_id = f"{pool}:{persona.persona_id}"
        try:
            reply = simulator.generate_seed(persona, seed_id=seed_id)
            return seed_row(seed_id, persona, reply, None), reply.stats
        except PER_ITEM_ERRORS as exc:  # kept as an error row; the next run retries exactly these
            return seed_row(seed_id, persona, None, f"{type(exc).__name__}: {exc}"), CallStats()

    # the seeds are independent calls: as many at once as the simulator's budget allows, rows in persona order
    done = ordered_map(one_seed, personas, slate.simulator.max_concurrency)
    rows = [row for row, _ in done]
    stats = sum((s for _, s in done), CallStats())
    df = pd.DataFrame(rows)
    df["simulator"] = simulator.model_id
    df["prompt_hash"] = PROMPT_HASH
    df["slate_seed"] = slate.seed
    df["created_at"] = now_utc()
    errors = int(df["error"].notna().sum())
    if errors:
        context.log.warning(f"{errors} ChatSEED(s) failed in pool {pool}; rerun the asset to retry only those")
    return table_output(
        conform_table(df, "dialogue.chat_seeds"),
        simulator=simulator.model_id,
        prompt_hash=PROMPT_HASH,
        reused_rows=sum(1 for _, s in done if s.calls == 0 and s.cache_hits > 0),
        **stats_metadata("simulator", stats),
    )
