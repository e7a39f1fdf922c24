"""dialogue_turns: the multi-turn dialogues of one target on one pool (Algorithm 1)."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, progress_logger, stats_metadata, table_output
from eyt_dagster.core.replies import CallStats
from eyt_dagster.eyt_bench.dialogue_loop import Turn, run_dialogues
from eyt_dagster.eyt_bench.intent_texts import turn_intent_texts
from eyt_dagster.eyt_bench.prompts import prompt_hash
from eyt_dagster.eyt_bench.table_contracts import DialogueTurnsFrame, conform_table
from eyt_dagster.eyt_bench.table_rows import TURN_COLUMNS, seed_from_row, stat_column_names, turn_rows
from eyt_dagster.eyt_bench.types import ChatSeed
from eyt_dagster.partitions import SIMULATOR_POOL, by_pool, target_pool_partitions
from resources.benchmark import BenchmarkResource
from resources.embedding_queue import QUEUE, hand_over

LOGIC_VERSION = "2"
PROMPT_HASH = prompt_hash("simulator", "perception", "target")


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins={"chat_seeds": AssetIn(key=["dialogue", "chat_seeds"], partition_mapping=by_pool)},
    dagster_type=DialogueTurnsFrame,
    metadata={"partition_expr": {"target": "target", "pool": "pool"}},
    code_version=f"{LOGIC_VERSION}-{PROMPT_HASH}",
    pool=SIMULATOR_POOL,
)
def dialogue_turns(
    context: AssetExecutionContext, eyt: BenchmarkResource, chat_seeds: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Every ChatSEED of the pool played out between the simulator and the target, one row per turn."""
    keys = context.partition_key.keys_by_dimension
    target_id, pool = keys["target"], keys["pool"]
    slate = eyt.slate
    simulator, target = eyt.simulator(context.run_id), eyt.target(target_id, context.run_id)
    seeds = [seed_from_row(r) for r in chat_seeds[chat_seeds["error"].isna()].to_dict("records")]
    if len(seeds) < len(chat_seeds):
        context.log.warning(
            f"{len(chat_seeds) - len(seeds)} of {len(chat_seeds)} ChatSEEDs of pool {pool} failed and "
            "have no dialogue; see dialogue.chat_seeds.error and rerun chat_seeds to retry them"
        )

    report = progress_logger(context, lambda done, total: f"dialogues done: {done} of {total} ({target_id} on {pool})")

    # Dialogues under way: enough to fill the target's and the simulator's budgets at once (a dialogue waits on
    # one of them at a time); each endpoint's gate caps what reaches it (resources/endpoint_gates.py).
    t_ref = slate.target(target_id)
    workers = t_ref.max_concurrency + (0 if slate.simulator.is_baseline else slate.simulator.max_concurrency)
    # each turn's intent texts go to the process's background encoder as the turn ends, so intent_similarity
    # finds most of its vectors ready: the encoding overlaps this step's waits on the endpoints
    QUEUE.forget()

    def encode_early(seed: ChatSeed, turn: Turn) -> None:
        hand_over(turn_intent_texts(seed, turn), slate.embedding_model, cache=eyt.embedding_cache)

    results = run_dialogues(
        seeds, simulator, target, slate.t_max, max_workers=workers, on_done=report, on_turn=encode_early
    )
    rows = [row for result in results for row in turn_rows(result, target_id)]
    df = pd.DataFrame(rows, columns=[*TURN_COLUMNS, *stat_column_names("target_", "simulator_")])
    df["simulator"] = simulator.model_id
    df["target_model"] = slate.target(target_id).model
    df["prompt_hash"] = PROMPT_HASH
    df["slate_seed"] = slate.seed
    df["created_at"] = now_utc()
    target_stats = sum((t.target_stats for r in results for t in r.turns), CallStats())
    simulator_stats = sum((t.simulator_stats for r in results for t in r.turns), CallStats())
    failed = [r for r in results if r.error]
    finished = len(results) - len(failed)
    if failed:
        first = failed[0]
        assert first.error is not None  # `failed` holds the results with an error
        context.log.warning(
            f"{finished} of {len(results)} dialogues finished in {context.partition_key}; see "
            f"dialogue.dialogue_turns.error (rows with turn 0; the answered turns of an unfinished dialogue are kept "
            f"with complete = false and left out of every metric). First: {first.seed.seed_id} after "
            f"{len(first.turns)} turn(s): {first.error[:300]}. Rerun the partition to finish them: answered calls "
            "come from the call cache."
        )
    answered = df[(df["turn"] > 0) & df["complete"].astype(bool)]
    return table_output(
        conform_table(df, "dialogue.dialogue_turns"),
        dialogues=len(results),
        finished_dialogues=finished,
        failed_dialogues=len(failed),
        failed_seed_ids=", ".join(r.seed.seed_id for r in failed[:5]),
        mean_turns=float(answered.groupby("seed_id")["turn"].max().mean()) if len(answered) else 0.0,
        target_model=slate.target(target_id).model,
        simulator=simulator.model_id,
        baseline=slate.target(target_id).is_baseline,
        prompt_hash=PROMPT_HASH,
        **stats_metadata("target", target_stats),
        **stats_metadata("simulator", simulator_stats),
    )
