"""dialogue_turns: the multi-turn dialogues of one target on one pool (Algorithm 1)."""

from typing import TYPE_CHECKING, cast

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, AssetRecordsFilter, Output, asset

from assets._output import explorer_link, now_utc, stats_metadata, table_of, table_output
from assets._progress import step_progress
from assets.eyt_bench.partitions import SIMULATOR_POOL, by_pool, target_pool_partitions
from eyt_dagster.core import explorer_links
from eyt_dagster.eyt_bench.dialogue_loop import Turn
from eyt_dagster.eyt_bench.dialogue_turns import play_cell
from eyt_dagster.eyt_bench.intent_texts import turn_intent_texts
from eyt_dagster.eyt_bench.prompts import code_version_hash, prompt_hash
from eyt_dagster.eyt_bench.sequential_plan import played_prefix
from eyt_dagster.eyt_bench.table_contracts import DialogueTurnsFrame, conform_table
from eyt_dagster.eyt_bench.types import ChatSeed
from resources.models.model_access import EmbeddingAccess, ModelAccess, SlateAccess
from resources.roles.eyt_roles import EytRoles

if TYPE_CHECKING:
    from eyt_dagster.slate import Slate

LOGIC_VERSION = (
    "3"  # 3: a thinking target's reasoning apart from response_text; reasoning tokens, cut replies, adaptations
)
PROMPT_KEYS = ("simulator", "perception", "target")
PROMPT_HASH = prompt_hash(*PROMPT_KEYS)  # English; a pool in another language records its own


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins={"chat_seeds": AssetIn(key=["dialogue", "chat_seeds"], partition_mapping=by_pool)},
    dagster_type=DialogueTurnsFrame,
    metadata={"partition_expr": {"target": "target", "pool": "pool"}},
    code_version=f"{LOGIC_VERSION}-{code_version_hash(*PROMPT_KEYS)}",
    pool=SIMULATOR_POOL,
)
def dialogue_turns(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    embeddings: EmbeddingAccess,
    chat_seeds: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Every ChatSEED of the pool played out between the simulator and the target, one row per turn."""
    keys = context.partition_key.keys_by_dimension
    target_id, pool = keys["target"], keys["pool"]
    current = slate.slate
    cell_prompt_hash = prompt_hash(*PROMPT_KEYS, language=current.pool_language(pool))
    prefix = _sequential_prefix(context, current) if current.sequential_on else None
    if prefix is not None:  # the sequential design: the first `prefix` ChatSEEDs of the pool's seeded order
        chat_seeds = played_prefix(chat_seeds, current.seed, prefix)
        context.log.info(f"sequential design: playing the first {prefix} ChatSEEDs of the pool's order")
    progress = step_progress(
        context,
        models.data_dir,
        "dialogues",
        lambda done, total: f"dialogues done: {done} of {total} ({target_id} on {pool})",
        total=int(chat_seeds["error"].isna().sum()),  # the ChatSEEDs play_cell plays
    )
    with progress as on_done:  # the count is there before the roles are built
        roles = EytRoles(current, models)
        simulator, target = roles.simulator(context.run_id, pool), roles.target(target_id, context.run_id, pool=pool)
        # each turn's intent texts go to the process's background encoder as the turn ends, so intent_similarity
        # finds most of its vectors ready: the encoding overlaps this step's waits on the endpoints
        encoder = embeddings.early_embeddings(current.pool_embedding_model(pool))
        encoder.forget()

        def encode_early(seed: ChatSeed, turn: Turn) -> None:
            encoder.hand_over([*turn_intent_texts(seed, turn), turn.user_text])  # the utterance: simulator_audit

        cell = play_cell(
            chat_seeds,
            simulator,
            target,
            target_ref=current.target(target_id),
            simulator_ref=current.simulator,
            pool=pool,
            cell=str(context.partition_key),
            t_max=current.t_max,
            prompt_hash=cell_prompt_hash,
            slate_seed=current.seed,
            on_done=on_done,
            on_turn=encode_early,
        )
    for warning in cell.warnings:
        context.log.warning(warning)
    df = cell.rows
    df["created_at"] = now_utc()
    return table_output(
        conform_table(df, table_of(context)),
        **cell.summary(),
        target_model=current.target(target_id).model,
        simulator=simulator.model_id,
        baseline=current.target(target_id).is_baseline,
        prompt_hash=cell_prompt_hash,
        **explorer_link(explorer_links.dialogues_path(target=target_id, pool=pool)),
        **stats_metadata("target", cell.target_stats),
        **stats_metadata("simulator", cell.simulator_stats),
        **({SEQUENTIAL_PREFIX: prefix} if prefix is not None else {}),
    )


# The metadata key of the ChatSEEDs a cell played under the sequential design, and the run tag `eyt run` sets it with.
SEQUENTIAL_PREFIX = "sequential_prefix"
SEQUENTIAL_TAG = "eyt/sequential_prefix"


def _sequential_prefix(context: AssetExecutionContext, slate: "Slate") -> int:
    """How many ChatSEEDs of the pool's order the cell plays under the sequential design: what `eyt run`'s loop asks
    for (the run tag), else what the cell played last time (a refresh or a daemon run replays the same dialogues),
    else the design's first look."""
    tagged = context.run.tags.get(SEQUENTIAL_TAG)
    if tagged:
        return int(tagged)
    found = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=context.asset_key, asset_partitions=[context.partition_key]), limit=1
    ).records
    event = found[0].asset_materialization if found else None
    earlier = event.metadata.get(SEQUENTIAL_PREFIX) if event is not None else None
    if earlier is not None:
        return int(cast(int, earlier.value))
    assert slate.sequential is not None
    return slate.sequential.min_dialogues
