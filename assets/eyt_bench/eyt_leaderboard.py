"""leaderboard: the headline table over every target x pool partition (reads all partitions)."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._output import explorer_link, now_utc, table_of, table_output
from eyt_dagster.core import explorer_links
from eyt_dagster.core.baseline_flags import baseline_note
from eyt_dagster.eyt_bench.leaderboard import build_leaderboard
from eyt_dagster.eyt_bench.table_contracts import LeaderboardFrame, conform_table
from resources.models.model_access import ReportAccess, SlateAccess

LOGIC_VERSION = (
    "5"  # 3: simulator_flag_rate; 4: language and the language-consistency shares; 5: cut_replies, adaptations
)


@asset(
    key_prefix=["dialogue"],
    group_name="reports",
    ins={
        name: AssetIn(key=["dialogue", name])
        for name in (
            "dialogue_scores",
            "dialogue_turns",
            "judge_verdicts",
            "final_intent_verdicts",
            "simulator_audit",
            "language_consistency",
        )
    },
    dagster_type=LeaderboardFrame,
    code_version=LOGIC_VERSION,
)
def leaderboard(
    context: AssetExecutionContext,
    slate: SlateAccess,
    reports: ReportAccess,
    dialogue_scores: pd.DataFrame,
    dialogue_turns: pd.DataFrame,
    judge_verdicts: pd.DataFrame,
    final_intent_verdicts: pd.DataFrame,
    simulator_audit: pd.DataFrame,
    language_consistency: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Per target x pool: label accuracies, emotion macro-F1, drift, FICR, satisfaction, the three
    subjective dimensions (weighted and unweighted, 0-100), mean turns, tokens and cost per role."""
    board = build_leaderboard(
        slate.slate,
        dialogue_scores,
        dialogue_turns,
        judge_verdicts,
        final_intent_verdicts,
        simulator_audit,
        store=reports.cache,
        languages=language_consistency,
    )
    board["created_at"] = now_utc()
    note = baseline_note(board)
    context.log.info(note)
    return table_output(
        conform_table(board, table_of(context)),
        baselines=note,
        slate=slate.slate.name,
        judge_combine=slate.slate.judge_combine,
        **explorer_link(explorer_links.leaderboard_path()),
    )
