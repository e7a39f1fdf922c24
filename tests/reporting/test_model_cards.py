"""Model cards: one row per model id over both benchmarks, equal to the tables they are built from; the other
benchmark's half NULL for a model that ran one; the SQL twin equals the asset."""

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench.taxonomy import POOLS
from eyt_dagster.reporting.model_cards import EYT_METRICS, POOLED, SPEECH_METRICS

pytestmark = pytest.mark.materialisation

SQL = Path(__file__).resolve().parents[2] / "sql"
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
    seq = con.execute("SELECT * FROM speech.seq_leaderboard WHERE target = ? AND condition = 'default'", [target]).df()
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
    speech = set(
        con.execute("SELECT DISTINCT target FROM speech.seq_leaderboard WHERE target <> 'chance'").df()["target"]
    )
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
    assert card[f"eyt_{POOLED}_explicit_acc"] == pytest.approx(
        scores["explicit_correct"].sum() / scores["n_turns"].sum()
    )
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
            np.testing.assert_allclose(
                asset[column].astype(float),
                twin[column].astype(float),
                rtol=1e-9,
                atol=1e-9,
                equal_nan=True,
                err_msg=column,
            )
        else:
            assert list(asset[column].astype(object).where(asset[column].notna(), None)) == list(
                twin[column].astype(object).where(twin[column].notna(), None)
            ), column


def test_model_card_plot_is_in_the_materialisation(warehouse):
    from dagster import AssetKey

    _, instance = warehouse
    event = instance.get_latest_materialization_event(AssetKey(["reports", "model_cards"]))
    plot = event.asset_materialization.metadata["plot"].value
    assert plot.startswith("![Model cards](data:image/png;base64,")


# ------------------------------------------------------------------ one model on both benchmarks, remote


KEY = "sk-test-cards-5e6f"


def paper_reply(option: int) -> str:
    import json

    return json.dumps(
        {
            "acoustic_profile_1": "slow and low",
            "acoustic_profile_2": "fast and loud",
            "situational_demand": "a calm voice",
            "reasoning": "option 1 fits",
            "selected_option": option,
        }
    )


CARDS = {"api_key_env": "EYT_CARDS_KEY", "max_concurrency": 2}  # what each remote model of the run gets


@pytest.fixture(scope="module")
def both_run(tmp_path_factory):
    """A slate whose `omni` model runs both benchmarks through the real openai client against the localhost
    server (dialogues from the role-playing handler, audio forced choices answered with option 1), beside a
    text-only remote model and a speech-only embedded baseline."""
    from support.localhost_server import serve
    from support.pipeline import materialize_all, materialize_speech, materialize_unified
    from support.role_play import RolePlay
    from support.slates import remote, write_slate

    tmp_path = tmp_path_factory.mktemp("cards_both")
    role_play = RolePlay()

    def handler(body):
        try:
            role_play.role_of(body)
        except AssertionError:  # not an EYT role: a SpeechEQ forced choice
            return paper_reply(1)
        return role_play(body)

    with pytest.MonkeyPatch.context() as monkeypatch, serve(handler) as server:
        monkeypatch.setenv("EYT_CARDS_KEY", KEY)
        url = server.base_url
        slate = write_slate(
            tmp_path,
            pools={"nemotron_usa": {"source": "fixture"}},
            dialogues_per_pool=2,
            t_max=3,
            simulator=remote("sim-model", url, family="fam-sim", **CARDS),
            judges=[remote("judge-model", url, family="fam-judge", **CARDS)],
            replacement_judge=None,
            human_annotations=None,
            targets=[
                remote(
                    "omni",
                    url,
                    family="fam-omni",
                    **CARDS,
                    benchmarks=["eyt_bench", "speech_eq"],
                    price_in_per_mtok=2.0,
                    price_out_per_mtok=8.0,
                ),
                remote("chat-only", url, family="fam-chat", **CARDS),
                {
                    "id": "random-chooser-baseline",
                    "provider": "embedded",
                    "model": "random-chooser",
                    "family": "eyt-baseline-speech",
                    "benchmarks": ["speech_eq"],
                },
            ],
            speech={"evaluation": {"conditions": ["default"], "inference": ["sequential"]}},
        )
        data = tmp_path / "data"
        data.mkdir()
        instance = materialize_all(slate, data)
        materialize_speech(slate, data, instance, ["interpersonal_empathy"])
        materialize_unified(slate, data, instance)
        yield data, slate, instance


def test_one_model_on_both_benchmarks_gets_one_card_with_both_halves(both_run):
    import sqlite3

    data, *_ = both_run
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        cards = con.execute("SELECT * FROM reports.model_cards ORDER BY target").df().set_index("target")
        assert list(cards.index) == ["chat-only", "omni", "random-chooser-baseline"]
        omni = check_card_equals_tables(con, "omni")
        assert omni["has_eyt_bench"] and omni["has_speech_eq"] and not omni["is_baseline"]
        assert omni["speech_n_items"] > 0 and not pd.isna(omni["speech_acc1"])
        assert omni[f"eyt_{POOLED}_empathy"] == pytest.approx(omni["eyt_nemotron_usa_empathy"])  # one pool only
        assert pd.isna(omni["eyt_personamem_v2_empathy"])  # the pool the slate does not run: NULL
        for target in ("chat-only", "random-chooser-baseline"):
            check_card_equals_tables(con, target)
        chat, chooser = cards.loc["chat-only"], cards.loc["random-chooser-baseline"]
        assert chat["has_eyt_bench"] and not chat["has_speech_eq"]
        assert all(pd.isna(chat[c]) for c in SPEECH_COLUMNS)
        assert chooser["has_speech_eq"] and not chooser["has_eyt_bench"] and chooser["is_baseline"]
        assert all(pd.isna(chooser[f"eyt_{s}_{m}"]) for s in (*POOLS, POOLED) for m in EYT_METRICS)
        # the fingerprint: model name, endpoint and answer settings, never the key or its variable
        assert omni["model"] == "omni-v1" and omni["endpoint"].startswith("http://127.0.0.1")
        assert '"temperature": 0.0' in omni["answer_settings"] and "EYT_CARDS_KEY" not in omni["answer_settings"]
        assert len(omni["model_fingerprint"]) == 12
        hashes = con.execute("SELECT DISTINCT prompt_hash FROM speech.slm_choices WHERE target = 'omni'").df()
        assert omni["speech_prompt_hashes"] == ", ".join(sorted(hashes["prompt_hash"]))
    # cost per benchmark equals what the call ledger recorded as spent on this single clean run
    with sqlite3.connect(data / "cache" / "model_calls.sqlite") as ledger:
        spent = dict(
            ledger.execute(
                "SELECT role, sum(cost_usd) FROM ledger WHERE model_id = 'omni' AND cached = 0 AND ok = 1 GROUP BY role"
            ).fetchall()
        )
    assert omni["eyt_cost_usd"] > 0 and omni["eyt_cost_usd"] == pytest.approx(spent["target"])
    assert omni["speech_cost_usd"] > 0 and omni["speech_cost_usd"] == pytest.approx(spent["speech_target"])
    for path in data.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
