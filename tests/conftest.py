"""Shared fixtures: a temporary data directory, slate files, and in-process materialisation helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from eyt_dagster.config import default_slate_path  # noqa: E402


def write_slate(directory: Path, **overrides) -> Path:
    """The default slate with overrides, written to directory/slate.yaml (small sizes for tests)."""
    slate = yaml.safe_load(default_slate_path().read_text())
    slate.update({"pool_size": 24, "dialogues_per_pool": 4, "t_max": 6, "bootstrap_resamples": 200,
                  "cross_judge_dialogues": 6})
    if "targets" in overrides:  # the default reasoning pair names default targets
        slate["reasoning_pairs"] = []
    slate.update(overrides)
    path = directory / "slate.yaml"
    path.write_text(yaml.safe_dump(slate, sort_keys=False))
    return path


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    directory = tmp_path / "data"
    directory.mkdir()
    monkeypatch.setenv("EYT_DATA_DIR", str(directory))
    return directory


@pytest.fixture
def slate_file(tmp_path, monkeypatch) -> Path:
    path = write_slate(tmp_path)
    monkeypatch.setenv("EYT_SLATE", str(path))
    return path


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    """The whole graph materialised once in process: two targets x two pools, two judges, the reports.
    Yields a read-only DuckDB connection and the Dagster instance."""
    import duckdb

    from pipeline import materialize_all

    directory = tmp_path_factory.mktemp("pipeline")
    slate = yaml.safe_load(default_slate_path().read_text())
    targets = [t for t in slate["targets"] if t["id"] in ("reflective-baseline", "terse-baseline")]
    path = write_slate(directory, targets=targets)
    data = directory / "data"
    data.mkdir()
    instance = materialize_all(path, data)
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    yield con, instance
    con.close()
