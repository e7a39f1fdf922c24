"""librosa's numba-compiled functions, compiled once per install into a cache folder the project owns.

Why: librosa decorates its kernels with `cache=True`, so by default numba writes their machine code next to
librosa's sources in site-packages, from whichever process compiles first. A `guvectorize` function is cached as
two files, the kernel (`pitch._pi_wrapper-430.py311.1.nbc`) and the ufunc loop that calls it
(`guf-pitch._pi_wrapper-430.py311.1.nbc`), and the loop refers to the kernel by a symbol name that carries a
per-process counter (`_pi_wrapperB3v94...`: the 94th function this process compiled). When two processes compile on
an empty cache at the same time, as the two workers of `eyt run --parallel 2` do, one file of the pair can come
from each: seen on this project's first run, the float32 kernel was stored as `v94` and its loop asked for `v116`.
Every later process that loads the pair calls a null pointer and dies with SIGSEGV in `librosa.yin`, on every run
after the first, and so does a plain `import librosa` in the same virtualenv. (numba's tracker describes this race
of gufunc caching; the numba release this project installs does not fix it.)

What this module does instead, in every process of the project before librosa imports numba (`prepare()`):
- numba's cache folder (NUMBA_CACHE_DIR) is a folder of the project's, one per install and machine kind:
  `<root>/<key>`, the key a hash of the interpreter prefix, the Python, numba, llvmlite and librosa versions, the
  CPU's flags and WARM_VERSION. The root is `$EYT_NUMBA_CACHE_DIR`, else `$XDG_CACHE_HOME/eyt_dagster/numba`
  (`~/.cache/...`). librosa's own site-packages cache is never written, so it cannot be corrupted by our runs.
- The folder is filled once, by one process: the first process that needs it takes an exclusive lock
  (`<key>.lock`, fcntl), compiles in a fresh subprocess into `<key>.tmp-<pid>` by running every librosa path the
  project uses (`resources/audio/numba_warm.py`), and renames the finished folder into place. Processes that arrive meanwhile wait on the
  lock, then load. A folder therefore exists only complete; a killed fill leaves a temporary folder that the next
  fill removes.
- After the fill nothing compiles again (every kernel and loop the project calls is in the folder), so no two
  processes ever write the same cache files: tests/resources/audio/test_numba_cache.py checks that a full run leaves the
  folder's files untouched.

Cost: the fill takes 35-45 s of one core once per install (what an empty site-packages cache cost the first run
before); afterwards the first librosa call in a process loads the cache in ~3 s, as before.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from eyt_dagster.core import env_settings

__all__ = ["NumbaCacheError", "cache_folder", "prepare"]

ROOT_ENV = env_settings.NUMBA_CACHE_DIR.name
# Set in the subprocess that fills a folder: prepare() is then a no-op (its NUMBA_CACHE_DIR is the temporary folder).
FILLING_ENV = env_settings.NUMBA_CACHE_FILLING.name
# Bump when resources/audio/numba_warm.py runs new librosa paths, so every install fills a new folder with them.
WARM_VERSION = 1
FILL_TIMEOUT_S = 900.0
MANIFEST = "filled.json"
# What the filling subprocess runs (a module attribute so that a test can time the lock with a cheap fill).
WARM_CODE = "from resources.audio.numba_warm import warm; warm()"

_prepared: Path | None = None
_prepare_lock = threading.Lock()


class NumbaCacheError(RuntimeError):
    """The project's numba cache folder could not be filled; the message names the folder and the reason."""


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def _cpu_flags() -> str:
    """The CPU's feature flags (Linux), which decide the machine code numba emits; the machine name elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return platform.processor() or platform.machine()


def key_parts() -> dict[str, str]:
    """What a cache folder is specific to: this install, these compilers and librosa, this kind of CPU."""
    return {
        "prefix": os.path.realpath(sys.prefix),
        "python": platform.python_version(),
        "numba": _version("numba"),
        "llvmlite": _version("llvmlite"),
        "librosa": _version("librosa"),
        "machine": platform.machine(),
        "cpu_flags": hashlib.sha256(_cpu_flags().encode()).hexdigest()[:16],
        "warm_version": str(WARM_VERSION),
    }


def cache_root() -> Path:
    """EYT_NUMBA_CACHE_DIR, else $XDG_CACHE_HOME/eyt_dagster/numba (eyt_dagster/core/env_settings.py)."""
    return env_settings.NUMBA_CACHE_DIR.get()


def cache_folder() -> Path:
    """The folder numba caches librosa's functions in for this install (it may not be filled yet)."""
    parts = key_parts()
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]
    return cache_root() / f"numba-{parts['numba']}-py{parts['python']}-{digest}"


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fill(folder: Path) -> None:
    """Compile every librosa path the project uses into `folder`, in a fresh process, and move it into place whole."""
    for stale in folder.parent.glob(f"{folder.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)  # a fill that was killed: we hold the lock, nobody else writes it
    staging = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(staging), FILLING_ENV: "1"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", WARM_CODE],
            env=env,
            capture_output=True,
            text=True,
            timeout=FILL_TIMEOUT_S,
            cwd=str(Path(__file__).resolve().parents[2]),
        )
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise NumbaCacheError(
            f"compiling librosa's numba functions into {folder} took over {FILL_TIMEOUT_S:.0f} s"
        ) from exc
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise NumbaCacheError(
            f"compiling librosa's numba functions into {folder} failed (exit {done.returncode}); set {ROOT_ENV} to a "
            f"writable folder if this one is not:\n{done.stderr[-2000:]}"
        )
    staging.mkdir(parents=True, exist_ok=True)
    (staging / MANIFEST).write_text(json.dumps({**key_parts(), "pid": os.getpid()}, indent=2, sort_keys=True))
    os.rename(staging, folder)


def prepare() -> Path:
    """Point numba at this install's cache folder, filling it first if no process has yet. Call before anything
    imports librosa's submodules (they compile or load their kernels when imported); idempotent and cheap after the
    first call in a process. Returns the folder."""
    global _prepared
    if _prepared is not None:
        return _prepared
    if env_settings.NUMBA_CACHE_FILLING.get():
        return Path(os.environ["NUMBA_CACHE_DIR"])
    with _prepare_lock:
        if _prepared is None:
            folder = cache_folder()
            if not folder.is_dir():
                with _exclusive(folder.with_name(folder.name + ".lock")):
                    if not folder.is_dir():
                        _fill(folder)
            os.environ["NUMBA_CACHE_DIR"] = str(folder)
            if "numba" in sys.modules:  # imported by something else first: make it read the folder too
                from numba.core import config

                config.reload_config()  # type: ignore[no-untyped-call]  # numba ships no types
            _prepared = folder
    return _prepared
