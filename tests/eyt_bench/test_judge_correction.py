"""dialogue.judge_corrected's domain (eyt_bench/judge_correction.py) on hand-computed cells: the people's
per-dialogue values made as the judge's are (Eq. 4 at the slate's alpha, FICR's and satisfaction's scales),
several annotators averaged, a partly labelled dialogue left out, min_human_labels choosing the figure shown."""

import math
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core.prediction_powered import prediction_powered_mean
from eyt_dagster.eyt_bench.judge_correction import (
    CORRECTED,
    JUDGE_ONLY,
    METRICS,
    NO_LABELS,
    cell_corrections,
    corrected_table,
    human_dialogue_values,
    judged_turns,
)
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS

from support import corrected_cell as cell
from support.corrected_cell import ALPHA

pytestmark = pytest.mark.unit


def _by_metric(min_human_labels: int = 3, annotations: pd.DataFrame | None = None, failed=()) -> dict[str, object]:
    found = cell_corrections(
        cell.scores(),
        cell.annotations() if annotations is None else annotations,
        cell.verdicts(failed),
        cell.intervals(),
        alpha=ALPHA,
        min_human_labels=min_human_labels,
    )
    return {c.metric: c for c in found}


def test_human_values_are_weighted_and_scaled_as_the_judges():
    values = human_dialogue_values(cell.annotations(), judged_turns(cell.verdicts()), cell.lengths(), ALPHA).set_index(
        "seed_id"
    )
    # s0: annotators averaged per turn -> 1, 2, 3; 0.2 x 1 + 0.2 x 2 + 0.6 x 3 = 2.4 -> x 20 = 48
    # s1: 2, 2, 2 -> 2 -> 40; s2: 0.2 x 3 + 0.2 x 4 + 0.6 x 5 = 4.4 -> 88
    assert values.loc[["s0", "s1", "s2"], "empathy"].tolist() == pytest.approx([48.0, 40.0, 88.0])
    assert math.isnan(values.loc["s3", "empathy"])  # turn 3 has no score: not labelled
    # completion on FICR's 0-1 scale (s0: a1 says 1, a2 says 0 -> 0.5); satisfaction 1-5 to 0-100 ((x - 1) x 25):
    # s0 (5 + 4) / 2 = 4.5 -> 87.5, s1 1 -> 0, s2 3 -> 50
    assert values.loc[["s0", "s1", "s2"], "ficr"].tolist() == pytest.approx([0.5, 0.0, 1.0])
    assert values.loc[["s0", "s1", "s2"], "satisfaction"].tolist() == pytest.approx([87.5, 0.0, 50.0])
    assert values.loc["s0"].isna()[["persona", "anthropomorphic"]].all()  # never scored


def test_a_cell_is_the_prediction_powered_mean_of_its_labelled_dialogues():
    cells = _by_metric()
    empathy = cells["empathy"]
    # labelled: s0-s2 (s3 partly labelled is left out and counts among the judge-only dialogues)
    expected = prediction_powered_mean([48.0, 40.0, 88.0], [40.0, 50.0, 60.0], [70.0, 80.0])
    assert (empathy.n_dialogues, empathy.n_labelled, empathy.n_partly_labelled) == (5, 3, 1)
    assert empathy.ppi is not None
    assert empathy.ppi.estimate == pytest.approx(expected.estimate)
    assert empathy.ppi.se == pytest.approx(expected.se)
    assert empathy.ppi.lam == pytest.approx(expected.lam)
    assert empathy.people_mean == pytest.approx(176.0 / 3)
    # people's interval: mean -/+ 1.96 x sd / sqrt(n), sd divided by n
    sd = float(np.std([48.0, 40.0, 88.0]))
    assert empathy.people_low == pytest.approx(176.0 / 3 - 1.959964 * sd / math.sqrt(3), abs=1e-4)
    # the judge's figure is the leaderboard's interval row
    assert (empathy.judge_mean, empathy.judge_low, empathy.judge_high) == (1.0, 0.5, 1.5)
    ficr = cells["ficr"]
    assert ficr.ppi is not None and ficr.n_labelled == 3
    expected = prediction_powered_mean([0.5, 0.0, 1.0], [1.0, 0.0, 1.0], [1.0, 0.0])
    assert ficr.ppi.estimate == pytest.approx(expected.estimate)
    satisfaction = cells["satisfaction"]
    expected = prediction_powered_mean([87.5, 0.0, 50.0], [75.0, 25.0, 50.0], [100.0, 0.0])
    assert satisfaction.ppi is not None and satisfaction.ppi.estimate == pytest.approx(expected.estimate)


def test_two_annotators_are_counted_and_their_agreement_measured():
    empathy = _by_metric()["empathy"]
    assert empathy.n_annotators == 2
    # each annotator's own values: a1 s0 0.2 x 0.5 + 0.4 + 1.8 = 2.3 -> 46, s1 40, s2 88; a2 s0 2.5 -> 50, s1 40.
    # Interval alpha over the pairable values 46, 50, 40, 40: observed 32 / 4 = 8, expected 576 / 12 = 48
    assert empathy.annotator_alpha == pytest.approx(1 - 8 / 48)


def test_min_human_labels_chooses_the_figure_shown():
    table = corrected_table(list(_by_metric(min_human_labels=3).values())).set_index("metric")
    assert table.loc["empathy", "shown"] == CORRECTED and table.loc["empathy", "why"] == ""
    assert table.loc["empathy", "shown_mean"] == table.loc["empathy", "corrected_mean"]
    assert table.loc["persona", "shown"] == JUDGE_ONLY and table.loc["persona", "why"] == NO_LABELS
    table = corrected_table(list(_by_metric(min_human_labels=4).values())).set_index("metric")
    assert table.loc["empathy", "shown"] == JUDGE_ONLY
    assert table.loc["empathy", "why"] == "3 labelled dialogues, fewer than min_human_labels (4)"
    assert (table.loc["empathy", ["shown_mean", "shown_low", "shown_high"]] == [1.0, 0.5, 1.5]).all()
    assert not math.isnan(table.loc["empathy", "corrected_mean"])  # still reported beside


def test_no_labels_at_all_gives_the_judges_figure_everywhere():
    empty = cell.annotations().iloc[0:0]
    table = corrected_table(list(_by_metric(annotations=empty).values()))
    assert table["metric"].tolist() == list(METRICS)
    assert (table["shown"] == JUDGE_ONLY).all() and (table["why"] == NO_LABELS).all()
    assert (table["n_labelled"] == 0).all() and (table["n_dialogues"] == 5).all()
    assert table[["people_mean", "corrected_mean", "ppi_lambda", "annotator_alpha"]].isna().all().all()
    assert (table["shown_mean"] == 1.0).all()


def test_one_labelled_dialogue_has_a_people_mean_but_no_correction():
    one = cell.annotations()
    one = one[(one["seed_id"] == "s1") & (one["annotator"] == "a1")]
    empathy = _by_metric(annotations=one)["empathy"]
    assert empathy.n_labelled == 1 and empathy.ppi is None and empathy.people_mean == pytest.approx(40.0)
    assert empathy.why == "1 labelled dialogue, fewer than min_human_labels (3)"
    assert math.isnan(empathy.explained().number())


def test_a_turn_the_judge_did_not_answer_is_not_needed_and_the_weights_renormalise():
    """s3's turn 3 has no human score; with the judge's call on it failed too, s3 is labelled on turns 1-2, weighed
    as the judge's would be: 0.2 / 0.4 each -> (4 + 4) / 2 = 4 -> 80."""
    values = human_dialogue_values(
        cell.annotations(), judged_turns(cell.verdicts(failed=(("s3", 3),))), cell.lengths(), ALPHA
    ).set_index("seed_id")
    assert values.loc["s3", "empathy"] == pytest.approx(80.0)


def test_the_corrected_number_explains_itself():
    empathy = _by_metric()["empathy"]
    explained = empathy.explained()
    assert empathy.ppi is not None and explained.number() == pytest.approx(empathy.ppi.estimate)
    assert any("partly labelled" in note for note in explained.notes)
    assert any("shown: corrected" in note for note in explained.notes)


SQL = Path(__file__).resolve().parents[2] / "sql"


def test_the_sql_twin_agrees_on_the_hand_made_cell():
    """sql/judge_corrected.sql over the same rows (the dialogue fields at turn 0 included) gives the table's numbers."""
    verdicts = cell.verdicts(failed=(("s4", 2),)).assign(**dict.fromkeys(SUBSCORE_COLUMNS, 0.5))
    turns = verdicts[["target", "pool", "seed_id", "turn"]].drop_duplicates().assign(error=None, complete=True)
    tables = {"dialogue_scores": cell.scores(), "judge_verdicts": verdicts, "dialogue_turns": turns}
    tables["human_annotations"] = cell.annotations()
    con = duckdb.connect()
    con.execute("CREATE SCHEMA dialogue")
    for name, frame in tables.items():
        con.register("frame", frame)
        con.execute(f"CREATE TABLE dialogue.{name} AS SELECT * FROM frame")
        con.unregister("frame")
    con.execute((SQL / "turn_dimensions.sql").read_text())
    con.execute(f"CREATE OR REPLACE TEMP MACRO eyt_alpha() AS {ALPHA}::DOUBLE")
    con.execute((SQL / "judge_corrected.sql").read_text())
    con.execute("CREATE OR REPLACE TEMP MACRO eyt_min_human_labels() AS 3")
    twin = con.execute("SELECT * FROM judge_corrected_sql").df().set_index("metric")
    found = cell_corrections(
        cell.scores(), cell.annotations(), verdicts, cell.intervals(), alpha=ALPHA, min_human_labels=3
    )
    table = corrected_table(found).set_index("metric")
    assert twin.loc["persona", "n_labelled"] == 0 and twin.loc["empathy", "n_labelled"] == 3
    for column in ("n_dialogues", "n_labelled", "people_mean", "ppi_lambda", "corrected_mean", "corrected_se"):
        np.testing.assert_allclose(
            twin.loc[list(METRICS), column].astype(float),
            table.loc[list(METRICS), column].astype(float),
            rtol=1e-9,
            atol=1e-9,
            equal_nan=True,
            err_msg=column,
        )
    assert twin.loc[list(METRICS), "shown"].tolist() == table.loc[list(METRICS), "shown"].tolist()


def test_only_labels_from_drawn_sheets_correct_the_judge():
    """The slate CSV's rows (no sheet) were not drawn at random: they do not count, whatever they say."""
    from_csv = cell.annotations().assign(sheet=None)
    assert {m: r.shown for m, r in _by_metric(annotations=from_csv).items()} == dict.fromkeys(METRICS, "judge only")
    mixed = pd.concat([cell.annotations(), from_csv.assign(annotator="csv", score=5.0)], ignore_index=True)
    assert _by_metric(annotations=mixed)["empathy"].ppi.estimate == _by_metric()["empathy"].ppi.estimate
