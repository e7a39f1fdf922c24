"""EYT-Bench's asset checks: the contracts of eyt_dagster/eyt_bench/table_checks.py run after each partition is
written, and show in the UI next to the asset (assets/_checks.py says which warn and which are errors)."""

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, asset_check

from assets._checks import ERROR_ROWS, check_result
from assets.eyt_bench.partitions import pool_partitions, target_pool_partitions
from eyt_dagster.core.table_checks import no_error_rows
from eyt_dagster.eyt_bench import table_checks as contracts
from resources.models.model_access import SlateAccess


@asset_check(
    asset=["dialogue", "dialogue_turns"],
    partitions_def=target_pool_partitions,
    description="No dialogue runs beyond T_max turns.",
)
def dialogues_within_t_max(slate: SlateAccess, dialogue_turns: pd.DataFrame) -> AssetCheckResult:
    return check_result(contracts.dialogues_within_t_max(dialogue_turns, slate.slate.t_max))


@asset_check(
    asset=["dialogue", "dialogue_turns"],
    partitions_def=target_pool_partitions,
    description="At least one dialogue of the cell finished, and at most the slate's max_unfinished_fraction of "
    "them did not; names the unfinished ones' failures by role and kind.",
)
def enough_finished_dialogues(slate: SlateAccess, dialogue_turns: pd.DataFrame) -> AssetCheckResult:
    return check_result(contracts.enough_finished_dialogues(dialogue_turns, slate.slate.max_unfinished_fraction))


@asset_check(
    asset=["dialogue", "dialogue_turns"],
    partitions_def=target_pool_partitions,
    description="At most 5% of the target's replies were cut at max_tokens (warns; a cut reply is used as it is).",
)
def few_cut_replies(dialogue_turns: pd.DataFrame) -> AssetCheckResult:
    return check_result(contracts.few_cut_replies(dialogue_turns), AssetCheckSeverity.WARN)


@asset_check(
    asset=["dialogue", "judge_verdicts"],
    partitions_def=target_pool_partitions,
    description="Every judge sub-score is a value of the slate's judge scale.",
)
def subscores_in_scale(slate: SlateAccess, judge_verdicts: pd.DataFrame) -> AssetCheckResult:
    return check_result(contracts.subscores_in_scale(judge_verdicts, slate.slate.scale))


@asset_check(asset=["dialogue", "chat_seeds"], partitions_def=pool_partitions, **ERROR_ROWS)
def chat_seed_errors(chat_seeds: pd.DataFrame) -> AssetCheckResult:
    return check_result(no_error_rows(chat_seeds, "seed_id"), AssetCheckSeverity.WARN)


@asset_check(asset=["dialogue", "dialogue_turns"], partitions_def=target_pool_partitions, **ERROR_ROWS)
def dialogue_errors(dialogue_turns: pd.DataFrame) -> AssetCheckResult:
    return check_result(no_error_rows(dialogue_turns, "seed_id"), AssetCheckSeverity.WARN)


@asset_check(asset=["dialogue", "judge_verdicts"], partitions_def=target_pool_partitions, **ERROR_ROWS)
def judge_errors(judge_verdicts: pd.DataFrame) -> AssetCheckResult:
    return check_result(no_error_rows(judge_verdicts, "seed_id"), AssetCheckSeverity.WARN)
