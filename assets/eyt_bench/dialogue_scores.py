"""dialogue_scores: every EYT-Bench metric broken down to one row per dialogue."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import explorer_link, now_utc, table_of, table_output
from assets.eyt_bench.partitions import target_pool_partitions
from eyt_dagster.core import explorer_links
from eyt_dagster.eyt_bench.dialogue_scoring import incomplete_dialogues, score_dialogues
from eyt_dagster.eyt_bench.judging import failed_verdicts_message
from eyt_dagster.eyt_bench.table_contracts import DialogueScoresFrame, conform_table
from resources.models.model_access import SlateAccess

LOGIC_VERSION = "2"


@asset(
    key_prefix=["dialogue"],
    group_name="dialogue",
    partitions_def=target_pool_partitions,
    ins={
        name: AssetIn(key=["dialogue", name])
        for name in ("dialogue_turns", "judge_verdicts", "final_intent_verdicts", "intent_similarity")
    },
    dagster_type=DialogueScoresFrame,
    metadata={"partition_expr": {"target": "target", "pool": "pool"}},
    code_version=LOGIC_VERSION,
)
def dialogue_scores(
    context: AssetExecutionContext,
    slate: SlateAccess,
    dialogue_turns: pd.DataFrame,
    judge_verdicts: pd.DataFrame,
    final_intent_verdicts: pd.DataFrame,
    intent_similarity: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Per finished dialogue: label hits, intent drift, directional alignment, the judges' combined completion
    and satisfaction (0-100), weighted (alpha from the slate) and summed dimension scores, early/late means, and
    how many turns were judged and how many judge calls failed. Judges combine as the slate's judge_combine
    says (mean or median; completion is a majority vote). Failed verdicts leave values missing."""
    current = slate.slate
    calibration = current.pool_calibration(context.partition_key.keys_by_dimension["pool"])
    df = score_dialogues(
        dialogue_turns,
        judge_verdicts,
        final_intent_verdicts,
        intent_similarity,
        current.alpha,
        current.judge_combine,
        calibration,
    )
    df["alpha"] = current.alpha
    df["judge_combine"] = current.judge_combine
    df["created_at"] = now_utc()
    partition = context.partition_key
    unfinished = incomplete_dialogues(dialogue_turns)
    if len(unfinished):
        context.log.warning(
            f"{len(df)} of {len(df) + len(unfinished)} dialogues finished in {partition}; see "
            "dialogue.dialogue_turns.error (unfinished dialogues are left out of every metric)"
        )
    for frame, what, table in (
        (judge_verdicts, "turn verdicts", "judge_verdicts"),
        (final_intent_verdicts, "final verdicts", "final_intent_verdicts"),
    ):
        message = failed_verdicts_message(frame, what, table, partition)
        if message:
            context.log.warning(message)
    context.log.info(f"scored {len(df)} dialogues (judges combined by {current.judge_combine})")
    return table_output(
        conform_table(df, table_of(context)),
        alpha=current.alpha,
        judge_combine=current.judge_combine,
        unfinished_dialogues=len(unfinished),
        failed_turn_verdicts=int(df["n_failed_verdicts"].sum()),
        failed_final_verdicts=int(df["n_failed_final_verdicts"].sum()),
        **explorer_link(explorer_links.dialogues_path(**partition.keys_by_dimension)),
    )
