"""A step's progress: the recorder (resources/models/run_progress.py) wired to the asset's run, step and log. The step's
loop calls it as `on_done(done, total)`; the run log gets one line every `every` items and at least every 30 s
(EYT_PROGRESS_LOG_S), and `<data dir>/progress/` a heartbeat that `eyt run`, `eyt refresh` and `eyt view` read
(docs/operations.md, "Watching a run")."""

from __future__ import annotations

from collections.abc import Callable

from dagster import AssetExecutionContext
from dagster._core.errors import DagsterInvalidPropertyError

from resources.models.run_progress import StepProgress
from resources.runs.progress_files import LAUNCH_TAG

PROGRESS_EVERY = 10  # items between two progress lines in the run log


def _job_name(context: AssetExecutionContext) -> str:
    """The run's job; an asset invoked directly (a test calling the function) has none."""
    try:
        return context.job_name
    except DagsterInvalidPropertyError:
        return "direct"


def _launch_tag(context: AssetExecutionContext) -> str | None:
    try:
        return context.run.tags.get(LAUNCH_TAG)
    except DagsterInvalidPropertyError:
        return None


def step_progress(
    context: AssetExecutionContext,
    data_dir: str,
    unit: str,
    message: Callable[[int, int], str],
    every: int = PROGRESS_EVERY,
    total: int | None = None,
) -> StepProgress:
    """The recorder of this step; use it as `with step_progress(...) as on_done:`. `unit` names what the step
    counts ("dialogues", "turns judged", ...); `message(done, total)` starts each run-log line; `total` the items,
    when the asset knows them before the loop (so a display has the count from the step's first moment; the loop's
    `on_done(0, total)` says it otherwise; 0: the step has nothing to count and shows no line of its own)."""
    return StepProgress(
        data_dir,
        run_id=context.run_id,
        step=context.op_def.name,
        job=_job_name(context),
        unit=unit,
        message=message,
        log=context.log.info,
        partition=str(context.partition_key) if context.has_partition_key else None,
        launch=_launch_tag(context),
        every_items=every,
        total=total,
    )
