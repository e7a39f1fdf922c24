"""Running the location's jobs in this process against the real Dagster instance (what `eyt run`, `eyt refresh`
and `eyt remove-target` do; no daemon needed). Every run is recorded in the instance, so the UI shows it."""

from __future__ import annotations

import time

from eyt_dagster.instance import PROJECT_ROOT

# The terminal shows one line per run; every event is still stored in the instance for the UI.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def job_by_name(name: str):  # noqa: ANN201 - module-level, so a run can be reconstructed by name
    from eyt_dagster.definitions import defs

    return defs.resolve_job_def(name)


def execute(instance, job_name: str, tags: dict[str, str], label: str, asset_selection=None) -> bool:  # noqa: ANN001
    """Run one job (optionally only some of its assets, as AssetKeys) and print one line; True on success."""
    from dagster import build_reconstructable_job, execute_job

    from eyt_dagster.dead_runs import process_tags

    started = time.monotonic()
    job = build_reconstructable_job("eyt_dagster.launch", "job_by_name", (job_name,),
                                    reconstructor_working_directory=str(PROJECT_ROOT))
    with execute_job(job, instance=instance, tags={**tags, **process_tags()}, raise_on_error=False, run_config=QUIET,
                     asset_selection=asset_selection) as result:
        ok = result.success
        print(f"  {'ok    ' if ok else 'FAILED'} {label:<48} {time.monotonic() - started:6.1f} s  run {result.run_id[:8]}")
        if not ok:
            for event in result.all_events:
                if event.is_failure and event.step_key:
                    print(f"         step {event.step_key}: {event.message}")
    return ok
