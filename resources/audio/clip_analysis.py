"""The per-clip analyses of cascaded SpeechEQ targets, computed once per clip and kept on disk for every target,
process and rerun (docs/speecheq-cascade.md#per-clip-analyses-computed-once).

A cascade reads, for every clip, a transcript (faster-whisper), voice measures (pitch, energy, rate) and/or an
emotion model's outputs. None of them depends on the target, so they are stored content-addressed like the clips
themselves, under `<data dir>/cache/clip_analysis/`:

    <analysis name>-<identity digest>/analysis.json        what decides the results (written once, for people)
    <analysis name>-<identity digest>/<sha[:2]>/<sha>.json one clip's result; <sha> is the sha256 of the clip's bytes

The identity of an analysis (`ClipAnalysis.identity`) holds everything besides the clip that decides its result:
its settings (ASR language and decoding, the model folder's identity), the versions of the libraries that compute
it and a version of the project's own analysis code, which that code bumps when it changes a result. A changed
setting or library is a new folder; the old one is never read again and can be deleted.

How the files are written and shared:
- A result file is written to a temporary name in its folder and renamed into place (atomic on POSIX and NFS), so
  a reader sees a whole file or none. A file that does not parse, or names another clip or analysis, is treated as
  missing and written again.
- A clip is computed once per store and key: threads asking for the same clip wait for the one computing it.
  Across processes, the computing one holds an fcntl lock on `<sha>.lock` beside the result, so a process that
  asks for the same clip meanwhile waits and then reads the file. Where the file system refuses locks, both
  compute; the results are the same and the rename keeps the file whole.
- Only a finished result is stored. An analysis that fails on a clip (the clip is missing, cannot be decoded, is
  silent: `AudioFeatureError`) stores nothing and raises `ClipUnusableError`, naming the clip: that item becomes
  an error row and a rerun tries again. Any other failure (a model that cannot load, a bug) fails the run.
- Served results are also kept in memory for the life of the store (one run's resource), so the many rounds that
  show the same clip read its file once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, TypeVar

from eyt_dagster.core.errors import ClipUnusableError
from resources.audio.audio_features import AudioFeatureError, file_version

__all__ = [
    "CLIP_ANALYSIS_DIR",
    "ClipAnalyses",
    "ClipAnalysis",
    "ClipAnalysisStore",
    "ClipUnusableError",
    "folder_identity",
    "package_versions",
]

CLIP_ANALYSIS_DIR = "cache/clip_analysis"
MANIFEST = "analysis.json"
MEMO_SIZE = 16384  # results kept in memory per store: ~300 clips per full build, a few analyses each
SMALL_FILE_BYTES = 8 * 1024 * 1024  # model folder files up to this size are identified by their bytes
_HASH_CHUNK = 1 << 20

T = TypeVar("T")


def _same(value: Any) -> Any:
    return value


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class ClipAnalysis(Generic[T]):
    """One target-independent analysis of a clip. `identity` is everything besides the clip that decides the result
    (JSON values); `compute(path)` runs it and raises AudioFeatureError when the clip cannot be read or analysed;
    `to_json` / `from_json` turn a result into JSON and back exactly (floats round-trip through JSON unchanged)."""

    name: str
    identity: Mapping[str, Any]
    compute: Callable[[str], T]
    to_json: Callable[[T], Any] = _same
    from_json: Callable[[Any], T] = _same
    folder: str = field(init=False)

    def __post_init__(self) -> None:
        if not self.name.replace("_", "").isalnum():
            raise ValueError(f"clip analysis name must be letters, digits and '_', got {self.name!r}")
        digest = hashlib.sha256(canonical({"name": self.name, **self.identity}).encode()).hexdigest()
        object.__setattr__(self, "folder", f"{self.name}-{digest[:16]}")


def package_versions(*names: str) -> dict[str, str]:
    """The installed version of each distribution ('none' when it is not installed), for an analysis identity."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "none"
    return out


def folder_identity(folder: str | Path) -> str:
    """A digest of a model folder's files: each file's path inside the folder and size, with its bytes when it is
    small (configs, vocabularies, tokenizers: up to SMALL_FILE_BYTES) and its modification time when it is large
    (weights: hashing a gigabyte on every start would cost seconds). Hidden entries (`.git`, `.cache`) are left
    out. The folder's own path is not part of it: a copy elsewhere with the same files shares its results.
    FileNotFoundError when the folder does not exist."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such folder")
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        stat = path.stat()
        digest.update(f"{relative.as_posix()}\0{stat.st_size}\0".encode())
        if stat.st_size <= SMALL_FILE_BYTES:
            digest.update(path.read_bytes())
        else:
            digest.update(f"mtime:{stat.st_mtime_ns}".encode())
        digest.update(b"\0")
    return digest.hexdigest()


class _Tally:
    """Which (analysis, clip) keys one user of the store has met, and whether it computed each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], bool] = {}

    def record(self, key: tuple[str, str], computed: bool) -> None:
        with self._lock:
            self._seen.setdefault(key, computed)

    def counts(self) -> dict[str, dict[str, int]]:
        with self._lock:
            out: dict[str, dict[str, int]] = {}
            for (folder, _sha), computed in sorted(self._seen.items()):
                entry = out.setdefault(folder, {"computed": 0, "reused": 0})
                entry["computed" if computed else "reused"] += 1
            return out


class ClipAnalysisStore:
    """The clip analyses under one data directory, shared by every user in this process through its memory and
    with other processes through its files (see the module docstring)."""

    def __init__(self, data_dir: str | Path) -> None:
        self.root = Path(data_dir) / CLIP_ANALYSIS_DIR
        self._guard = threading.Lock()
        self._memo: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._hashes: OrderedDict[tuple[str, int, int], str] = OrderedDict()
        self._key_locks: dict[tuple[str, str], threading.Lock] = {}
        self._manifests: set[str] = set()

    def __repr__(self) -> str:
        return f"ClipAnalysisStore({str(self.root)!r})"

    def session(self) -> ClipAnalyses:
        """A view of the store that counts what its user computed and reused (one per target)."""
        return ClipAnalyses(self)

    def result_path(self, analysis: ClipAnalysis[Any], sha: str) -> Path:
        return self.root / analysis.folder / sha[:2] / f"{sha}.json"

    def clip_sha256(self, path: str | Path) -> str:
        """The sha256 of the clip's bytes (kept per path, modification time and size); ClipUnusableError naming
        the clip when it cannot be read."""
        try:
            version = file_version(path)
        except FileNotFoundError:
            raise ClipUnusableError(f"{path}: no such audio file") from None
        except OSError as exc:
            raise ClipUnusableError(f"{path}: cannot read the clip ({exc.strerror or exc})") from None
        with self._guard:
            known = self._hashes.get(version)
        if known is not None:
            return known
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as handle:
                for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
                    digest.update(chunk)
        except OSError as exc:
            raise ClipUnusableError(f"{path}: cannot read the clip ({exc.strerror or exc})") from None
        sha = digest.hexdigest()
        with self._guard:
            self._hashes[version] = sha
            _trim(self._hashes)
        return sha

    def get(self, analysis: ClipAnalysis[T], path: str | Path, tally: _Tally | None = None) -> T:
        """The analysis of the clip at `path`: from memory, from its file, or computed now and stored."""
        sha = self.clip_sha256(path)
        key = (analysis.folder, sha)
        with self._guard:
            if key in self._memo:
                self._memo.move_to_end(key)
                value = self._memo[key]
                if tally is not None:
                    tally.record(key, computed=False)
                return analysis.from_json(value)
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:  # one thread computes a key; the others wait here and then find it in memory
            with self._guard:
                value = self._memo.get(key)
            computed = False
            if value is None:
                target = self.result_path(analysis, sha)
                value = self._read(target, analysis, sha)
                if value is None:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with _file_lock(target.with_suffix(".lock")):
                        value = self._read(target, analysis, sha)  # another process may have just written it
                        if value is None:
                            value = self._compute(analysis, path)
                            self._write(target, analysis, sha, value)
                            computed = True
                with self._guard:
                    self._memo[key] = value
                    _trim(self._memo)
            if tally is not None:
                tally.record(key, computed=computed)
        with self._guard:
            self._key_locks.pop(key, None)
        return analysis.from_json(value)

    def _compute(self, analysis: ClipAnalysis[Any], path: str | Path) -> Any:
        try:
            return analysis.to_json(analysis.compute(str(path)))
        except AudioFeatureError as exc:  # the clip's own fault: that item fails, nothing is stored
            message = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
            raise ClipUnusableError(f"{analysis.name.replace('_', ' ')}: {message}") from exc

    @staticmethod
    def _read(target: Path, analysis: ClipAnalysis[Any], sha: str) -> Any:
        """The stored result, or None when the file is missing or is not a result of this clip and analysis."""
        try:
            record = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if (
            not isinstance(record, dict)
            or record.get("clip_sha256") != sha
            or record.get("analysis") != analysis.folder
        ):
            return None
        return record.get("result")

    def _write(self, target: Path, analysis: ClipAnalysis[Any], sha: str, value: Any) -> None:
        self._write_manifest(analysis)
        record = {"analysis": analysis.folder, "clip_sha256": sha, "result": value}
        _atomic_write(target, json.dumps(record, ensure_ascii=False))

    def _write_manifest(self, analysis: ClipAnalysis[Any]) -> None:
        if analysis.folder in self._manifests:
            return
        path = self.root / analysis.folder / MANIFEST
        if not path.is_file():
            _atomic_write(path, json.dumps({"name": analysis.name, "identity": analysis.identity}, indent=2) + "\n")
        self._manifests.add(analysis.folder)


class ClipAnalyses:
    """What one target reads through the store: `get(analysis, path)`, and `counts()` of the clip analyses it
    computed itself and the ones it reused (computed before, by it in this step or by anyone, in any process)."""

    def __init__(self, store: ClipAnalysisStore) -> None:
        self.store = store
        self._tally = _Tally()

    def get(self, analysis: ClipAnalysis[T], path: str | Path) -> T:
        return self.store.get(analysis, path, self._tally)

    def counts(self) -> dict[str, dict[str, int]]:
        """Per analysis folder: {'computed': n, 'reused': m}, each clip counted once."""
        return self._tally.counts()


def _trim(memo: OrderedDict[Any, Any]) -> None:
    while len(memo) > MEMO_SIZE:
        memo.popitem(last=False)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive fcntl lock on `path` for the block; none where the file system refuses locks."""
    try:
        handle = open(path, "a+")
    except OSError:
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            yield
            return
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
