"""File paths stored in the warehouse are relative to the data directory, so the directory can be moved, copied
or shared; code that opens such a file resolves it against the current data directory (docs/storage.md).
A path outside the data directory (a released SpeechEQ folder elsewhere, say) is stored as given."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd


def is_path_column(name: str) -> bool:
    """The columns that hold clip paths: `path` (speech.tts_clips) and `<clip>_path` (speech.eq_items)."""
    return name == "path" or name.endswith("_path")


def relative_to_data(path: str | os.PathLike[str] | None, data_dir: str | os.PathLike[str]) -> str | None:
    """`path` relative to the data directory (POSIX separators) when it lies inside it, else unchanged."""
    if path is None or (isinstance(path, float) and pd.isna(path)):
        return None
    try:
        return Path(path).resolve().relative_to(Path(data_dir).resolve()).as_posix()
    except ValueError:
        return str(path)


def resolve_data_path(path: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> str:
    """A stored path as an absolute one: a relative path is joined onto the (current) data directory."""
    return str(path) if Path(path).is_absolute() else str(Path(data_dir) / path)


def relative_path_columns(frame: pd.DataFrame, data_dir: str | os.PathLike[str]) -> pd.DataFrame:
    out = frame.copy()
    for name in [c for c in out.columns if is_path_column(c)]:
        out[name] = [relative_to_data(p, data_dir) for p in out[name]]
    return out


def resolve_path_columns(frame: pd.DataFrame, data_dir: str | os.PathLike[str]) -> pd.DataFrame:
    out = frame.copy()
    for name in [c for c in out.columns if is_path_column(c)]:
        out[name] = [None if p is None or pd.isna(p) else resolve_data_path(p, data_dir) for p in out[name]]
    return out
