"""Processes of this host, from /proc: when one started and whether it still lives (no Dagster here; used by
eyt_dagster/ops/dead_runs.py and eyt_dagster/ops/worker_pool.py)."""

from __future__ import annotations

import os
from pathlib import Path


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
