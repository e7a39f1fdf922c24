"""Faults of the machine rather than of the models, each named in one line with the path and the fix: a data
directory that cannot be written (a read-only mount, no permission), a disk with too little room, a DAGSTER_HOME
that does not exist. The commands that write (`eyt run`, `eyt refresh`, `eyt remove-target`) check before they start;
an OSError of the same kinds raised later is turned into the same line by `eyt`'s entry point (exit status 2).
`eyt view` and `eyt report` only read, so a read-only data directory is fine for them."""

from __future__ import annotations

import errno
import shutil
import sqlite3
import tempfile
from pathlib import Path

from eyt_dagster.core.env_settings import DAGSTER_HOME

# Below this much free space on the data directory's disk a run is refused before it starts: a run writes call-cache
# rows, Parquet files and Dagster's event log, and a disk that fills up in the middle of a step fails it.
MIN_FREE_MB = 64

READ_ONLY_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class EnvironmentFault(Exception):
    """A fault of the machine, with the one line that names it and the fix."""


def check_writable(data: Path) -> None:
    """Raise EnvironmentFault unless `data` (made if missing) can be written and its disk has MIN_FREE_MB free."""
    try:
        data.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=data, prefix=".eyt-write-check-"):
            pass
    except OSError as exc:
        raise EnvironmentFault(describe_os_error(exc, data, where=data) or f"cannot write {data}: {exc}") from None
    free_mb = shutil.disk_usage(data).free / 2**20
    if free_mb < MIN_FREE_MB:
        raise EnvironmentFault(
            f"the disk of the data directory {data} has {free_mb:.0f} MB free (a run needs at least {MIN_FREE_MB} MB): "
            f"free some space there, or set EYT_DATA_DIR to a folder on another disk"
        )


def check_dagster_home(data: Path) -> None:
    """Raise EnvironmentFault when DAGSTER_HOME is set to a folder that does not exist, other than the data
    directory's own `dagster_home` (which `eyt` makes, as it does when DAGSTER_HOME is unset): a missing folder
    elsewhere is a typo or a volume not mounted, and an instance made there would be a new, empty one."""
    home = DAGSTER_HOME.raw()
    if home and not Path(home).is_dir() and Path(home).resolve() != (data / "dagster_home").resolve():
        raise EnvironmentFault(
            f"DAGSTER_HOME={home} does not exist: create it (mkdir -p {home}) or unset DAGSTER_HOME, and `eyt` keeps "
            f"the instance in $EYT_DATA_DIR/dagster_home"
        )


def describe_os_error(exc: BaseException, data: Path, where: Path | None = None) -> str | None:
    """The one line for an OSError (or a SQLite / DuckDB error wrapping one) of a read-only or full disk, or None for
    any other error. `where`: the path to name (default: the error's file, else the data directory)."""
    number = getattr(exc, "errno", None)
    text = str(exc)
    where = where or getattr(exc, "filename", None) or data
    if number in READ_ONLY_ERRNOS or _says(text, "read-only file system", "readonly database", "permission denied"):
        return (
            f"cannot write {where}: the data directory {data} is read-only for this user; give EYT_DATA_DIR a "
            f"writable folder (`eyt view` and `eyt report` read a read-only one)"
        )
    if number in FULL_ERRNOS or _says(text, "no space left on device", "disk is full", "database or disk is full"):
        return (
            f"cannot write {where}: the disk of the data directory {data} is full; free some space there, or set "
            f"EYT_DATA_DIR to a folder on another disk (finished work is kept: rerun afterwards)"
        )
    return None


def environment_fault(exc: BaseException, data: Path) -> str | None:
    """describe_os_error for the errors the entry point sees: OSError, sqlite3 errors, and any error whose cause
    chain holds one (a SQLAlchemy or DuckDB error wrapping the OSError or the SQLite message)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (OSError, sqlite3.Error)) or type(exc).__module__.split(".")[0] in ("sqlalchemy", "duckdb"):
            line = describe_os_error(exc, data)
            if line:
                return line
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        seen += 1
    return None


def _says(text: str, *phrases: str) -> bool:
    lowered = text.lower()
    return any(p in lowered for p in phrases)
