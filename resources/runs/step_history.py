"""How long past runs of a step took per item: `<data dir>/progress/step_history.jsonl`, one line per step that
counted its work (resources/models/run_progress.py appends it when the step ends), read when the step starts again,
so its ETA is known before its first item is done (docs/operations.md, "Watching a run").

Why a file of its own and not the call ledger: the ledger holds model calls, one row each, without the step or the
item they belong to, and an embedded baseline, a text-to-speech voice or a speech recogniser makes no row at all;
the time an item of a step takes is what the ETA needs, and only the step's recorder sees it.

A line holds the step, its job and partition, its unit, the items done of the total and the seconds it ran: no
model text, no error, no key. Appending one line is one write, so steps ending at once in several processes do not
tear each other's lines; a torn or foreign line is skipped. The file is cut to its newest KEEP_LINES lines when it
grows past MAX_BYTES. Reading or writing it never fails a step: history is for watching."""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from resources.runs.progress_files import progress_dir

HISTORY_FILE = "step_history.jsonl"
MAX_BYTES = 512 * 1024  # about 3000 lines; past this the file keeps its newest KEEP_LINES
KEEP_LINES = 1000


def history_path(data_dir: str | Path) -> Path:
    return progress_dir(data_dir) / HISTORY_FILE


def record_step(
    data_dir: str | Path,
    *,
    step: str,
    job: str,
    partition: str | None,
    unit: str,
    done: int,
    total: int,
    elapsed_s: float,
    ended_at: float | None = None,
) -> None:
    """Append one finished (or stopped) step; nothing when it finished no item (its per-item time is unknown)."""
    if done <= 0 or elapsed_s <= 0:
        return
    line = json.dumps(
        {
            "step": step,
            "job": job,
            "partition": partition,
            "unit": unit,
            "done": done,
            "total": total,
            "elapsed_s": round(elapsed_s, 3),
            "ended_at": round(time.time() if ended_at is None else ended_at, 3),
        }
    )
    path = history_path(data_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > MAX_BYTES:
            _keep_newest(path)
    except OSError:
        pass  # history is for watching; it never fails the step


def _keep_newest(path: Path) -> None:
    lines = path.read_text(errors="replace").splitlines()[-KEEP_LINES:]
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.write_text("".join(f"{line}\n" for line in lines))
    os.replace(scratch, path)


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
            if int(record["done"]) > 0 and float(record["elapsed_s"]) > 0 and isinstance(record["step"], str):
                found.append(record)
        except (ValueError, KeyError, TypeError):
            continue
    return found


def _per_item(record: dict[str, Any]) -> float:
    return float(record["elapsed_s"]) / int(record["done"])


def expected_item_s(data_dir: str | Path, step: str, partition: str | None) -> float | None:
    """Wall seconds per item of `step` in past runs: the newest run of the same partition, else the median over the
    step's other partitions (the newest run of each); None when the step never finished an item here."""
    records = [r for r in _records(history_path(data_dir)) if r["step"] == step]
    same = [r for r in records if r.get("partition") == partition]
    if same:
        return _per_item(same[-1])
    newest: dict[Any, dict[str, Any]] = {}
    for record in records:
        newest[record.get("partition")] = record
    if not newest:
        return None
    return statistics.median(_per_item(r) for r in newest.values())
