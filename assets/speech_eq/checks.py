"""SpeechEQ's asset checks: the contracts of eyt_dagster/speech_eq/table_checks.py run after each partition is
written (assets/_checks.py says which warn and which are errors)."""

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, asset_check

from assets._checks import ERROR_ROWS, check_result
from assets.speech_eq.partitions import speech_target_partitions, subscale_partitions
from eyt_dagster.core.table_checks import no_error_rows
from eyt_dagster.speech_eq import table_checks as contracts
from resources.models.model_access import ModelAccess
from resources.storage.data_paths import resolve_path_columns


@asset_check(
    asset=["speech", "eq_items"],
    partitions_def=subscale_partitions,
    description="Every item has one resonant and one dissonant clip for turns 4 and 6, on disk.",
)
def one_resonant_candidate_per_test_turn(models: ModelAccess, eq_items: pd.DataFrame) -> AssetCheckResult:
    # clip paths are stored relative to the data directory, not to the process's working directory
    return check_result(contracts.one_resonant_candidate_per_test_turn(resolve_path_columns(eq_items, models.data_dir)))


@asset_check(asset=["speech", "slm_choices"], partitions_def=speech_target_partitions, **ERROR_ROWS)
def choice_errors(slm_choices: pd.DataFrame) -> AssetCheckResult:
    return check_result(no_error_rows(slm_choices, "item_id"), AssetCheckSeverity.WARN)
