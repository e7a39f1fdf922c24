"""simulator_audit: per simulator turn of a cell's finished dialogues, the deterministic checks of the user
simulator (eyt_dagster/eyt_bench/simulator_audit.py), and per dialogue its flags."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import explorer_link, now_utc, table_of, table_output
from assets.eyt_bench.partitions import target_pool_partitions
from eyt_dagster.core import explorer_links
from eyt_dagster.eyt_bench.simulator_audit import FLAGS, audit, dialogue_flags
from eyt_dagster.eyt_bench.table_contracts import SimulatorAuditFrame, conform_table
from resources.model_access import ModelAccess

LOGIC_VERSION = "1"


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins={"dialogue_turns": AssetIn(key=["dialogue", "dialogue_turns"])},
    dagster_type=SimulatorAuditFrame,
    metadata={"partition_expr": {"target": "target", "pool": "pool"}},
    code_version=LOGIC_VERSION,
    op_tags={"dagster/priority": "-2"},  # after intent_similarity: the last step that reads the early encoder
)
def simulator_audit(
    context: AssetExecutionContext, eyt: ModelAccess, dialogue_turns: pd.DataFrame
) -> Output[pd.DataFrame]:
    """Per simulator turn: latent-intent leak, role flip, repetition, empty turn; per dialogue: early end and flags."""
    model = eyt.slate.embedding_model
    embeddings = eyt.early_embeddings(model)  # the utterances were handed over as the dialogues ran
    df, stats = audit(dialogue_turns, embeddings.embed)
    # what is still queued belongs to dialogues that did not finish (no table reads them): not worth the CPU
    embeddings.forget()
    if stats is not None:
        context.log.info(f"embeddings: {stats}")
    df["embedding_model"] = model
    df["created_at"] = now_utc()
    dialogues = dialogue_flags(df)
    counts = {flag: int(df.groupby(["seed_id"])[flag].any().sum()) if len(df) else 0 for flag in FLAGS}
    flagged = int(dialogues["flagged"].sum())
    context.log.info(f"simulator audit: {flagged} of {len(dialogues)} dialogues flagged ({counts})")
    keys = context.partition_key.keys_by_dimension
    return table_output(
        conform_table(df, table_of(context)),
        dialogues=len(dialogues),
        flagged_dialogues=flagged,
        **{f"dialogues_{flag}": n for flag, n in counts.items()},
        **explorer_link(
            explorer_links.dialogues_path(target=keys["target"], pool=keys["pool"], failure="simulator_flagged")
        ),
    )
