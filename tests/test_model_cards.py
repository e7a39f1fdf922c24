"""Model cards: one row per model id over both benchmarks, equal to the tables they are built from; the other
benchmark's half NULL for a model that ran one; the SQL twin equals the asset."""

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from eyt_dagster.model_cards import EYT_METRICS, POOLED, SPEECH_METRICS
from eyt_dagster.taxonomy import POOLS

SQL = Path(__file__).resolve().parents[1] / "sql"
SPEECH_COLUMNS = ("speech_acc1", "speech_acc_traj", "speech_seq", "speech_seq_cohort", "speech_cost_usd")


def check_card_equals_tables(con, target: str) -> pd.Series:
    """Every EYT-Bench and SpeechEQ number of `target`'s card equals the table it comes from."""
    cards = con.execute("SELECT * FROM reports.model_cards").df().set_index("target")
    card = cards.loc[target]
    board = con.execute("SELECT * FROM dialogue.leaderboard WHERE target = ?", [target]).df().set_index("pool")
    intervals = con.execute("SELECT * FROM dialogue.leaderboard_intervals WHERE target = ?", [target]).df()
    intervals = intervals.set_index(["pool", "metric"])
    for pool in board.index:
        for metric in EYT_METRICS:
            assert card[f"eyt_{pool}_{metric}"] == pytest.approx(board.loc[pool, metric], nan_ok=True), (pool, metric)
            low = intervals.loc[(pool, metric), "ci_low"]
            assert card[f"eyt_{pool}_{metric}_ci_low"] == pytest.approx(low, nan_ok=True), (pool, metric)
    if len(board):
        assert card["eyt_cost_usd"] == pytest.approx(board["target_cost_usd"].sum())
    seq = con.execute("SELECT * FROM speech.seq_leaderboard WHERE target = ? AND condition = 'default'",
                      [target]).df()
    if len(seq):
        for metric in SPEECH_METRICS:
            assert card[f"speech_{metric}"] == pytest.approx(seq[metric].iloc[0])
            assert card[f"speech_{metric}_ci_high"] == pytest.approx(seq[f"{metric}_high"].iloc[0])
        assert card["speech_seq"] == pytest.approx(seq["seq"].iloc[0], nan_ok=True)
        assert card["speech_seq_cohort"] == seq["seq_cohort"].iloc[0]
        assert card["speech_mean_latency_s"] == pytest.approx(seq["mean_latency_s"].iloc[0], nan_ok=True)
    return card


def test_every_target_has_one_card_with_its_benchmark_half_filled(warehouse):
    con, _ = warehouse
    cards = con.execute("SELECT * FROM reports.model_cards ORDER BY target").df()
    text = set(con.execute("SELECT DISTINCT target FROM dialogue.leaderboard").df()["target"])
    speech = set(con.execute("SELECT DISTINCT target FROM speech.seq_leaderboard WHERE target <> 'chance'").df()["target"])
    assert list(cards["target"]) == sorted(text | speech) and cards["target"].is_unique
    for card in cards.to_dict("records"):
        t = card["target"]
        assert card["has_eyt_bench"] == (t in text) and card["has_speech_eq"] == (t in speech)
        assert card["is_baseline"]  # the fixture slate holds embedded baselines only
        if t not in speech:  # text-only: the speech half is NULL, not zero
            assert all(pd.isna(card[c]) for c in SPEECH_COLUMNS), t
        if t not in text:  # speech-only: the EYT-Bench half is NULL
            assert all(pd.isna(card[f"eyt_{s}_{m}"]) for s in (*POOLS, POOLED) for m in EYT_METRICS), t
            assert pd.isna(card["eyt_cost_usd"])
        check_card_equals_tables(con, t)
    assert "api_key" not in " ".join(cards["answer_settings"].dropna())


def test_pooled_columns_use_the_leaderboard_aggregation(warehouse):
    """Pooled accuracy is the turn-weighted ratio over both pools (not the mean of the two pool values); pooled
    scores are the mean over all dialogues. Checked by hand from dialogue_scores."""
    con, _ = warehouse
    card = con.execute("SELECT * FROM reports.model_cards WHERE target = 'reflective-baseline'").df().iloc[0]
    scores = con.execute("SELECT * FROM dialogue.dialogue_scores WHERE target = 'reflective-baseline'").df()
    assert card[f"eyt_{POOLED}_explicit_acc"] == pytest.approx(scores["explicit_correct"].sum() / scores["n_turns"].sum())
    assert card[f"eyt_{POOLED}_empathy"] == pytest.approx(scores["empathy"].mean())
    assert card[f"eyt_{POOLED}_ficr"] == pytest.approx(scores["completed"].astype(float).mean())
    assert card[f"eyt_{POOLED}_n_dialogues"] == len(scores)
    for metric in EYT_METRICS:
        low, value, high = (card[f"eyt_{POOLED}_{metric}{s}"] for s in ("_ci_low", "", "_ci_high"))
        assert low <= value + 1e-9 and value <= high + 1e-9, metric


def test_sql_twin_equals_the_cards(warehouse):
    con, _ = warehouse
    for name in ("turn_dimensions", "dialogue_scores", "leaderboard", "seq_leaderboard", "model_cards"):
        con.execute((SQL / f"{name}.sql").read_text())
    twin = con.execute("SELECT * FROM model_cards_sql ORDER BY target").df()
    asset = con.execute(f"SELECT {', '.join(twin.columns)} FROM reports.model_cards ORDER BY target").df()
    assert list(twin["target"]) == list(asset["target"])
    for column in twin.columns:
        if column == "target":
            continue
        if twin[column].dtype.kind in "fiu" or asset[column].dtype.kind in "fiu":
            np.testing.assert_allclose(asset[column].astype(float), twin[column].astype(float), rtol=1e-9,
                                       atol=1e-9, equal_nan=True, err_msg=column)
        else:
            assert list(asset[column].astype(object).where(asset[column].notna(), None)) == \
                list(twin[column].astype(object).where(twin[column].notna(), None)), column


def test_model_card_plot_is_in_the_materialisation(warehouse):
    from dagster import AssetKey

    _, instance = warehouse
    event = instance.get_latest_materialization_event(AssetKey(["reports", "model_cards"]))
    plot = event.asset_materialization.metadata["plot"].value
    assert plot.startswith("![Model cards](data:image/png;base64,")
