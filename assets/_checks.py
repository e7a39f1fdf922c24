"""What every benchmark's asset checks share: turning a contract's verdict into Dagster's check result, and the
spec of the error-row check. The error-row checks warn (the run keeps its finished work; a rerun retries the
failed calls); the others are errors. A failed ERROR check makes `eyt run` / `eyt refresh` count the run as
failed (eyt_dagster/ops/launch.py); it blocks nothing in the run itself, so the finished dialogues of a cell
that failed its check are still judged and its leaderboard row is written."""

import warnings
from typing import Any

from dagster import AssetCheckResult, AssetCheckSeverity, PreviewWarning

from eyt_dagster.core.table_checks import Verdict

# Partitioned checks are a preview feature in dagster 1.13 (they work: tests/assets/test_checks.py); one notice is
# enough, not one per check on every code-location load.
warnings.filterwarnings("ignore", category=PreviewWarning, message=".*partitions_def on an AssetCheckSpec")


def check_result(verdict: Verdict, severity: AssetCheckSeverity = AssetCheckSeverity.ERROR) -> AssetCheckResult:
    return AssetCheckResult(
        passed=verdict.passed, severity=severity, description=verdict.description, metadata=verdict.metadata
    )


ERROR_ROWS: dict[str, Any] = dict(
    name="no_error_rows", description="Lists the rows whose model call failed (warns; a rerun retries them)."
)
