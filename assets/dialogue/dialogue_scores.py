"""dialogue_scores: every EYT-Bench metric broken down to one row per dialogue."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import now_utc, table_output
from eyt_dagster.dialogue_scores import dialogue_scores as score_dialogues
from eyt_dagster.partitions import target_pool_partitions
from eyt_dagster.tables import DialogueScoresFrame
from resources.models import BenchmarkResource

LOGIC_VERSION = "1"


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
    eyt: BenchmarkResource,
    dialogue_turns: pd.DataFrame,
    judge_verdicts: pd.DataFrame,
    final_intent_verdicts: pd.DataFrame,
    intent_similarity: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Per dialogue: label hits, intent drift, directional alignment, the judges' combined completion and
    satisfaction (0-100), weighted (alpha from the slate) and summed dimension scores, early/late means."""
    df = score_dialogues(dialogue_turns, judge_verdicts, final_intent_verdicts, intent_similarity, eyt.slate.alpha)
    df["alpha"] = eyt.slate.alpha
    df["created_at"] = now_utc()
    context.log.info(f"scored {len(df)} dialogues")
    return table_output(df, alpha=eyt.slate.alpha)
