"""Heartbeat files of running steps: `<data dir>/progress/<run id>.<step>.json`, one per step that counts its
work, rewritten about once a second by the step's recorder (resources/models/run_progress.py) and removed when the step
ends. Written atomically (a temporary file renamed over the old one), so a reader sees a whole file or the previous
one and never waits on the writer; a reader never writes. Each file names its process (host, pid, start time) and
when it was last written, so a reader can tell a step that is running from one whose process died or that stopped
writing (docs/operations.md, "Watching a run").

A heartbeat holds counts, names of steps, partitions and endpoints and failure kinds only: never model text, an
error message, a header or a key."""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from eyt_dagster.core.progress import EndpointLoad, StepFigures
from resources.runs.processes import process_alive

PROGRESS_DIR = "progress"
LAUNCH_TAG = "eyt/launch"  # `eyt run` / `eyt refresh` tag their runs "<command token>:<run index>"
STALE_AFTER_S = 30.0  # no rewrite for this long: the step is not shown as running (the writer rewrites every ~1 s)
FORGET_AFTER_S = 15 * 60.0  # a heartbeat left by a dead or stalled step is listed (as ended) this long, then skipped

RUNNING, STALLED, DEAD = "running", "stalled", "dead"


def progress_dir(data_dir: str | Path) -> Path:
    return Path(data_dir) / PROGRESS_DIR


def endpoint_name(model: str, base_url: str) -> str:
    """'model @ scheme://host:port': the base URL without user, password, path or query (a URL may carry a
    credential; the host says which server it is)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{model} @ {parts.scheme}://{host}{port}" if parts.scheme else f"{model} @ {host}{port}"


@dataclass(frozen=True)
class Heartbeat:
    """One step's heartbeat as read back, with its status: running, stalled (no rewrite for STALE_AFTER_S) or dead
    (its process is gone)."""

    run_id: str
    step: str
    job: str
    partition: str | None
    launch: str | None
    host: str
    pid: int
    started_at: float
    updated_at: float
    figures: StepFigures
    status: str

    @property
    def running(self) -> bool:
        return self.status == RUNNING


def write_heartbeat(path: Path, record: dict[str, Any]) -> None:
    """Replace the file at `path` with `record` as JSON in one rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.write_text(json.dumps(record))
    os.replace(scratch, path)


def heartbeat_record(
    *,
    run_id: str,
    step: str,
    job: str,
    partition: str | None,
    launch: str | None,
    process_start: str | None,
    started_at: float,
    figures: StepFigures,
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "step": step,
        "job": job,
        "partition": partition,
        "launch": launch,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "process_start": process_start,
        "started_at": started_at,
        "updated_at": time.time(),
        "figures": asdict(figures),
    }


def _figures(data: dict[str, Any]) -> StepFigures:
    endpoints = tuple(EndpointLoad(str(e["name"]), int(e["in_flight"]), int(e["budget"])) for e in data["endpoints"])
    return StepFigures(
        unit=str(data["unit"]),
        done=int(data["done"]),
        total=int(data["total"]),
        elapsed_s=float(data["elapsed_s"]),
        calls=int(data["calls"]),
        cache_hits=int(data["cache_hits"]),
        tokens=int(data["tokens"]),
        cost_usd=float(data["cost_usd"]),
        retries=int(data["retries"]),
        rate_limited=int(data["rate_limited"]),
        failures={str(k): int(v) for k, v in data["failures"].items()},
        endpoints=endpoints,
        expected_item_s=None if data.get("expected_item_s") is None else float(data["expected_item_s"]),
        preparing=bool(data.get("preparing", False)),
    )


def _status(data: dict[str, Any], now: float) -> str:
    if data["host"] == socket.gethostname() and not process_alive(int(data["pid"]), data.get("process_start")):
        return DEAD
    return STALLED if now - float(data["updated_at"]) > STALE_AFTER_S else RUNNING


def read_heartbeat(path: Path, now: float | None = None) -> Heartbeat | None:
    """The heartbeat in `path`, or None when it is gone, unreadable or not a heartbeat (never raises)."""
    try:
        data = json.loads(path.read_text())
        now = time.time() if now is None else now
        return Heartbeat(
            run_id=str(data["run_id"]),
            step=str(data["step"]),
            job=str(data["job"]),
            partition=None if data.get("partition") is None else str(data["partition"]),
            launch=None if data.get("launch") is None else str(data["launch"]),
            host=str(data["host"]),
            pid=int(data["pid"]),
            started_at=float(data["started_at"]),
            updated_at=float(data["updated_at"]),
            figures=_figures(data["figures"]),
            status=_status(data, now),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def read_heartbeats(data_dir: str | Path, now: float | None = None) -> list[Heartbeat]:
    """Every heartbeat under the data directory, oldest start first; a dead or stalled one only while it is newer
    than FORGET_AFTER_S."""
    now = time.time() if now is None else now
    try:
        paths = sorted(progress_dir(data_dir).glob("*.json"))
    except OSError:
        return []
    beats = [b for b in (read_heartbeat(p, now) for p in paths) if b is not None]
    beats = [b for b in beats if b.running or now - b.updated_at <= FORGET_AFTER_S]
    return sorted(beats, key=lambda b: (b.started_at, b.run_id, b.step))
