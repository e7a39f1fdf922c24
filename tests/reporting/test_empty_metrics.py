"""Every report step works when one metric is empty in every cell: a slate whose dialogues are all shorter than three
turns has no directional alignment anywhere, a run whose judges all failed has no satisfaction. For each metric of the
leaderboard in turn, its values are removed from every warehouse table that holds it (a column of that name, or the
rows of a long table whose `metric` is it), and the HTML report, the paper tables and the model cards are built from
what is left."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from eyt_dagster.ops.report_commands import report_html, write_paper_tables
from eyt_dagster.reporting.model_cards import build_model_cards
from eyt_dagster.slate import load_slate
from resources.storage.report_reads import card_inputs

pytestmark = pytest.mark.materialisation

# the numbers of a long table's row (metric, value, interval, difference): emptied with the metric
LONG_VALUES = ("value", "ci_low", "ci_high", "diff", "estimate", "p_value", "p_adjusted")


def _empty_metric(warehouse: Path, metric: str) -> int:
    """Remove `metric`'s values from every Parquet file of the warehouse copy; how many files changed."""
    changed = 0
    for file in warehouse.rglob("*.parquet"):
        if file.name.startswith("_"):
            continue
        df = pd.read_parquet(file)
        touched = False
        if metric in df.columns:
            df[metric] = None
            touched = True
        if "metric" in df.columns and (df["metric"] == metric).any():
            for column in (c for c in LONG_VALUES if c in df.columns):
                df.loc[df["metric"] == metric, column] = None
            touched = True
        if touched:
            df.to_parquet(file, index=False)
            changed += 1
    return changed


@pytest.fixture(scope="module")
def source(warehouse):
    con, _ = warehouse
    path = Path(
        con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    )
    metrics = [
        m for (m,) in con.execute("SELECT DISTINCT metric FROM dialogue.leaderboard_intervals ORDER BY 1").fetchall()
    ]
    return path.parent, metrics


def test_each_report_step_runs_with_each_metric_empty_in_every_cell(source, tmp_path):
    data, metrics = source
    slate_file = data.parent / "slate.yaml"
    slate = load_slate(slate_file)
    assert {"drift", "directional_alignment", "satisfaction"} <= set(metrics), metrics
    sections = report_html(data / "eyt.duckdb", slate, slate_file.read_text(), {}, generated_at="fixed").count("<h2>")
    for metric in metrics:
        copy = tmp_path / metric / "eyt.duckdb"  # the report reads the Parquet files of the folder beside it
        shutil.copytree(data / "warehouse", copy.parent / "warehouse")
        shutil.rmtree(copy.parent / "warehouse" / "reports" / "model_cards")  # built from the tables on the spot
        assert _empty_metric(copy.parent, metric) >= 2, metric  # the leaderboard and its intervals at least
        html = report_html(copy, slate, slate_file.read_text(), {}, generated_at="fixed")
        assert html.count("<h2>") == sections, metric  # every section still there, the metric's cells blank
        written = write_paper_tables(copy, slate, tmp_path / f"{metric}-tables", "csv").written
        assert len(written) >= 5, metric
        cards = build_model_cards(slate, **card_inputs(copy))
        assert set(cards["target"]) >= {"reflective-baseline", "terse-baseline"}, metric
