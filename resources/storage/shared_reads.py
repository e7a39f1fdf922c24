"""One read of a whole report input per process: the report steps of one run (the in-process executor runs them
in one process) read the same tables, six of them judge_verdicts, so the frame of every partition's files is kept
and each further step gets a copy of it (docs/throughput.md, "The reports' result cache").

A kept frame is used only while its files are the ones read: the key holds each file's path, size, inode and
modification time, and a partition rewritten since (an atomic replace: a new inode) is read afresh. Only reads of
several local partitions are kept, at most MAX_KEPT of them (the least recently used goes first).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from resources.storage.warehouse_files import is_remote

MAX_KEPT = 8  # the report job reads six tables of many partitions

# each file: (path, size, inode, mtime in ns), or (path, None) when it is missing
Signature = tuple[tuple[str | int | None, ...], ...]
_kept: OrderedDict[tuple[str, Signature], pd.DataFrame] = OrderedDict()
_lock = threading.Lock()


def _signature(paths: Sequence[Path]) -> Signature:
    out: list[tuple[str | int | None, ...]] = []
    for path in paths:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            out.append((str(path), None))
            continue
        out.append((str(path), st.st_size, st.st_ino, st.st_mtime_ns))
    return tuple(out)


def shared_read(
    files: Sequence[Path], folder: Path, extra: Sequence[Path], read: Callable[[], pd.DataFrame]
) -> pd.DataFrame:
    """`read()` of `files` (with the folder's `extra` files, e.g. its schema file), or a copy of the frame this
    process read of exactly those files before."""
    if len(files) < 2 or is_remote(folder):
        return read()
    key = (str(folder), _signature([*files, *extra]))
    with _lock:
        kept = _kept.get(key)
        if kept is not None:
            _kept.move_to_end(key)
            return kept.copy()
    frame = read()
    with _lock:
        _kept[key] = frame.copy()
        while len(_kept) > MAX_KEPT:
            _kept.popitem(last=False)
    return frame


def forget() -> None:
    """Drop every kept frame (tests; a process that is done with the reports)."""
    with _lock:
        _kept.clear()
