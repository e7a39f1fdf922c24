"""Partitions whose calls failed, through the real openai client against the localhost stub server.

First run: every call of target `tgt-fake` fails (an all-failed partition, written first, so the
dialogue_turns table is created from rows that have nothing but errors), and target `tgt-x` fails at turn 3
of one dialogue. Every run still succeeds, the tables keep their contract types, the finished turns of the
broken dialogue are kept (marked incomplete) and left out of judging and metrics. Second run, with the server
healthy: the broken dialogue resumes (its answered calls come from the call cache) and completes."""

from pathlib import Path

import duckdb
import pandas as pd
import pytest
from dagster import AssetKey

from support.localhost_server import StubResponse, serve
from support.pipeline import materialize_all
from support.role_play import RolePlay
from support.slates import remote, write_slate

pytestmark = pytest.mark.materialisation

KEY = "sk-test-partial-00"
NEMO = "nemotron_usa"


# what each remote model gets: the key's variable, and no retries (a failed call stays failed)
FAILING = {"api_key_env": "EYT_TEST_KEY", "max_retries": 0}


def _user_turns(request) -> int:
    return sum(1 for m in request["messages"] if m["role"] == "user")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("partial")
    role_play = RolePlay()
    state = {"broken": True, "victim": None}

    def handler(request):
        role = role_play.role_of(request)
        text = " ".join(m["content"] for m in request["messages"])
        if role == "seed_generation" and state["victim"] is None:
            state["victim"] = request["messages"][-1]["content"].split("Persona:", 1)[-1].strip()[:60]
        if state["broken"] and request["model"] == "tgt-fake-v1":
            return StubResponse(500, {"error": {"message": "no such deployment"}}, {"x-should-retry": "false"})
        if (
            state["broken"]
            and request["model"] == "tgt-x-v1"
            and role == "target"
            and _user_turns(request) == 3
            and state["victim"] in text
        ):
            return StubResponse(500, {"error": {"message": "upstream exploded at turn 3"}}, {"x-should-retry": "false"})
        return role_play(request)

    with pytest.MonkeyPatch.context() as monkeypatch, serve(handler) as server:
        monkeypatch.setenv("EYT_TEST_KEY", KEY)
        slate = write_slate(
            tmp_path,
            pools={NEMO: {"source": "fixture"}},
            dialogues_per_pool=3,
            t_max=4,
            simulator=remote("sim", server.base_url, family="fam-sim", **FAILING),
            # tgt-fake first: its all-failed partition is the first write of dialogue_turns
            targets=[
                remote("tgt-fake", server.base_url, family="fam-a", **FAILING),
                remote("tgt-x", server.base_url, family="fam-b", **FAILING),
            ],
            judges=[remote("judge", server.base_url, family="fam-judge", **FAILING)],
            replacement_judge=None,
        )
        data = tmp_path / "data"
        data.mkdir()
        instance = materialize_all(slate, data)  # raises if any run fails
        con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
        first = {
            name: con.execute(f"SELECT * FROM dialogue.{name}").df()
            for name in ("dialogue_turns", "judge_verdicts", "final_intent_verdicts", "dialogue_scores", "leaderboard")
        }
        sql = Path(__file__).parents[2] / "sql"
        for name in ("turn_dimensions", "leaderboard"):
            con.execute((sql / f"{name}.sql").read_text())
        first["leaderboard_sql"] = con.execute("SELECT * FROM leaderboard_sql ORDER BY pool, target").df()
        first["types"] = dict(
            con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = 'dialogue' AND table_name = 'dialogue_turns'"
            ).fetchall()
        )
        con.close()
        logs = "\n".join(r.user_message for run in instance.get_runs() for r in instance.all_logs(run.run_id))
        before = len(server.chat_requests)
        state["broken"] = False
        materialize_all(slate, data, instance)
        resent = [r.json for r in server.chat_requests[before:]]
        with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
            second = {
                name: con.execute(f"SELECT * FROM dialogue.{name}").df()
                for name in ("dialogue_turns", "dialogue_scores", "leaderboard")
            }
        yield {
            "first": first,
            "second": second,
            "logs": logs,
            "resent": resent,
            "instance": instance,
            "victim": state["victim"],
        }


def _cell(df: pd.DataFrame, target: str) -> pd.DataFrame:
    return df[df["target"] == target]


def test_an_all_failed_partition_is_reported_clearly_and_stored_with_contract_types(runs):
    first, logs = runs["first"], runs["logs"]
    fake = _cell(first["dialogue_turns"], "tgt-fake")
    assert len(fake) == 3 and (fake["turn"] == 0).all() and fake["error"].str.contains("no such deployment").all()
    assert not fake["complete"].any()
    assert "0 of 3 dialogues finished in nemotron_usa|tgt-fake; see dialogue.dialogue_turns.error" in logs
    assert (fake["error_role"] == "target").all() and (fake["error_kind"] == "http").all()
    # the cell has a leaderboard row that says why it has no numbers
    row = first["leaderboard"].set_index("target").loc["tgt-fake"]
    assert row["n_dialogues"] == 0 and row["n_errors"] == 3 and row["failures"] == "target: 3 HTTP errors"
    assert pd.isna(row["ficr"]) and pd.isna(row["empathy"]) and pd.isna(row["explicit_acc"])
    twin = first["leaderboard_sql"].set_index("target")  # sql/leaderboard.sql has the row too
    assert twin.loc["tgt-fake", "n_dialogues"] == 0 and pd.isna(twin.loc["tgt-fake", "empathy"])
    assert twin.loc["tgt-x", "n_dialogues"] == 2
    # the table was created from the contract, not from the all-missing first write
    assert '"NULL"' not in first["types"].values()
    assert first["types"]["user_text"] == first["types"]["error"] == "VARCHAR"
    assert first["types"]["turn"] == "BIGINT" and first["types"]["complete"] == "BOOLEAN"
    assert _cell(first["judge_verdicts"], "tgt-fake").empty and _cell(first["dialogue_scores"], "tgt-fake").empty
    meta = [
        r.asset_materialization.metadata
        for r in runs["instance"].fetch_materializations(AssetKey(["dialogue", "dialogue_turns"]), limit=10).records
        if r.asset_materialization.partition == "nemotron_usa|tgt-fake"
    ]
    assert meta and meta[-1]["finished_dialogues"].value == 0 and meta[-1]["failed_dialogues"].value == 3


def test_a_dialogue_failing_at_turn_3_keeps_its_turns_marked_incomplete(runs):
    first, victim = runs["first"], runs["victim"]
    turns = _cell(first["dialogue_turns"], "tgt-x")
    broken_id = turns.loc[turns["error"].notna(), "seed_id"].unique()
    assert len(broken_id) == 1
    broken = turns[turns["seed_id"] == broken_id[0]].sort_values("turn")
    assert list(broken["turn"]) == [0, 1, 2] and not broken["complete"].any()
    assert "upstream exploded at turn 3" in broken["error"].iloc[0]
    assert victim in broken["user_text"].iloc[1]  # the first query names the failing persona
    others = turns[turns["seed_id"] != broken_id[0]]
    assert others["complete"].all() and others["error"].isna().all()
    # left out of judging and of every metric
    assert broken_id[0] not in set(first["judge_verdicts"]["seed_id"])
    assert broken_id[0] not in set(first["final_intent_verdicts"]["seed_id"])
    assert sorted(_cell(first["dialogue_scores"], "tgt-x")["seed_id"]) == sorted(others["seed_id"].unique())
    board = first["leaderboard"].set_index("target")
    assert board.loc["tgt-x", "n_dialogues"] == 2 and board.loc["tgt-x", "n_errors"] == 1
    assert board.loc["tgt-x", "failures"] == "target: 1 HTTP error"
    assert "2 of 3 dialogues finished in nemotron_usa|tgt-x" in runs["logs"]


def test_a_rerun_resumes_from_the_call_cache_and_completes(runs):
    second, resent = runs["second"], runs["resent"]
    turns = second["dialogue_turns"]
    assert turns["error"].isna().all() and turns["complete"].all()
    assert turns.groupby(["target", "seed_id"])["turn"].max().eq(3).all()  # the stub ends every dialogue at 3
    # tgt-x: only the failed call (turn 3's reply of the broken dialogue) went out again; turns 1-2 and turn 3's
    # perception came from the call cache
    x_calls = [r for r in resent if r["model"] == "tgt-x-v1"]
    assert len(x_calls) == 1 and _user_turns(x_calls[0]) == 3 and runs["victim"] in str(x_calls[0]["messages"])
    assert len(second["dialogue_scores"]) == 6
    assert second["leaderboard"].set_index("target")["n_dialogues"].to_dict() == {"tgt-fake": 3, "tgt-x": 3}
    assert second["leaderboard"]["failures"].isna().all() and (second["leaderboard"]["n_errors"] == 0).all()
