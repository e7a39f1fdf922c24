"""Shared fixtures: a temporary data directory, slate files, the localhost model server, the whole graph
materialised once; and the tier check (every test is exactly one of unit, materialisation, cli, browser)."""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from eyt_dagster.eyt_bench.dialogue_scoring import turn_dimension_scores
from eyt_dagster.slate import default_slate_path

from support.slates import write_slate

TIERS = ("unit", "materialisation", "cli", "browser")  # registered, with their meanings, in pyproject.toml


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test carries exactly one tier (`pytestmark = pytest.mark.<tier>` in its module, or a mark on the
    test where a module mixes tiers): collection fails, naming the tests, when one has none or two."""
    wrong = []
    for item in items:
        tiers = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
        if len(tiers) != 1:
            wrong.append(f"{item.nodeid}: {', '.join(sorted(tiers)) or 'no tier'}")
    if wrong:
        raise pytest.UsageError(
            f"each test needs exactly one tier mark ({', '.join(TIERS)}); these have none or two:\n" + "\n".join(wrong)
        )


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


@pytest.fixture
def localhost_server():
    """A factory for support/localhost_server.py's OpenAI-compatible server on 127.0.0.1:
    `server = localhost_server(handler, delay_s=..., max_in_flight=..., rate_limit=..., speech=..., port=...)`
    (the options of `serve`). Every server it started is stopped when the test ends. (Module-scoped fixtures,
    and tests that stop or restart a server midway, use `with serve(...)` directly.)"""
    from support.localhost_server import serve

    with ExitStack() as stack:
        yield lambda handler, **options: stack.enter_context(serve(handler, **options))


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    """The whole graph materialised once in process: two targets x two pools, two judges, the reports, and
    SpeechEQ on one subscale with the two chooser baselines. Yields a read-only DuckDB connection and the
    Dagster instance."""
    from support.annotation_flow import label_a_sample
    from support.pipeline import materialize_all, materialize_reports, materialize_speech, materialize_unified

    directory = tmp_path_factory.mktemp("pipeline")
    slate = yaml.safe_load(default_slate_path().read_text())
    targets = [
        t
        for t in slate["targets"]
        if t["id"] in ("reflective-baseline", "terse-baseline") or "speech_eq" in t.get("benchmarks", [])
    ]
    path = write_slate(directory, targets=targets)
    data = directory / "data"
    data.mkdir()
    instance = materialize_all(path, data)
    # Annotations for turns that exist in this warehouse (invented: judge score + a fixed offset), then
    # the reports again, so the human-alignment path runs on matching cells.
    write_annotations(data / "eyt.duckdb", directory / "annotations.csv")
    path = write_slate(
        directory, targets=targets, human_annotations=str(directory / "annotations.csv"), min_human_labels=3
    )
    # Then what a team does to correct the judge: export a sheet of 3 of each cell's 4 dialogues, two simulated
    # people fill it in (support/annotation_flow.py says how they differ from the judge), import both; the reports
    # below take the labels in (judge_corrected and the rankings under correction).
    label_a_sample(path, data, per_cell=3)
    materialize_reports(path, data, instance)
    materialize_speech(path, data, instance, ["interpersonal_empathy"])
    materialize_unified(path, data, instance)
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    yield con, instance
    con.close()


def write_annotations(warehouse: Path, out: Path) -> None:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        judge = turn_dimension_scores(con.execute("SELECT * FROM dialogue.judge_verdicts").df())
    rows = []
    for annotator, offset in (("a1", -0.5), ("a2", 0.5)):
        for r in judge[judge["turn"] <= 4].to_dict("records"):
            for d in ("empathy", "persona", "anthropomorphic"):
                score = float(np.clip(np.round((r[d] + offset) * 2) / 2, 0, 5))
                rows.append([annotator, r["target"], r["pool"], r["seed_id"], r["turn"], d, score])
    pd.DataFrame(rows, columns=["annotator", "target", "pool", "seed_id", "turn", "dimension", "score"]).to_csv(
        out, index=False
    )
