"""Reading and writing SpeechEQ data on disk in the released layout (docs/method.md#the-released-layout).

`import_released` walks `<root>/<subscale_slug>/<dataset_id>/`, checks each folder completely (metadata parses
and maps, all eight clips exist as .mp3/.wav inside the folder, the slug folder agrees with eq_scale) and
reports a bad folder instead of raising. `write_released` exports items in the same layout, one folder at a
time through a hidden temporary folder, so a folder is either absent or complete. The metadata mapping itself
is `eyt_dagster.speech_eq.release_format`.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from eyt_dagster.speech_eq.item_types import EqItem
from eyt_dagster.speech_eq.release_format import (
    AUDIO_EXTENSIONS,
    LayoutError,
    audio_entries,
    clip_extension,
    item_to_metadata,
    metadata_to_item,
)
from eyt_dagster.speech_eq.vocabulary import SUBSCALES

METADATA_FILE = "metadata.json"


@dataclass
class ImportReport:
    """Accepted items (clip paths absolute) and the skipped folders with the reason."""

    items: list[EqItem] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _resolve_clip(folder: Path, number: str, entry: dict[str, Any]) -> Path:
    """The clip file of one audio_files entry; it must lie inside the item folder (no '..', no absolute path)."""
    where = f"{folder.name}: audio_files {number}.audio_path"
    base, raw = folder.resolve(), entry.get("audio_path")
    if not raw:  # no audio_path: the conventional file name
        found = [base / "audio" / f"{number}{ext}" for ext in AUDIO_EXTENSIONS]
        path = next((p for p in found if p.is_file()), found[0])
    else:
        rel = PurePosixPath(raw.replace("\\", "/"))
        if rel.is_absolute() or PureWindowsPath(raw).drive or ".." in rel.parts:
            raise LayoutError(f"{where}: '{raw}' must be a path inside the item folder (no '..', not absolute)")
        path = base.joinpath(*rel.parts)
        parts = rel.parts  # a path relative to the data root, '<slug>/<id>/audio/04.mp3', is read from the folder
        for i in range(len(parts) - 1):
            if not path.exists() and parts[i : i + 2] == (folder.parent.name, folder.name):
                path = base.joinpath(*parts[i + 2 :])
    resolved = path.resolve()
    if not resolved.is_relative_to(base):
        raise LayoutError(f"{where}: '{raw}' resolves outside the item folder")
    if resolved.suffix.lower() not in AUDIO_EXTENSIONS:
        raise LayoutError(f"{where}: '{raw or path.name}' is not an .mp3 or .wav file")
    if not resolved.is_file() or resolved.stat().st_size == 0:
        raise LayoutError(f"{where}: clip file '{raw or path.relative_to(base)}' is missing or empty")
    return resolved


def read_item(folder: Path) -> EqItem:
    """One item folder, fully validated; LayoutError naming the folder and the field otherwise."""
    meta_path = folder / METADATA_FILE
    if not meta_path.is_file():
        raise LayoutError(f"{folder.name}: {METADATA_FILE}: missing")
    try:
        metadata = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LayoutError(f"{folder.name}: {METADATA_FILE}: does not parse ({exc})") from exc
    if not isinstance(metadata, dict):
        raise LayoutError(f"{folder.name}: {METADATA_FILE}: not a JSON object")
    clip_paths = {n: str(_resolve_clip(folder, n, e)) for n, e in audio_entries(metadata, folder.name).items()}
    item = metadata_to_item(metadata, folder.name, str(folder.resolve()), clip_paths)
    if item.subscale != folder.parent.name:
        raise LayoutError(
            f"{folder.name}: eq_scale: '{metadata['eq_scale']}' is subscale {item.subscale}, "
            f"but the folder is under '{folder.parent.name}'"
        )
    return item


def _subdirs(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))


def import_released(root: Path) -> ImportReport:
    """Every valid item under root; a bad folder goes to `skipped` with its reason and nothing of it is kept."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory of SpeechEQ data (<root>/<subscale_slug>/<dataset_id>/)")
    report = ImportReport()
    seen: dict[str, str] = {}  # dataset_id -> the folder it came from
    for slug_dir in _subdirs(root):
        if slug_dir.name not in SUBSCALES:
            report.skipped.append((str(slug_dir), f"'{slug_dir.name}' is not an EQ-i 2.0 subscale slug"))
            continue
        for folder in _subdirs(slug_dir):
            try:
                item = read_item(folder)
                if item.dataset_id in seen:
                    raise LayoutError(f"{folder.name}: dataset_id: already imported from {seen[item.dataset_id]}")
            except (ValueError, TypeError, OSError) as exc:
                report.skipped.append((str(folder), str(exc)))
                continue
            seen[item.dataset_id] = str(folder)
            report.items.append(item)
    return report


def _holds(target: Path, metadata: dict[str, Any], sources: dict[str, Path]) -> bool:
    """Whether target already holds exactly this metadata and these audio bytes."""
    try:
        if json.loads((target / METADATA_FILE).read_text(encoding="utf-8")) != metadata:
            return False
        return all(
            filecmp.cmp(src, target / "audio" / f"{n}{src.suffix.lower()}", shallow=False) for n, src in sources.items()
        )
    except (OSError, ValueError):
        return False


def _write_folder(target: Path, metadata: dict[str, Any], sources: dict[str, Path]) -> None:
    temp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    try:
        (temp / "audio").mkdir(parents=True)
        for number, src in sources.items():
            shutil.copyfile(src, temp / "audio" / f"{number}{src.suffix.lower()}")
        (temp / METADATA_FILE).write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", "utf-8")
        if target.is_dir():
            target.rmdir()  # only ever an empty folder here
        os.replace(temp, target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def write_released(items: Iterable[EqItem], root: Path) -> list[Path]:
    """Write items as `<root>/<slug>/<dataset_id>/` folders; returns the item folders.

    Everything is checked before anything is written: a missing source clip, or a folder (under any slug) that
    holds a different item, raises. An item already written identically is left as it is."""
    root = Path(root)
    plans: dict[str, tuple[Path, dict[str, Any], dict[str, Path], bool]] = {}
    for item in items:
        metadata = json.loads(json.dumps(item_to_metadata(item)))  # the form it takes once read back
        sources = {c.file_number: Path(c.path) for c in sorted(item.clips, key=lambda c: c.file_number)}
        for clip in item.clips:
            clip_extension(clip)
        target = root / item.subscale / item.dataset_id
        if item.dataset_id in plans:
            if plans[item.dataset_id][1] != metadata:
                raise ValueError(f"dataset_id {item.dataset_id}: two different items in one export")
            continue
        missing = [str(p) for p in sources.values() if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"item {item.dataset_id}: clip files missing: {missing}")
        others = [p for p in root.glob(f"*/{item.dataset_id}") if p != target] if root.is_dir() else []
        if others:
            raise FileExistsError(f"{others[0]}: dataset_id {item.dataset_id} already exists under another subscale")
        done = target.exists() and _holds(target, metadata, sources)
        if target.exists() and not done and (not target.is_dir() or any(target.iterdir())):
            raise FileExistsError(
                f"{target}: holds a different item (metadata or audio differ); remove it or export to another root"
            )
        plans[item.dataset_id] = (target, metadata, sources, done)
    for target, metadata, sources, done in plans.values():
        if not done:
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_folder(target, metadata, sources)
    return [plan[0] for plan in plans.values()]
