"""Asset checks: the contracts of eyt_dagster/core/table_checks.py run after each partition is written, and
show in the UI next to the asset. The error-row checks warn (the run keeps its finished work; a rerun retries
the failed calls); the others are errors. A failed ERROR check makes `eyt run` / `eyt refresh` count the run as
failed (eyt_dagster/ops/launch.py); it blocks nothing in the run itself, so the finished dialogues of a cell
that failed its check are still judged and its leaderboard row is written."""

import warnings
from typing import Any

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, PreviewWarning, asset_check

from eyt_dagster.core import table_checks
from eyt_dagster.partitions import (
    pool_partitions,
    speech_target_partitions,
    subscale_partitions,
    target_pool_partitions,
)
from resources.benchmark import BenchmarkResource
from resources.data_paths import resolve_path_columns

# Partitioned checks are a preview feature in dagster 1.13 (they work: tests/test_checks.py); one notice is
# enough, not one per check on every code-location load.
warnings.filterwarnings("ignore", category=PreviewWarning, message=".*partitions_def on an AssetCheckSpec")


def _result(verdict: table_checks.Verdict, severity: AssetCheckSeverity = AssetCheckSeverity.ERROR) -> AssetCheckResult:
    return AssetCheckResult(
        passed=verdict.passed, severity=severity, description=verdict.description, metadata=verdict.metadata
    )


@asset_check(
    asset=["dialogue", "dialogue_turns"],
    partitions_def=target_pool_partitions,
    description="No dialogue runs beyond T_max turns.",
)
def dialogues_within_t_max(eyt: BenchmarkResource, dialogue_turns: pd.DataFrame) -> AssetCheckResult:
    return _result(table_checks.dialogues_within_t_max(dialogue_turns, eyt.slate.t_max))


@asset_check(
    asset=["dialogue", "dialogue_turns"],
    partitions_def=target_pool_partitions,
    description="At least one dialogue of the cell finished, and at most the slate's max_unfinished_fraction of "
    "them did not; names the unfinished ones' failures by role and kind.",
)
def enough_finished_dialogues(eyt: BenchmarkResource, dialogue_turns: pd.DataFrame) -> AssetCheckResult:
    return _result(table_checks.enough_finished_dialogues(dialogue_turns, eyt.slate.max_unfinished_fraction))


@asset_check(
    asset=["dialogue", "judge_verdicts"],
    partitions_def=target_pool_partitions,
    description="Every judge sub-score is a value of the slate's judge scale.",
)
def subscores_in_scale(eyt: BenchmarkResource, judge_verdicts: pd.DataFrame) -> AssetCheckResult:
    return _result(table_checks.subscores_in_scale(judge_verdicts, eyt.slate.scale))


@asset_check(
    asset=["speech", "eq_items"],
    partitions_def=subscale_partitions,
    description="Every item has one resonant and one dissonant clip for turns 4 and 6, on disk.",
)
def one_resonant_candidate_per_test_turn(eyt: BenchmarkResource, eq_items: pd.DataFrame) -> AssetCheckResult:
    # clip paths are stored relative to the data directory, not to the process's working directory
    return _result(table_checks.one_resonant_candidate_per_test_turn(resolve_path_columns(eq_items, eyt.data_dir)))


_ERRORS: dict[str, Any] = dict(
    name="no_error_rows", description="Lists the rows whose model call failed (warns; a rerun retries them)."
)


@asset_check(asset=["dialogue", "chat_seeds"], partitions_def=pool_partitions, **_ERRORS)
def chat_seed_errors(chat_seeds: pd.DataFrame) -> AssetCheckResult:
    return _result(table_checks.no_error_rows(chat_seeds, "seed_id"), AssetCheckSeverity.WARN)


@asset_check(asset=["dialogue", "dialogue_turns"], partitions_def=target_pool_partitions, **_ERRORS)
def dialogue_errors(dialogue_turns: pd.DataFrame) -> AssetCheckResult:
    return _result(table_checks.no_error_rows(dialogue_turns, "seed_id"), AssetCheckSeverity.WARN)


@asset_check(asset=["dialogue", "judge_verdicts"], partitions_def=target_pool_partitions, **_ERRORS)
def judge_errors(judge_verdicts: pd.DataFrame) -> AssetCheckResult:
    return _result(table_checks.no_error_rows(judge_verdicts, "seed_id"), AssetCheckSeverity.WARN)


@asset_check(asset=["speech", "slm_choices"], partitions_def=speech_target_partitions, **_ERRORS)
def choice_errors(slm_choices: pd.DataFrame) -> AssetCheckResult:
    return _result(table_checks.no_error_rows(slm_choices, "item_id"), AssetCheckSeverity.WARN)


CHECKS = [
    dialogues_within_t_max,
    enough_finished_dialogues,
    subscores_in_scale,
    one_resonant_candidate_per_test_turn,
    chat_seed_errors,
    dialogue_errors,
    judge_errors,
    choice_errors,
]
