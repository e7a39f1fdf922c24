"""dialogue.judge_corrected materialised from a full set of labels: a copy of the `warehouse` fixture's dialogue
tables, labels in the import store (as `eyt annotate import` keeps a sheet's) that score every judged turn of one
pool's dialogues, and the asset run again over them; sql/judge_corrected.sql agrees."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml
from dagster import AssetSelection, DagsterInstance, materialize

from assets.eyt_bench.partitions import TARGETS_PARTITION
from eyt_dagster.core.prediction_powered import prediction_powered_mean
from eyt_dagster.eyt_bench.annotation_sheet import SheetItem, SheetManifest, dialogue_digests, manifest_json
from eyt_dagster.eyt_bench.dialogue_scoring import turn_dimension_scores
from eyt_dagster.slate import load_slate
from resources.storage.annotation_labels import add_labels, sheets_dir
from resources.storage.warehouse import WAREHOUSE_FILE

from support.pipeline import resources_for, slate_assets

pytestmark = pytest.mark.materialisation

SQL = Path(__file__).resolve().parents[2] / "sql"
POOL = "nemotron_usa"
KEYS = ["target", "pool", "seed_id"]
SHEET = "s3-0a1b2c3d"
COMPARED = ["n_dialogues", "n_labelled", "people_mean", "ppi_lambda", "corrected_mean", "corrected_se"]
COMPARED += ["corrected_low", "corrected_high"]


def _annotations(judge: pd.DataFrame, partly: tuple[str, str]) -> pd.DataFrame:
    """Two annotators on every judged turn of POOL: a1 the judge's turn score rounded down to the half-point grid,
    a2 rounded up, so their mean is the judge's score (the judges' mean is a multiple of 0.25). The last judged turn
    of dialogue `partly` (target, seed_id) is left out: it is partly labelled."""
    rows = []
    mine = judge[judge["pool"] == POOL]
    last = mine[(mine["target"] == partly[0]) & (mine["seed_id"] == partly[1])]["turn"].max()
    for r in mine.to_dict("records"):
        if (r["target"], r["seed_id"]) == partly and r["turn"] == last:
            continue
        for d in ("empathy", "persona", "anthropomorphic"):
            low, high = math.floor(r[d] * 2) / 2, math.ceil(r[d] * 2) / 2
            rows.append(["a1", r["target"], POOL, r["seed_id"], r["turn"], d, low])
            rows.append(["a2", r["target"], POOL, r["seed_id"], r["turn"], d, high])
    return pd.DataFrame(rows, columns=["annotator", "target", "pool", "seed_id", "turn", "dimension", "score"])


@pytest.fixture(scope="module")
def corrected(warehouse, tmp_path_factory):
    con, _ = warehouse
    database = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    source = Path(database[0]).parent
    judge = turn_dimension_scores(con.execute("SELECT * FROM dialogue.judge_verdicts").df())
    scores = con.execute("SELECT * FROM dialogue.dialogue_scores").df()
    directory = tmp_path_factory.mktemp("corrected")
    data = directory / "data"
    shutil.copytree(source / "warehouse" / "dialogue", data / "warehouse" / "dialogue")
    first = scores[scores["pool"] == POOL].sort_values(KEYS).iloc[0]
    partly = (str(first["target"]), str(first["seed_id"]))
    # as `eyt annotate import` keeps a sheet's labels (only labels from drawn sheets correct the judge)
    labels = _annotations(judge, partly).assign(sheet=SHEET, source_file="sheet.csv")
    add_labels(data, labels, SHEET)
    # and the sheet's manifest, which a label counts only while its dialogue still matches
    digests = dialogue_digests(con.execute("SELECT * FROM dialogue.dialogue_turns").df())
    drawn = sorted({(str(t), str(p), str(i)) for t, p, i in zip(labels["target"], labels["pool"], labels["seed_id"])})
    items = tuple(
        SheetItem(item=f"i{n:03d}", target=t, pool=p, seed_id=i, turns=(1,), digest=digests[(t, p, i)])
        for n, (t, p, i) in enumerate(drawn, start=1)
    )
    manifest = SheetManifest(sheet=SHEET, slate="s", seed=3, per_cell=4, created_at="2026-01-01", items=items)
    sheets_dir(data).mkdir(parents=True, exist_ok=True)
    (sheets_dir(data) / f"{SHEET}.json").write_text(manifest_json(manifest))
    slate = yaml.safe_load((source.parent / "slate.yaml").read_text())
    slate.update(human_annotations=None, min_human_labels=3)
    path = directory / "slate.yaml"
    path.write_text(yaml.safe_dump(slate, sort_keys=False))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(TARGETS_PARTITION, [t.id for t in load_slate(path).eyt_targets])
    selection = AssetSelection.assets(["dialogue", "human_annotations"], ["dialogue", "judge_corrected"])
    result = materialize(
        slate_assets(path), selection=selection, resources=resources_for(path, data), instance=instance
    )
    assert result.success
    with duckdb.connect(str(data / WAREHOUSE_FILE), read_only=True) as copy:
        table = copy.execute("SELECT * FROM dialogue.judge_corrected").df()
        for name in ("turn_dimensions", "judge_corrected"):
            copy.execute((SQL / f"{name}.sql").read_text())
        copy.execute("CREATE OR REPLACE TEMP MACRO eyt_min_human_labels() AS 3")
        twin = copy.execute("SELECT * FROM judge_corrected_sql").df()
    yield table, twin, scores, partly


def test_every_cell_and_metric_has_a_row_and_the_labelled_pool_is_corrected(corrected):
    table, _, scores, partly = corrected
    cells = scores[KEYS[:2]].drop_duplicates()
    assert len(table) == len(cells) * 5
    dims = table[table["metric"].isin(["empathy", "persona", "anthropomorphic"])]
    labelled, other = dims[dims["pool"] == POOL], table[table["pool"] != POOL]
    assert (labelled["shown"] == "corrected").all() and (labelled["why"] == "").all()
    assert (labelled["n_annotators"] == 2).all()
    assert ((other["shown"] == "judge only") & (other["why"] == "no human labels")).all()
    finals = table[(table["pool"] == POOL) & table["metric"].isin(["ficr", "satisfaction"])]
    assert (finals["why"] == "no human labels").all()  # these labels hold no dialogue fields
    # the partly labelled dialogue is left out of its cell's labels; every other dialogue is labelled
    for row in labelled.itertuples():
        expected = row.n_dialogues - (1 if row.target == partly[0] else 0)
        assert row.n_labelled == expected


def test_human_values_made_as_the_judges_give_the_judges_numbers(corrected):
    """The annotators' mean is the judge's turn score on every turn, so each labelled dialogue's human value is its
    judge value: a cell whose dialogues are all labelled has the leaderboard's mean; the other is PPI++ with Y = the
    judge's values of the labelled dialogues."""
    table, _, scores, partly = corrected
    for row in table[(table["pool"] == POOL) & (table["metric"] == "empathy")].itertuples():
        cell = scores[(scores["target"] == row.target) & (scores["pool"] == POOL)].sort_values("seed_id")
        values = cell["empathy"].astype(float)
        if row.target != partly[0]:
            assert row.people_mean == pytest.approx(row.judge_mean)
            assert row.corrected_mean == pytest.approx(row.judge_mean) and row.ppi_lambda == 0.0
        else:
            out = cell["seed_id"] == partly[1]
            labelled = values[~out].to_numpy()
            expected = prediction_powered_mean(labelled, labelled, values[out].to_numpy())
            assert row.corrected_mean == pytest.approx(expected.estimate, abs=1e-9)
            assert row.corrected_se == pytest.approx(expected.se, abs=1e-9)


def test_the_sql_twin_agrees_with_the_table(corrected):
    table, twin, _, _ = corrected
    assert len(twin) == len(table)
    merged = table.merge(twin, on=["target", "pool", "metric"], suffixes=("", "_sql"))
    assert len(merged) == len(table)
    for column in COMPARED:
        np.testing.assert_allclose(
            merged[column].astype(float),
            merged[f"{column}_sql"].astype(float),
            rtol=1e-9,
            atol=1e-9,
            equal_nan=True,
            err_msg=column,
        )
    assert (merged["shown"] == merged["shown_sql"]).all()
