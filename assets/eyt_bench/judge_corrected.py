"""The judge-made headline numbers corrected by human labels (docs/eyt-metrics.md, prediction-powered estimates):
dialogue.judge_corrected, from the human annotations, the per-dialogue scores, the turns the judges answered and the
leaderboard's intervals."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._asset_args import AssetPlace
from assets._output import now_utc, table_output
from eyt_dagster.core.baseline_flags import baseline_note, flag_targets
from eyt_dagster.eyt_bench.judge_correction import CORRECTED, cell_corrections, corrected_table
from resources.models.model_access import SlateAccess

LOGIC_VERSION = "2"  # 2: only labels from drawn sheets (a `sheet` id) count
_REPORT: AssetPlace = dict(key_prefix=["dialogue"], group_name="reports")
_INS = {
    name: AssetIn(key=["dialogue", name])
    for name in ("human_annotations", "dialogue_scores", "judge_verdicts", "leaderboard_intervals")
}


@asset(**_REPORT, ins=_INS, code_version=LOGIC_VERSION)
def judge_corrected(
    context: AssetExecutionContext,
    slate: SlateAccess,
    human_annotations: pd.DataFrame,
    dialogue_scores: pd.DataFrame,
    judge_verdicts: pd.DataFrame,
    leaderboard_intervals: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Per target x pool and judge-made metric (empathy, persona, anthropomorphic, FICR, satisfaction): the
    judge's figure, the labelled dialogues' human mean and the prediction-powered (PPI++) estimate corrected by
    human labels, and which of them is shown (corrected from the slate's min_human_labels labelled dialogues)."""
    annotated = human_annotations.astype({"seed_id": str}).set_index(["target", "pool", "seed_id"]).index.unique()
    keep = judge_verdicts.astype({"seed_id": str}).set_index(["target", "pool", "seed_id"]).index.isin(annotated)
    corrections = cell_corrections(
        dialogue_scores,
        human_annotations,
        judge_verdicts[keep],  # which turns were judged, for the annotated dialogues only
        leaderboard_intervals,
        alpha=slate.slate.alpha,
        min_human_labels=slate.slate.min_human_labels,
    )
    df = corrected_table(corrections)
    if len(df):
        df = flag_targets(df, slate.slate)
    else:
        df = df.assign(is_baseline=pd.Series(dtype=bool), self_preference_risk=pd.Series(dtype=bool))
    df["created_at"] = now_utc()
    partly = {m: sum(c.n_partly_labelled for c in corrections if c.metric == m) for m in dict.fromkeys(df["metric"])}
    if any(partly.values()):
        context.log.info(
            "partly labelled dialogues (some human scores of the field, not every one needed), not used: "
            + ", ".join(f"{m} {n}" for m, n in partly.items() if n)
        )
    corrected = int((df["shown"] == CORRECTED).sum()) if len(df) else 0
    return table_output(
        df,
        corrected_cell_metrics=corrected,
        judge_only_cell_metrics=len(df) - corrected,
        partly_labelled_dialogues=sum(partly.values()),
        min_human_labels=slate.slate.min_human_labels,
        baselines=baseline_note(df),
    )
