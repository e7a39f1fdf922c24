"""Processes of this host, from /proc: when one started, whether it still lives, and the tags that say where a
run executes (no Dagster here). The model-access resource tags each run it serves; eyt_dagster/ops/dead_runs.py
reads the tags back to find runs whose process is gone, and eyt_dagster/ops/worker_pool.py watches its workers."""

from __future__ import annotations

import os
import socket
from pathlib import Path

HOST_TAG, PID_TAG, START_TAG = "eyt/host", "eyt/pid", "eyt/process_start"


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (field 3, the state, first), or None off Linux."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def process_start(pid: int) -> str | None:
    """When the process started, in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    fields = _stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def process_alive(pid: int, start: str | None = None) -> bool:
    """Whether process `pid` exists on this host and is the one that started at `start` (when given). An exited
    process that its parent has not reaped yet (a zombie) is not alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        pass
    fields = _stat(pid)
    if fields is None:
        return True
    return fields[0] != "Z" and (start is None or process_start(pid) == start)


def process_tags(pid: int | None = None) -> dict[str, str]:
    """The tags that say where a run executes: this host, the pid (default: this process) and its start time."""
    pid = pid or os.getpid()
    start = process_start(pid)
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(pid), **({START_TAG: start} if start else {})}
