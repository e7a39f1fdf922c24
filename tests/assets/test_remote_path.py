"""The graph against a real OpenAI-compatible HTTP server on localhost, through the real openai client."""

import duckdb
import pytest

from eyt_dagster.eyt_bench.prompts import render

from support.localhost_server import StubResponse, serve
from support.pipeline import materialize_all
from support.role_play import RolePlay
from support.slates import KEY, STUB_ENDPOINT, remote, write_slate

pytestmark = pytest.mark.materialisation


@pytest.fixture(scope="module")
def remote_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("remote")
    role_play = RolePlay()
    with pytest.MonkeyPatch.context() as monkeypatch, serve(role_play) as server:
        monkeypatch.setenv("EYT_TEST_KEY", KEY)
        slate = write_slate(
            tmp_path,
            pools={"nemotron_usa": {"source": "fixture"}},
            dialogues_per_pool=2,
            t_max=4,
            simulator=remote("sim-model", server.base_url, family="fam-sim", **STUB_ENDPOINT),
            targets=[
                remote(
                    "chat-model",
                    server.base_url,
                    family="fam-target",
                    **STUB_ENDPOINT,
                    price_in_per_mtok=2.0,
                    price_out_per_mtok=8.0,
                )
            ],
            judges=[remote("judge-model", server.base_url, family="fam-judge", **STUB_ENDPOINT)],
            replacement_judge=remote("judge-b", server.base_url, family="fam-judge-b", **STUB_ENDPOINT),
        )
        data = tmp_path / "data"
        data.mkdir()
        materialize_all(slate, data)
        first = len(server.chat_requests)
        role_counts = dict(role_play.by_role)
        materialize_all(slate, data)  # a rerun: everything is in the call cache
        yield server, data, first, role_counts


def test_remote_models_fill_every_table(remote_run):
    server, data, first, roles = remote_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    turns = con.execute("SELECT * FROM dialogue.dialogue_turns ORDER BY seed_id, turn").df()
    # the stub simulator reports achieved from the second reply on: every dialogue stops after 3 turns
    assert list(turns.groupby("seed_id")["turn"].max()) == [3, 3]
    assert turns["error"].isna().all() and (turns["target_model"] == "chat-model-v1").all()
    assert roles["seed_generation"] == 2 and roles["perception"] == roles["target"] == 6
    # the primary judge (6 turns + 2 dialogues) and, for the cross-judge ablation, the replacement judge on
    # the sampled dialogues (here all of them): the primary judge is not called again for the ablation
    assert roles["judge_turn"] == 12 and roles["judge_final"] == 4
    by_model = {}
    for r in server.chat_requests[:first]:
        by_model[r.json["model"]] = by_model.get(r.json["model"], 0) + 1
    assert by_model["judge-model-v1"] == 8 and by_model["judge-b-v1"] == 8
    # cost = tokens x price per million, recorded per role
    row = turns.iloc[0]
    assert row["target_cost_usd"] == pytest.approx(
        (row["target_tokens_in"] * 2.0 + row["target_tokens_out"] * 8.0) / 1e6
    )
    board = con.execute("SELECT * FROM dialogue.leaderboard").df()
    assert not board["is_baseline"].any() and board["target_cost_usd"].iloc[0] > 0
    assert board["empathy_unweighted"].iloc[0] == pytest.approx((1 + 0.5 + 1 + 1 + 0.5) * 20)
    con.close()


def test_perception_and_generation_are_separate_requests(remote_run):
    server, *_ = remote_run
    prediction_prompt = render("perception", "system")
    generation = [
        r.json for r in server.chat_requests if r.json["messages"][0]["content"] == render("target", "system")
    ]
    assert generation
    for body in generation:
        assert all(prediction_prompt not in m["content"] for m in body["messages"])
        assert "response_format" not in body
    perception = [r.json for r in server.chat_requests if r.json["messages"][0]["content"] == prediction_prompt]
    assert len(perception) == len(generation)


def test_key_travels_only_in_the_authorization_header(remote_run):
    server, data, *_ = remote_run
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.chat_requests)
    for path in data.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the API key leaked into {path}"


def test_a_rerun_reissues_no_finished_call(remote_run):
    server, _, first, _ = remote_run
    assert first > 0 and len(server.chat_requests) == first


def test_failed_calls_become_error_rows_and_a_rerun_does_only_what_is_missing(tmp_path, monkeypatch, localhost_server):
    """The server fails every call that mentions one persona: its ChatSEED becomes an error row, the other
    dialogues finish; once the server recovers, a rerun sends only that persona's calls."""
    monkeypatch.setenv("EYT_TEST_KEY", KEY)
    role_play = RolePlay()
    state = {"broken": True, "victim": None}

    def handler(request):
        text = " ".join(m["content"] for m in request["messages"])
        if role_play.role_of(request) == "seed_generation" and state["victim"] is None:
            state["victim"] = request["messages"][-1]["content"].split("Persona:", 1)[-1].strip()[:60]
        if state["broken"] and state["victim"] in text:
            return StubResponse(500, {"error": {"message": "upstream exploded"}}, {"x-should-retry": "false"})
        return role_play(request)

    server = localhost_server(handler)
    slate = write_slate(
        tmp_path,
        pools={"nemotron_usa": {"source": "fixture"}},
        dialogues_per_pool=3,
        t_max=3,
        simulator=remote(
            "sim-model", server.base_url, family="fam-sim", api_key_env="EYT_TEST_KEY", max_retries=0, max_concurrency=1
        ),
        targets=[remote("chat-model", server.base_url, family="fam-target", **STUB_ENDPOINT, max_retries=0)],
        judges=[remote("judge-model", server.base_url, family="fam-judge", **STUB_ENDPOINT, max_retries=0)],
    )
    data = tmp_path / "data"
    data.mkdir()
    instance = materialize_all(slate, data)
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        seeds = con.execute("SELECT seed_id, error FROM dialogue.chat_seeds ORDER BY seed_id").df()
        dialogues = con.execute("SELECT count(DISTINCT seed_id) FROM dialogue.dialogue_turns").fetchone()[0]
    failed = seeds[seeds["error"].notna()]
    assert (
        len(failed) == 1
        and "upstream exploded" in failed["error"].iloc[0]
        and failed["error"].iloc[0].startswith("model 'sim-model' (simulator, chat_seed:")
        and "Error" not in failed["error"].iloc[0]  # the model, role and server's reason; no internal class name
    )
    assert dialogues == 2  # the other two dialogues were played and judged

    before = len(server.chat_requests)
    state["broken"] = False
    materialize_all(slate, data, instance)
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM dialogue.chat_seeds WHERE error IS NOT NULL").fetchone() == (0,)
        assert con.execute("SELECT count(DISTINCT seed_id) FROM dialogue.dialogue_turns").fetchone() == (3,)
    resent = [" ".join(m["content"] for m in r.json["messages"]) for r in server.chat_requests[before:]]
    # only the failed persona's seed, dialogue and verdicts were requested again; the rest came from the cache
    assert resent and all(state["victim"] in text for text in resent)
