"""What is running now, for the `/running` page: the heartbeats of running steps under the data directory
(resources/runs/progress_files.py), as rows of plain text and numbers. A step whose process died or that stopped
writing its heartbeat is listed apart, as ended, for a while, never as running; reading never waits on a run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from eyt_dagster.core.progress import calls_text, duration_text, endpoints_text, eta_text, failures_text, items_text
from eyt_dagster.explorer.formats import count, usd
from resources.runs.progress_files import DEAD, STALLED, Heartbeat, read_heartbeats

WHY_ENDED = {DEAD: "its process is gone", STALLED: "no update for a while (the process may hang or be busy)"}


@dataclass(frozen=True)
class RunningStep:
    run_id: str
    job: str
    partition: str
    step: str
    done: str
    eta: str
    calls: str
    tokens: str
    cost: str
    retries: int
    rate_limited: int
    failures: str
    in_flight: str
    running_for: str
    updated: str
    status: str
    why: str


def _row(beat: Heartbeat, now: float) -> RunningStep:
    f = beat.figures
    return RunningStep(
        run_id=beat.run_id,
        job=beat.job,
        partition=beat.partition or "",
        step=beat.step.split("__")[-1],
        done=items_text(f),  # as the live table of `eyt run` writes it, "(preparing)" too
        eta=eta_text(f),
        calls=calls_text(f),
        tokens=count(f.tokens),
        cost=usd(f.cost_usd),
        retries=f.retries,
        rate_limited=f.rate_limited,
        failures=failures_text(f.failures),
        in_flight=endpoints_text(f.endpoints),
        running_for=duration_text(max(0.0, now - beat.started_at)),
        updated=f"{duration_text(max(0.0, now - beat.updated_at))} ago",
        status=beat.status,
        why=WHY_ENDED.get(beat.status, ""),
    )


def running_steps(data_dir: str | Path, now: float | None = None) -> tuple[list[RunningStep], list[RunningStep]]:
    """(the running steps, the steps that ended without finishing), each in start order."""
    now = time.time() if now is None else now
    beats = read_heartbeats(data_dir, now)
    rows = [_row(b, now) for b in beats]
    return [r for r in rows if r.status == "running"], [r for r in rows if r.status != "running"]
