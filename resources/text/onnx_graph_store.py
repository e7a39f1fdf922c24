"""The sentence encoder's exported ONNX graph kept on disk, so that later processes encode without torch.

Why: exporting the graph needs the model loaded by sentence-transformers (importing torch and transformers, about
2 s of CPU) and the export itself (about 0.5 s), in every worker process that encodes a text. Stored once, the graph
and the tokenizer that goes with it (resources/text/onnx_tokenizer.py) load in ONNX Runtime and `tokenizers` in a
few tenths of a second (docs/throughput.md#what-to-cut-and-about-how-much).

Where: `$EYT_ONNX_CACHE_DIR`, else `$XDG_CACHE_HOME/eyt_dagster/onnx` (`~/.cache/...`), beside the project's numba
cache: like it, the file belongs to an install (its libraries and the model's files), not to a data directory.
`EYT_ONNX_CACHE_DIR=off` keeps nothing (each process exports the graph again, as before).

Key: the model's name, the sha256 of its defining files (resources/text/model_files.py) and the versions of
torch, transformers, sentence-transformers, onnx, onnxruntime and tokenizers, with FORMAT (bumped when the export
or the file changes). A change of any of them is another file: the old one is never read again (delete the folder
to reclaim it; the next process that encodes writes the graph again).

The file: a first line naming the format, a second with the sha256 of the rest, a third with the manifest (JSON:
the key, the tokenizer, the graph's size) and the graph's bytes. It is written under a temporary name in the same
folder and renamed into place (`os.replace`), so a reader sees a whole file or none, two processes writing at once
each leave a whole file (the later stays), and a process killed while writing leaves only a temporary file (removed
by a later write after an hour). A file that is not whole or not this key's (a bad checksum, a manifest of another
key, or one ONNX Runtime cannot load) is `DamagedGraph`: the caller builds the graph again and replaces it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from eyt_dagster.core import env_settings
from resources.text.model_files import files_digest, locate_model

FORMAT = 1  # bump when the export (onnx_encoder._export) or this file's layout changes
MAGIC = b"eyt sentence encoder onnx graph\n"
LIBRARIES = ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime", "tokenizers")
STALE_TEMPORARY_S = 3600.0


class DamagedGraph(ValueError):
    """A stored graph file that is truncated, altered or another key's."""


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


@dataclass(frozen=True)
class GraphSlot:
    """Where the graph of one model, as this install would export it, is kept, and the key it is kept under."""

    path: Path
    key: dict[str, str]


def key_parts(model_name: str, folder: Path) -> dict[str, str]:
    """What a stored graph is specific to: the model (its name and files) and the libraries that export and run it."""
    return {
        "format": str(FORMAT),
        "model": model_name,
        "files": files_digest(folder),
        **{library: _version(library) for library in LIBRARIES},
    }


def slot_for(model_name: str) -> GraphSlot | None:
    """The slot of the model's graph, or None when nothing is kept (EYT_ONNX_CACHE_DIR=off) or the model's files
    cannot be found without loading it."""
    root = env_settings.ONNX_CACHE_DIR.get()
    if root is None:
        return None
    folder = locate_model(model_name)
    if folder is None:
        return None
    key = key_parts(model_name, folder)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model_name).name or "model")[:60]
    return GraphSlot(root / f"{readable}-{digest}.graph", key)


@dataclass(frozen=True)
class StoredGraph:
    """A graph read back whole: its bytes and what was stored with it (beside the key)."""

    graph: bytes
    extra: dict[str, Any]


def read(slot: GraphSlot) -> StoredGraph | None:
    """The stored graph, or None when there is none; DamagedGraph when the file is not a whole graph of this key."""
    try:
        handle = open(slot.path, "rb")
    except FileNotFoundError:
        return None
    with handle:
        magic, checksum, manifest_line = handle.readline(), handle.readline(), handle.readline()
        graph = handle.read()
    if magic != MAGIC:
        raise DamagedGraph(f"{slot.path} does not start as a stored graph")
    digest = hashlib.sha256(manifest_line)
    digest.update(graph)
    if digest.hexdigest().encode() + b"\n" != checksum:
        raise DamagedGraph(f"{slot.path} is truncated or altered (its checksum does not match)")
    try:
        manifest = json.loads(manifest_line)
        key, size, extra = manifest["key"], manifest["graph_bytes"], dict(manifest["extra"])
    except (ValueError, KeyError, TypeError) as exc:
        raise DamagedGraph(f"{slot.path} has no readable manifest ({exc})") from None
    if key != slot.key or size != len(graph):
        raise DamagedGraph(f"{slot.path} holds another model's or library versions' graph")
    return StoredGraph(graph, extra)


def write(slot: GraphSlot, graph: bytes, extra: dict[str, Any]) -> None:
    """Store the graph and `extra` (JSON) under the slot's key, whole or not at all."""
    slot.path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(slot.path)
    manifest = json.dumps({"key": slot.key, "graph_bytes": len(graph), "extra": extra}, sort_keys=True)
    body_head = manifest.encode() + b"\n"
    checksum = hashlib.sha256(body_head)
    checksum.update(graph)
    temporary = slot.path.with_name(f".{slot.path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(MAGIC + checksum.hexdigest().encode() + b"\n")
            handle.write(body_head)
            handle.write(graph)
        os.replace(temporary, slot.path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _remove_stale_temporaries(path: Path) -> None:
    """Temporary files of this slot left by a process killed while writing (older than an hour)."""
    cutoff = time.time() - STALE_TEMPORARY_S
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            if stale.stat().st_mtime < cutoff:
                stale.unlink()
        except OSError:
            pass  # another process removed or renamed it
