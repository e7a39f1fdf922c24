"""Read a persona pool from the shipped fixture, a local copy, or the Hugging Face hub (docs/method.md#persona-pools).

Every source is read as the published layout:
- nemotron_usa: `data/train-*.parquet` (all shards) under the path, or one parquet file;
- personamem_v2: `benchmark/text/{train,val,benchmark}.csv` (those that exist) under the path, or one CSV;
- cped: `data/CPED/{train,valid,test}_split.csv` (those that exist) under the path, or one CSV. CPED is published
  on GitHub, not on the Hugging Face hub, so it has no hub source: clone it and use `source: local`.
The hub source downloads only those files (revision pinned from the slate) and then reads them as local.
Errors name the file and say what to do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from eyt_dagster.eyt_bench.personas import (
    BIG_FIVE_COLUMNS,
    NEMOTRON_COLUMNS,
    NEMOTRON_RECORD_COLUMNS,
    NEMOTRON_SCHEMA,
    PERSONAMEM_COLUMNS,
    PERSONAMEM_SCHEMA,
    nemotron_to_records,
    personamem_to_records,
    require_columns,
)
from eyt_dagster.eyt_bench.personas_cped import (
    CPED_COLUMNS,
    CPED_RECORD_COLUMNS,
    CPED_SCHEMA,
    CPED_SPLITS,
    cped_to_records,
)
from eyt_dagster.eyt_bench.settings import PoolSource
from eyt_dagster.eyt_bench.taxonomy import CPED_POOL, NEMOTRON_POOL, PERSONAMEM_POOL
from eyt_dagster.eyt_bench.types import PersonaRecord

PERSONAMEM_SPLITS = ("train", "val", "benchmark")


class PersonaSourceError(RuntimeError):
    """A persona source cannot be read (absent, unreadable, or the hub unreachable)."""


@dataclass(frozen=True)
class PoolLayout:
    """How one pool is published: its hub repository, the files to fetch, and how to read them."""

    repo_id: str | None  # None: not on the hub (the pool is read from a fixture or a local copy only)
    allow_patterns: tuple[str, ...]
    find_files: Callable[[Path], list[Path]]
    read_file: Callable[[Path], pd.DataFrame]
    to_records: Callable[[pd.DataFrame, str], list[PersonaRecord]]


def _nemotron_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    shards = sorted((path / "data").glob("train-*.parquet")) or sorted(path.glob("train-*.parquet"))
    if not shards:
        raise PersonaSourceError(
            f"no Nemotron-Personas-USA shards under {path}: expected {path / 'data' / 'train-*.parquet'} "
            "(the published layout) or a path to one parquet file"
        )
    return shards


def _read_nemotron(file: Path) -> pd.DataFrame:
    """Check the file's schema against the full release, then read only the columns records use."""
    try:
        names = pq.read_schema(file).names
    except (OSError, pa.ArrowException) as exc:
        raise PersonaSourceError(f"persona file {file} could not be read as parquet: {exc}") from exc
    require_columns(names, NEMOTRON_COLUMNS, NEMOTRON_SCHEMA, str(file))
    columns = [*NEMOTRON_RECORD_COLUMNS, *(c for c in BIG_FIVE_COLUMNS if c in names)]
    try:
        return pq.read_table(file, columns=columns).to_pandas()
    except (OSError, pa.ArrowException) as exc:
        raise PersonaSourceError(f"persona file {file} could not be read as parquet: {exc}") from exc


def _personamem_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = [path / "benchmark" / "text" / f"{split}.csv" for split in PERSONAMEM_SPLITS]
    present = [f for f in files if f.is_file()]
    if not present:
        raise PersonaSourceError(
            f"no PersonaMem-v2 CSV under {path}: expected one of {[str(f) for f in files]} "
            "(the published layout) or a path to one CSV file"
        )
    return present


def _read_personamem(file: Path) -> pd.DataFrame:
    """Check the header, then read only the columns records use (the real files are large)."""
    try:
        header = pd.read_csv(file, nrows=0).columns
        require_columns(header, PERSONAMEM_COLUMNS, PERSONAMEM_SCHEMA, str(file))
        return pd.read_csv(file, usecols=list(PERSONAMEM_COLUMNS))
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise PersonaSourceError(f"persona file {file} could not be read as CSV: {exc}") from exc


def _cped_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = [path / "data" / "CPED" / f"{split}_split.csv" for split in CPED_SPLITS]
    present = [f for f in files if f.is_file()]
    if not present:
        raise PersonaSourceError(
            f"no CPED split under {path}: expected one of {[str(f) for f in files]} "
            "(the published layout: a clone of github.com/scutcyr/CPED) or a path to one CSV file"
        )
    return present


def _read_cped(file: Path) -> pd.DataFrame:
    """Check the header against the release, then read the columns records use, as text (ids keep their zeros)."""
    try:
        header = pd.read_csv(file, nrows=0, encoding="utf-8").columns
        require_columns(header, CPED_COLUMNS, CPED_SCHEMA, str(file))
        return pd.read_csv(file, usecols=list(CPED_RECORD_COLUMNS), dtype=str, encoding="utf-8", keep_default_na=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise PersonaSourceError(f"persona file {file} could not be read as UTF-8 CSV: {exc}") from exc


LAYOUTS: dict[str, PoolLayout] = {
    NEMOTRON_POOL: PoolLayout(
        "nvidia/Nemotron-Personas-USA", ("data/train-*.parquet",), _nemotron_files, _read_nemotron, nemotron_to_records
    ),
    PERSONAMEM_POOL: PoolLayout(
        "bowen-upenn/PersonaMem-v2",
        tuple(f"benchmark/text/{s}.csv" for s in PERSONAMEM_SPLITS),
        _personamem_files,
        _read_personamem,
        personamem_to_records,
    ),
    CPED_POOL: PoolLayout(None, (), _cped_files, _read_cped, cped_to_records),
}


def fixture_path(pool: str) -> Path:
    """The shipped fixture of a pool (package data: the project's own invented records)."""
    return Path(str(importlib_resources.files("eyt_dagster") / "fixtures" / pool))


def _snapshot_download(**kwargs: Any) -> str:
    from huggingface_hub import snapshot_download

    return str(snapshot_download(**kwargs))


def download_from_hub(pool: str, revision: str | None) -> Path:
    """Fetch only the pool's published files from the hub; an unreachable hub says what to do instead."""
    layout = _layout(pool)
    if layout.repo_id is None:
        raise PersonaSourceError(
            f"pool '{pool}' is not published on the Hugging Face hub, so `source: hub` cannot read it: clone its "
            "repository (docs/languages.md#the-chinese-pool-cped) and set `source: local` with `path:` pointing at the "
            "clone (or `source: fixture` for offline runs)"
        )
    try:
        local = _snapshot_download(
            repo_id=layout.repo_id, repo_type="dataset", revision=revision, allow_patterns=list(layout.allow_patterns)
        )
    except Exception as exc:
        raise PersonaSourceError(
            f"pool '{pool}': the Hugging Face hub was not reachable for dataset {layout.repo_id} "
            f"(revision {revision or 'main'}): {type(exc).__name__}: {exc}. Download a copy in the published "
            f"layout and set `source: local` with `path:` pointing at it (or `source: fixture` for offline runs)"
        ) from exc
    return Path(local)


def _layout(pool: str) -> PoolLayout:
    if pool not in LAYOUTS:
        raise PersonaSourceError(f"unknown pool '{pool}'; known pools are {list(LAYOUTS)}")
    return LAYOUTS[pool]


def load_pool(pool: str, source: PoolSource) -> tuple[pd.DataFrame, str]:
    """Read a pool's rows from its source; returns the rows and a short description of where from."""
    layout = _layout(pool)
    if source.source == "fixture":
        root, description = fixture_path(pool), f"fixture:{pool}"
    elif source.source == "local":
        root, description = Path(str(source.path)).expanduser(), f"local:{source.path}"
        if not root.exists():
            raise PersonaSourceError(f"pool '{pool}': local path {root} does not exist (check `path:` in the slate)")
    else:
        root = download_from_hub(pool, source.revision)
        description = f"hub:{layout.repo_id}@{source.revision or 'main'}"
    frames = [layout.read_file(file) for file in layout.find_files(root)]
    return pd.concat(frames, ignore_index=True), description


def load_pool_records(pool: str, source: PoolSource) -> tuple[list[PersonaRecord], str]:
    """`load_pool`, then the pool's schema mapping to PersonaRecords."""
    rows, description = load_pool(pool, source)
    return _layout(pool).to_records(rows, description), description
