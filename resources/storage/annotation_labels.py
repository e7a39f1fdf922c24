"""The human labels kept in the data directory (docs/annotation.md): the manifest copy of each exported sheet,
`<data_dir>/annotations/sheets/<sheet>.json`, and the label store, `<data_dir>/annotations/labels/`, one CSV per
import (LABEL_COLUMNS of eyt_dagster/eyt_bench/annotation_import.py), named so that the names sort in the order
written. Files are written to a temporary name and moved into place, so a reader sees a whole file or none."""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from pathlib import Path

import pandas as pd

from eyt_dagster.eyt_bench.annotation_import import LABEL_COLUMNS, effective, empty_labels
from eyt_dagster.eyt_bench.annotation_sheet import LABELS_DIR, MANIFESTS_DIR, SheetManifest, parse_manifest

LABEL_SUFFIX = ".csv"


def sheets_dir(data_dir: Path | str) -> Path:
    return Path(data_dir) / MANIFESTS_DIR


def labels_dir(data_dir: Path | str) -> Path:
    return Path(data_dir) / LABELS_DIR


def read_manifest(data_dir: Path | str, sheet: str) -> SheetManifest | None:
    """The manifest copy of `sheet`, None when this data directory has none. A copy that does not parse raises
    ValueError naming the file."""
    if not sheet or "/" in sheet or "\\" in sheet or sheet.startswith("."):
        return None
    path = sheets_dir(data_dir) / f"{sheet}.json"
    if not path.is_file():
        return None
    try:
        return parse_manifest(path.read_text())
    except ValueError as exc:
        raise ValueError(f"{path}: not a sheet manifest: {exc}") from exc


def label_files(data_dir: Path | str) -> list[Path]:
    """The store's files in the order they were written (temporary files left out)."""
    folder = labels_dir(data_dir)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"*{LABEL_SUFFIX}") if not p.name.startswith("."))


def read_label_file(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype={c: str for c in LABEL_COLUMNS if c not in ("turn", "score")})
    if frame.empty:
        return empty_labels()
    return frame[list(LABEL_COLUMNS)].astype({"turn": "int64", "score": "float64"})


def read_store(data_dir: Path | str) -> pd.DataFrame:
    """Every label of the store (annotation_import.effective: a label two files give counts as the later one)."""
    return effective([read_label_file(p) for p in label_files(data_dir)])


def store_by_file(data_dir: Path | str) -> dict[Path, pd.DataFrame]:
    return {p: read_label_file(p) for p in label_files(data_dir)}


def _write(path: Path, frame: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        frame[list(LABEL_COLUMNS)].to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def add_labels(data_dir: Path | str, labels: pd.DataFrame, sheet: str) -> Path:
    """Write one import's labels as a new file of the store: `<UTC time>-<sheet>-<hash>.csv`."""
    text = labels[list(LABEL_COLUMNS)].to_csv(index=False)
    ns = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(ns // 1_000_000_000)) + f"{ns % 1_000_000_000:09d}Z"
    path = labels_dir(data_dir) / f"{stamp}-{sheet}-{hashlib.sha256(text.encode()).hexdigest()[:8]}{LABEL_SUFFIX}"
    _write(path, labels)
    return path


def rewrite(path: Path, frame: pd.DataFrame) -> None:
    """Replace a store file with `frame` (what --replace keeps of it); a file left with no label is removed."""
    if frame.empty:
        path.unlink(missing_ok=True)
    else:
        _write(path, frame)
