"""simulator_audit: per simulator turn of a cell's finished dialogues, the deterministic checks of the user
simulator (eyt_dagster/eyt_bench/simulator_audit.py), the slate's optional audit model's answer, and per dialogue
its flags. The audit model and its prompt's hash reach the code version through the slate's settings
(slate_settings.py), only when the slate names the model."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import explorer_link, now_utc, stats_metadata, table_of, table_output
from assets._progress import step_progress
from assets.eyt_bench.partitions import target_pool_partitions
from eyt_dagster.core import explorer_links
from eyt_dagster.eyt_bench.prompts import AUDIT_PROMPT_KEY, prompt_hash
from eyt_dagster.eyt_bench.simulator_audit import FLAGS, MODEL_FLAGS, audit, audited_turns, dialogue_flags, model_stats
from eyt_dagster.eyt_bench.table_contracts import SimulatorAuditFrame, conform_table
from resources.models.model_access import EmbeddingAccess, ModelAccess, SlateAccess
from resources.roles.eyt_roles import EytRoles

LOGIC_VERSION = "2"  # 2: Chinese utterances are tokenised by character and compared with Chinese statements


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
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    embeddings: EmbeddingAccess,
    dialogue_turns: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Per simulator turn: latent-intent leak, role flip, repetition, empty turn (and, with an audit model, its two
    answers); per dialogue: early end and flags."""
    pool = context.partition_key.keys_by_dimension["pool"]
    model, language = slate.slate.pool_embedding_model(pool), slate.slate.pool_language(pool)
    ref = slate.slate.simulator_audit_model
    # only the audit model's calls are counted (none without one: the step then shows no count of its own); the
    # count is there before the encoder embeds the utterances
    progress = step_progress(
        context,
        models.data_dir,
        "turns audited",
        lambda done, total: f"audit model: {done} of {total} turns checked",
        total=audited_turns(dialogue_turns) if ref is not None else 0,
    )
    with progress as on_done:
        encoder = embeddings.early_embeddings(model)  # the utterances were handed over as the dialogues ran
        auditor = EytRoles(slate.slate, models).simulator_auditor(context.run_id, pool)
        df, stats = audit(
            dialogue_turns,
            encoder.embed,
            auditor=auditor,
            language=language,
            workers=ref.max_concurrency if ref is not None else 1,
            on_done=on_done,
        )
    if auditor is not None:
        failed = int(df["model_error"].notna().sum()) if len(df) else 0
        if failed:
            context.log.warning(
                f"audit model: {failed} of {len(df)} calls failed; see dialogue.simulator_audit.model_error "
                "(rerun the partition to retry them: answered calls come from the call cache)"
            )
    # what is still queued belongs to dialogues that did not finish (no table reads them): not worth the CPU
    encoder.forget()
    if stats is not None:
        context.log.info(f"embeddings: {stats}")
    df["embedding_model"] = model
    df["audit_prompt_hash"] = prompt_hash(AUDIT_PROMPT_KEY, language=language) if auditor is not None else None
    df["created_at"] = now_utc()
    dialogues = dialogue_flags(df)
    shown = [f for f in FLAGS if auditor is not None or f not in MODEL_FLAGS]
    counts = {
        flag: int(df[flag].astype("boolean").fillna(False).groupby(df["seed_id"]).any().sum()) if len(df) else 0
        for flag in shown
    }
    flagged = int(dialogues["flagged"].sum())
    context.log.info(f"simulator audit: {flagged} of {len(dialogues)} dialogues flagged ({counts})")
    keys = context.partition_key.keys_by_dimension
    return table_output(
        conform_table(df, table_of(context)),
        dialogues=len(dialogues),
        flagged_dialogues=flagged,
        **{f"dialogues_{flag}": n for flag, n in counts.items()},
        **(stats_metadata("audit", model_stats(df)) if auditor is not None else {}),
        **explorer_link(
            explorer_links.dialogues_path(target=keys["target"], pool=keys["pool"], failure="simulator_flagged")
        ),
    )
