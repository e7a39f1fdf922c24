"""Hand-computed scoring cases run through the real assets and their SQL twins: a three-judge ensemble whose
mean and median differ, a turn whose verdicts all failed (warm-up weights renormalised over the judged
turns), an unfinished dialogue (left out of every metric), and a partition whose verdicts all failed.

The raw tables are written straight into a warehouse (no model is called); dialogue_scores, the leaderboard
and the analysis tables are then materialised from them with the slate's judge_combine: median."""

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml
from dagster import AssetKey, AssetSelection, DagsterInstance, materialize

from assets.eyt_bench.partitions import TARGETS_PARTITION, target_pool_key
from eyt_dagster.definitions import ASSETS
from eyt_dagster.eyt_bench import metrics
from eyt_dagster.eyt_bench.dialogue_scoring import score_dialogues
from eyt_dagster.eyt_bench.taxonomy import RUBRIC
from eyt_dagster.slate import default_slate_path
from eyt_dagster.table_registry import catalog
from resources.storage.warehouse import WAREHOUSE_FILE, store_frame

from support.pipeline import resources_for
from support.slates import write_slate

SQL = Path(__file__).resolve().parents[2] / "sql"
TARGET, NEMO, PM = "reflective-baseline", "nemotron_usa", "personamem_v2"
JUDGES = ("rubric-judge", "rubric-judge-strict", "rubric-judge-lenient")
KEYS = ["target", "pool", "seed_id"]
REPORTS = [
    ["dialogue", n]
    for n in (
        "leaderboard",
        "leaderboard_intervals",
        "trajectory",
        "alpha_sensitivity",
        "turn_curves",
        "pairwise_comparisons",
    )
]

# Empathy sub-indicators per judge (j1, j2, j3) and turn; persona and anthropomorphic are 0.5 everywhere.
# Dialogue a (T = 4): turn 2's verdicts all failed. Dialogue b (T = 3): the judges agree.
FULL, NONE, TWO, THREE, FOUR = [1] * 5, [0] * 5, [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]
EMPATHY = {
    ("a", 1): (FULL, FULL, NONE),  # sums 5, 5, 0: mean 10/3, median 5
    ("a", 3): (TWO, TWO, TWO),  # 2
    ("a", 4): (THREE, THREE, NONE),  # 3, 3, 0: mean 2, median 3 (per sub-indicator: 1, 1, 1, 0, 0)
    ("b", 1): (FOUR,) * 3,
    ("b", 2): (FOUR,) * 3,
    ("b", 3): (FOUR,) * 3,
}
# Hand-computed, alpha = 0.10. Dialogue a, T = 4: Eq. 4 gives (0.1, 0.1, 0.4, 0.4); turn 2 has no verdict, so
# turns 1, 3, 4 weigh 0.1 / 0.9, 0.4 / 0.9, 0.4 / 0.9 = 1/9, 4/9, 4/9.
A_MEDIAN = (5 * 1 + 2 * 4 + 3 * 4) / 9 * 20  # 55.56
A_MEAN = (10 / 3 * 1 + 2 * 4 + 2 * 4) / 9 * 20  # 42.96
B = 4 * 20  # 80


def _turn(seed_id, pool, turn, *, hit=True, complete=True, error=None):
    label = "planning" if hit else "small_talk"
    return {
        "target": TARGET,
        "pool": pool,
        "seed_id": seed_id,
        "turn": turn,
        "user_text": None if error else "q",
        "gold_explicit_intent": None if error else "planning",
        "pred_explicit_intent": None if error else label,
        "gold_latent_intent": None if error else "self_improvement",
        "pred_latent_intent": None if error else "self_improvement",
        "gold_emotion": None if error else "hope",
        "pred_emotion": None if error else "hope",
        "progress": None if error else "in_progress",
        "response_text": None if error else "r",
        "error": error,
        "complete": complete,
    }


def _verdict(seed_id, pool, turn, judge, empathy=None, error=None):
    row = {"target": TARGET, "pool": pool, "seed_id": seed_id, "turn": turn, "judge": judge, "error": error}
    for dim, subs in RUBRIC.items():
        for i, sub in enumerate(subs):
            row[f"{dim}_{sub}"] = None if error else (float(empathy[i]) if dim == "empathy" else 0.5)
    return row


def case_tables() -> dict[str, pd.DataFrame]:
    turns = [
        _turn("a", NEMO, 1, hit=False),
        *(_turn("a", NEMO, t) for t in (2, 3, 4)),
        *(_turn("b", NEMO, t) for t in (1, 2, 3)),
        # c failed at turn 3: two answered turns kept (complete = false) and its error row; the labels
        # miss, so counting it would change the accuracy
        _turn("c", NEMO, 1, hit=False, complete=False),
        _turn("c", NEMO, 2, hit=False, complete=False),
        _turn("c", NEMO, 0, complete=False, error="ModelCallError: 500"),
        *(_turn("d", PM, t) for t in (1, 2)),
    ]
    verdicts = []
    for (seed_id, turn), per_judge in EMPATHY.items():
        verdicts += [_verdict(seed_id, NEMO, turn, j, e) for j, e in zip(JUDGES, per_judge)]
    verdicts += [_verdict("a", NEMO, 2, j, error="ModelCallError: judge timed out") for j in JUDGES]
    verdicts += [_verdict("d", PM, t, j, error="ModelCallError: judge down") for t in (1, 2) for j in JUDGES]
    finals = [
        {"target": TARGET, "pool": NEMO, "seed_id": "a", "judge": j, "completed": c, "satisfaction": s}
        for j, c, s in zip(JUDGES, (True, True, False), (5, 5, 1))
    ]
    finals += [
        {"target": TARGET, "pool": NEMO, "seed_id": "b", "judge": j, "completed": False, "satisfaction": 3}
        for j in JUDGES
    ]
    finals += [
        {"target": TARGET, "pool": PM, "seed_id": "d", "judge": j, "error": "ModelCallError: judge down"}
        for j in JUDGES
    ]
    similarity = [
        {"target": TARGET, "pool": NEMO, "seed_id": "a", "turn": t, "cos_gold_pred": g, "cos_pred_final": f}
        for t, g, f in zip((1, 2, 3, 4), (1.0, 0.5, 0.5, 0.0), (0.1, 0.2, 0.3, 0.4))
    ]
    similarity += [
        {"target": TARGET, "pool": NEMO, "seed_id": "b", "turn": t, "cos_gold_pred": 1.0, "cos_pred_final": 0.5}
        for t in (1, 2, 3)
    ]
    similarity += [
        {"target": TARGET, "pool": PM, "seed_id": "d", "turn": t, "cos_gold_pred": 0.5, "cos_pred_final": 0.5}
        for t in (1, 2)
    ]
    return {
        "dialogue_turns": pd.DataFrame(turns),
        "judge_verdicts": pd.DataFrame(verdicts),
        "final_intent_verdicts": pd.DataFrame(finals),
        "intent_similarity": pd.DataFrame(similarity),
    }


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """The case warehouse after materialising dialogue_scores (both partitions) and the reports, with the
    slate's judge_combine: median. Yields (data_dir, {asset name: run result})."""
    directory = tmp_path_factory.mktemp("case")
    default = yaml.safe_load(default_slate_path().read_text())
    judges = [*default["judges"], default["replacement_judge"]]
    assert [j["id"] for j in judges] == list(JUDGES)
    slate = write_slate(
        directory,
        targets=[t for t in default["targets"] if t["id"] == TARGET],
        judges=judges,
        replacement_judge=None,
        judge_combine="median",
    )
    data = directory / "data"
    data.mkdir()
    for table, frame in case_tables().items():
        store_frame(data, f"dialogue.{table}", frame, partition_by=("pool", "target"), catalog=catalog())
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(TARGETS_PARTITION, [TARGET])
    resources = resources_for(slate, data)
    runs = {}
    for pool in (NEMO, PM):
        runs[pool] = materialize(
            ASSETS,
            selection=[AssetKey(["dialogue", "dialogue_scores"])],
            resources=resources,
            partition_key=str(target_pool_key(TARGET, pool)),
            instance=instance,
            raise_on_error=False,
        )
    runs["reports"] = materialize(
        ASSETS, selection=AssetSelection.assets(*REPORTS), resources=resources, instance=instance, raise_on_error=False
    )
    yield data, runs, instance


def _read(data: Path, sql: str) -> pd.DataFrame:
    with duckdb.connect(str(data / WAREHOUSE_FILE), read_only=True) as con:
        return con.execute(sql).df()


def _logs(instance, run) -> str:
    return "\n".join(record.user_message for record in instance.all_logs(run.run_id))


@pytest.mark.materialisation
def test_every_run_succeeds_despite_failed_verdicts(case):
    _, runs, _ = case
    assert {name: run.success for name, run in runs.items()} == {NEMO: True, PM: True, "reports": True}


@pytest.mark.materialisation
def test_failed_verdicts_leave_scores_missing_and_are_counted_and_logged(case):
    data, runs, instance = case
    scores = _read(data, "SELECT * FROM dialogue.dialogue_scores").set_index("seed_id")
    assert sorted(scores.index) == ["a", "b", "d"]  # c is unfinished
    d = scores.loc["d"]  # every verdict of its partition failed
    assert np.isnan(d["empathy"]) and np.isnan(d["satisfaction"]) and pd.isna(d["completed"])
    assert (d["n_judged_turns"], d["n_failed_verdicts"], d["n_failed_final_verdicts"]) == (0, 6, 3)
    assert d["n_turns"] == 2 and d["drift"] == pytest.approx(0.5)  # the objective metrics are still there
    a = scores.loc["a"]
    assert (a["n_judged_turns"], a["n_failed_verdicts"], a["n_failed_final_verdicts"]) == (3, 3, 0)
    assert (
        "3 of 21 turn verdicts failed in nemotron_usa|reflective-baseline; see dialogue.judge_verdicts.error"
        in _logs(instance, runs[NEMO])
    )
    pm_logs = _logs(instance, runs[PM])
    assert "6 of 6 turn verdicts failed in personamem_v2|reflective-baseline" in pm_logs
    assert "3 of 3 final verdicts failed in personamem_v2|reflective-baseline" in pm_logs
    assert "2 of 3 dialogues finished in nemotron_usa|reflective-baseline" in _logs(instance, runs[NEMO])


@pytest.mark.materialisation
def test_median_of_three_judges_reaches_dialogue_scores_and_the_leaderboard(case):
    data, _, _ = case
    scores = _read(data, "SELECT * FROM dialogue.dialogue_scores").set_index("seed_id")
    assert scores.loc["a", "empathy"] == pytest.approx(A_MEDIAN)  # 55.56; the mean would give 42.96
    assert scores.loc["a", "satisfaction"] == pytest.approx(100.0)  # median of 5, 5, 1; the mean 66.67
    assert scores.loc["a", "empathy_early"] == 5.0 and scores.loc["a", "empathy_late"] == 2.5
    assert (scores["judge_combine"] == "median").all()
    board = _read(data, "SELECT * FROM dialogue.leaderboard").set_index("pool")
    nemo = board.loc[NEMO]
    assert nemo["judge_combine"] == "median"
    assert nemo["empathy"] == pytest.approx((A_MEDIAN + B) / 2)  # 67.78; with the mean (A_MEAN + B) / 2 = 61.48
    assert nemo["satisfaction"] == pytest.approx((100 + 50) / 2)
    assert nemo["empathy_unweighted"] == pytest.approx((5 + 2 + 3 + 4 * 3) / 6 * 20)
    assert nemo["ficr"] == 0.5 and nemo["n_dialogues"] == 2
    assert nemo["explicit_acc"] == pytest.approx(6 / 7)  # the unfinished c's misses do not count
    assert nemo["drift"] == pytest.approx((0.5 + 0.0) / 2)
    pm = board.loc[PM]
    assert pm["n_dialogues"] == 1 and np.isnan(pm["empathy"]) and np.isnan(pm["ficr"])
    intervals = _read(data, "SELECT * FROM dialogue.leaderboard_intervals WHERE metric = 'empathy'").set_index("pool")
    assert intervals.loc[NEMO, "value"] == pytest.approx((A_MEDIAN + B) / 2)


@pytest.mark.unit
def test_the_mean_gives_the_hand_computed_mean():
    tables = case_tables()
    scores = score_dialogues(
        tables["dialogue_turns"],
        tables["judge_verdicts"],
        tables["final_intent_verdicts"],
        tables["intent_similarity"],
        alpha=0.10,
        combine="mean",
    ).set_index("seed_id")
    assert scores.loc["a", "empathy"] == pytest.approx(A_MEAN)
    assert scores.loc["a", "satisfaction"] == pytest.approx((11 / 3 - 1) * 25)


@pytest.mark.unit
def test_warmup_weights_of_judged_turns_hand_computed():
    np.testing.assert_allclose(metrics.judged_turn_weights([1, 3, 4], 4, 0.10), [1 / 9, 4 / 9, 4 / 9])
    np.testing.assert_allclose(metrics.judged_turn_weights([1, 2, 3, 4], 4, 0.10), [0.1, 0.1, 0.4, 0.4])
    np.testing.assert_allclose(metrics.judged_turn_weights([1], 2, 0.10), [1.0])  # T = 2, turn 2 unjudged
    with pytest.raises(ValueError, match="outside 1..3"):
        metrics.judged_turn_weights([1, 4], 3, 0.10)


def _sql_connection(data: Path, combine: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(data / WAREHOUSE_FILE), read_only=True)
    con.execute((SQL / "turn_dimensions.sql").read_text())
    con.execute(f"CREATE OR REPLACE TEMP MACRO eyt_judge_combine() AS '{combine}'")
    for name in ("dialogue_scores", "leaderboard", "alpha_sensitivity"):
        con.execute((SQL / f"{name}.sql").read_text())
    return con


@pytest.mark.materialisation
@pytest.mark.parametrize(("combine", "expected"), [("median", A_MEDIAN), ("mean", A_MEAN)])
def test_sql_twin_gives_the_same_hand_computed_scores(case, combine, expected):
    data, _, _ = case
    with _sql_connection(data, combine) as con:
        twin = con.execute("SELECT * FROM dialogue_scores_sql").df().set_index("seed_id")
        weighted = con.execute(
            "SELECT * FROM alpha_sensitivity_sql WHERE dimension = 'empathy' AND pool = 'nemotron_usa' AND alpha = 0.10"
        ).df()
        board = con.execute("SELECT * FROM leaderboard_sql").df().set_index("pool")
    assert sorted(twin.index) == ["a", "b", "d"]
    assert twin.loc["a", "empathy"] == pytest.approx(expected)
    assert (twin.loc["a", "n_judged_turns"], twin.loc["a", "n_failed_verdicts"]) == (3, 3)
    d = twin.loc["d"]
    assert (d["n_judged_turns"], d["n_failed_verdicts"], d["n_failed_final_verdicts"]) == (0, 6, 3)
    assert weighted["weighted"].iloc[0] == pytest.approx((expected + B) / 2)
    assert board.loc[NEMO, "empathy"] == pytest.approx((expected + B) / 2)
    assert board.loc[NEMO, "n_dialogues"] == 2 and board.loc[NEMO, "explicit_acc"] == pytest.approx(6 / 7)


@pytest.mark.materialisation
def test_sql_twins_equal_the_median_assets(case):
    data, _, _ = case
    with _sql_connection(data, "median") as con:
        twin = con.execute("SELECT * FROM dialogue_scores_sql").df().set_index("seed_id").sort_index()
        asset = con.execute("SELECT * FROM dialogue.dialogue_scores").df().set_index("seed_id").sort_index()
        board_twin = con.execute("SELECT * FROM leaderboard_sql ORDER BY pool").df()
        board = con.execute(f"SELECT {', '.join(board_twin.columns)} FROM dialogue.leaderboard ORDER BY pool").df()
    for column in twin.columns.drop(["target", "pool"]):
        np.testing.assert_allclose(
            asset[column].astype(float), twin[column].astype(float), equal_nan=True, err_msg=column
        )
    for column in board_twin.columns.drop(["target", "pool"]):
        np.testing.assert_allclose(
            board[column].astype(float), board_twin[column].astype(float), equal_nan=True, err_msg=column
        )
