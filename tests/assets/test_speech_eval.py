"""SpeechEQ evaluation end to end: items built on the embedded defaults (template text, espeak-ng, librosa),
then the two embedded chooser baselines and an end-to-end audio model behind a localhost OpenAI-compatible
server, each materialised as a partition of speech.slm_choices, then the SEQ reports; checked with SQL."""

import base64
import json
from pathlib import Path

import duckdb
import pytest
import yaml
from dagster import DagsterInstance, materialize

from assets.speech_eq.partitions import SPEECH_TARGETS_PARTITION
from eyt_dagster.definitions import ASSETS
from eyt_dagster.jobs import SEQ_REPORT_ASSETS, SPEECH_BUILD_ASSETS, SPEECH_EVAL_ASSETS
from resources.storage.data_paths import resolve_path_columns

from support.localhost_server import chat_completion, serve
from support.pipeline import resources_for
from support.slates import write_slate

pytestmark = pytest.mark.materialisation

SUBSCALE = "interpersonal_empathy"
BASELINES = ["random-chooser-baseline", "acoustic-chooser-baseline"]
REMOTE = "omni-stub"


class ListeningModel:
    """A stand-in audio model behind the stub server: it decodes every input_audio part and answers the
    option whose bytes are a resonant clip of the warehouse (so it is always right), except that it answers
    prose, never JSON, for one chosen item (a parse failure)."""

    def __init__(self, resonant: dict[bytes, str], spoiled_text: str) -> None:
        self.resonant = resonant
        self.spoiled_text = spoiled_text
        self.requests: list[dict] = []

    def spoiled(self, body: dict) -> bool:
        """Whether the request is about the chosen item (answered in prose)."""
        texts = " ".join(
            p["text"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
            if p["type"] == "text"
        )
        return self.spoiled_text in texts

    def __call__(self, body: dict) -> dict:
        self.requests.append(body)
        if self.spoiled(body):
            return chat_completion("I think the second voice sounds better.", prompt_tokens=900, completion_tokens=8)
        last = body["messages"][-1]["content"]
        audio = [base64.b64decode(p["input_audio"]["data"]) for p in last if p["type"] == "input_audio"]
        option = 1 if audio[-2] in self.resonant else 2
        reply = {
            "acoustic_profile_1": "heard",
            "acoustic_profile_2": "heard",
            "situational_demand": "a fitting voice",
            "reasoning": "listened",
            "selected_option": option,
        }
        return chat_completion(json.dumps(reply), prompt_tokens=900, completion_tokens=12)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    directory = tmp_path_factory.mktemp("speech_eval")
    instance = DagsterInstance.ephemeral()
    slate = write_slate(directory)
    resources = resources_for(slate, directory)
    assert materialize(
        ASSETS, selection=SPEECH_BUILD_ASSETS, partition_key=SUBSCALE, resources=resources, instance=instance
    ).success
    with duckdb.connect(str(directory / "eyt.duckdb"), read_only=True) as con:
        items = resolve_path_columns(
            con.execute("SELECT * FROM speech.eq_items ORDER BY dataset_id").df(), directory
        )  # clip paths are stored relative to the data directory
    resonant = {
        Path(p).read_bytes(): "resonant" for p in [*items["turn4_resonant_path"], *items["turn6_resonant_path"]]
    }
    model = ListeningModel(resonant, spoiled_text=situation(items.iloc[0]))
    with serve(model) as server:
        remote = {
            "id": REMOTE,
            "provider": "openai",
            "base_url": server.base_url,
            "model": "omni-stub-model",
            "family": "stub-omni",
            "benchmarks": ["speech_eq"],
            "speech_input": "audio",
            "parse_retries": 1,
            "price_in_per_mtok": 1.0,
            "price_out_per_mtok": 4.0,
            "max_concurrency": 2,
        }
        data = yaml.safe_load(slate.read_text())
        data["targets"].append(remote)
        slate.write_text(yaml.safe_dump(data, sort_keys=False))
        resources = resources_for(slate, directory)
        instance.add_dynamic_partitions(SPEECH_TARGETS_PARTITION, [*BASELINES, REMOTE])
        for target in [*BASELINES, REMOTE]:
            assert materialize(
                ASSETS, selection=SPEECH_EVAL_ASSETS, partition_key=target, resources=resources, instance=instance
            ).success
        first_pass = len(model.requests)
        spoiled = sum(model.spoiled(body) for body in model.requests)
        # a rerun of the remote partition sends again only the requests whose replies did not validate (the spoiled
        # item's prose: an unusable reply is asked again by a later run); every valid reply is in the call cache
        assert materialize(
            ASSETS, selection=SPEECH_EVAL_ASSETS, partition_key=REMOTE, resources=resources, instance=instance
        ).success
        again = model.requests[first_pass:]
        # (the spoiled item's first requests in json_schema mode are not repeated: the endpoint learnt to spell the
        # schema out in the prompt, and that is how the rerun asks)
        assert spoiled > 0 and 0 < len(again) <= spoiled and all(model.spoiled(body) for body in again)
    # a human ranking of the three targets (invented for the test: the listening model first)
    ranking = directory / "ranking.csv"
    ranking.write_text(f"target,rank\n{REMOTE},1\nacoustic-chooser-baseline,2\nrandom-chooser-baseline,3\n")
    data = yaml.safe_load(slate.read_text())
    data["speech"] = {
        **data.get("speech", {}),
        "evaluation": {**data["speech"]["evaluation"], "human_ranking": str(ranking)},
    }
    slate.write_text(yaml.safe_dump(data, sort_keys=False))
    resources = resources_for(slate, directory)
    assert materialize(ASSETS, selection=SEQ_REPORT_ASSETS, resources=resources, instance=instance).success
    con = duckdb.connect(str(directory / "eyt.duckdb"), read_only=True)
    yield {"con": con, "items": items, "model": model, "first_pass": first_pass}
    con.close()


def situation(row) -> str:
    """The item's situation text: the only words an audio model reads that tell one item from another."""
    return json.loads(row["scenario_json"])["description"]


def q(con, sql):
    return con.execute(sql).fetchall()


def test_every_target_answered_every_item_round_order_and_mode(evaluated):
    con, n = evaluated["con"], len(evaluated["items"])
    assert n >= 2
    rows = dict(q(con, "SELECT target, count(*) FROM speech.slm_choices GROUP BY target"))
    # both orders x (round 1 twice, round 2 sequential and direct) per item
    assert rows == {t: n * 2 * 4 for t in [*BASELINES, REMOTE]}
    assert q(con, "SELECT DISTINCT condition FROM speech.slm_choices") == [("default",)]
    bad = q(
        con,
        "SELECT count(*) FROM speech.slm_choices WHERE correct_option <> CASE WHEN option1 = 'resonant' "
        "THEN 1 ELSE 2 END",
    )
    assert bad == [(0,)]


def test_the_audio_model_heard_the_right_clips_and_was_scored(evaluated):
    con, items, model = evaluated["con"], evaluated["items"], evaluated["model"]
    first = items.iloc[1]  # not the spoiled item
    # its round-1 request (seeded order): turns 1-3 then the two turn-4 candidates, as the exact file bytes
    for body in model.requests:
        user = body["messages"][1]["content"]
        heard = [base64.b64decode(p["input_audio"]["data"]) for p in user if p["type"] == "input_audio"]
        if len(body["messages"]) == 2 and heard[0] == Path(first["turn1_path"]).read_bytes():
            break
    else:
        pytest.fail("no round-1 request for the item")
    assert heard[:3] == [Path(first[f"turn{t}_path"]).read_bytes() for t in (1, 2, 3)]
    assert sorted(heard[3:]) == sorted(Path(first[f"turn4_{r}_path"]).read_bytes() for r in ("resonant", "dissonant"))
    scored = q(
        con,
        f"SELECT count(*), sum(correct::INT), sum(parse_failed::INT) FROM speech.slm_choices "
        f"WHERE target = '{REMOTE}' AND item_id = '{first['dataset_id']}'",
    )
    assert scored == [(8, 8, 0)]
    assert q(
        con,
        f"SELECT min(tokens), max(cost_usd) > 0 FROM speech.slm_choices WHERE target = '{REMOTE}' AND NOT parse_failed",
    ) == [(912, True)]


def test_round2_requests_carry_the_chosen_or_the_correct_turn4_clip(evaluated):
    items, model = evaluated["items"], evaluated["model"]
    resonant4 = {Path(p).read_bytes() for p in items["turn4_resonant_path"]}
    dissonant4 = {Path(p).read_bytes() for p in items["turn4_dissonant_path"]}
    spoiled = situation(items.iloc[0])
    seen = {"resonant": 0, "dissonant": 0}
    for body in model.requests[: evaluated["first_pass"]]:  # the first evaluation (the rerun asks the spoiled again)
        if len(body["messages"]) != 4 or isinstance(body["messages"][3]["content"], str):
            continue  # round 1, or a re-ask after a reply that did not parse
        last = body["messages"][3]["content"]
        history = base64.b64decode(next(p for p in last if p["type"] == "input_audio")["input_audio"]["data"])
        assert history in resonant4 | dissonant4
        seen["resonant" if history in resonant4 else "dissonant"] += 1
        # the model is always right unless it was the spoiled item, whose sequential history holds the wrong clip
        texts = json.dumps(body["messages"][1]["content"])
        if history in dissonant4:
            assert spoiled in texts
    assert seen["resonant"] > 0 and seen["dissonant"] == 2  # the spoiled item's sequential round 2, both orders


def test_parse_failures_are_wrong_and_reported(evaluated):
    con = evaluated["con"]
    failed = q(
        con,
        f"SELECT count(*), bool_and(NOT correct), bool_and(selected_option IS NULL) FROM speech.slm_choices "
        f"WHERE target = '{REMOTE}' AND parse_failed",
    )
    assert failed[0][0] > 0 and failed[0][1] and failed[0][2]
    rate = q(con, f"SELECT parse_failure_rate FROM speech.seq_leaderboard WHERE target = '{REMOTE}'")[0][0]
    expected = q(
        con, f"SELECT avg(parse_failed::INT) FROM speech.slm_choices WHERE target = '{REMOTE}' AND NOT shared_call"
    )[0][0]
    assert rate == pytest.approx(expected) and rate > 0


def test_leaderboard_has_every_target_chance_and_the_cohort(evaluated):
    con = evaluated["con"]
    board = con.execute("SELECT * FROM speech.seq_leaderboard ORDER BY target").df().set_index("target")
    assert set(board.index) == {*BASELINES, REMOTE, "chance"}
    assert board.loc["chance", ["acc1", "acc2", "acc_traj"]].tolist() == [0.5, 0.5, 0.25]
    assert bool(board.loc["random-chooser-baseline", "is_baseline"]) and not bool(board.loc[REMOTE, "is_baseline"])
    # the cohort is the one model evaluated; the baselines and chance are placed on its scale (MAD 0: 100)
    assert set(board["seq_cohort"]) == {REMOTE} and set(board["seq_cohort_kind"]) == {"models"}
    assert board["in_seq_cohort"].tolist() == [t == REMOTE for t in board.index]
    assert board.loc[REMOTE, "acc_traj"] >= board.loc["random-chooser-baseline", "acc_traj"]
    assert board.loc[REMOTE, "seq"] == 100.0
    # the reply format is recorded in the rows and the leaderboard
    assert q(con, "SELECT DISTINCT reply_format FROM speech.slm_choices") == [("paper",)]
    assert board.drop(index="chance")["reply_format"].tolist() == ["paper"] * 3
    profiles = q(
        con,
        f"SELECT DISTINCT acoustic_profile_1 FROM speech.slm_choices WHERE target = '{REMOTE}' AND NOT parse_failed",
    )
    assert profiles == [("heard",)]
    # the leaderboard's accuracy is the table's, recomputed in SQL (headline: seeded order, sequential)
    acc1 = q(
        con,
        f"SELECT avg(correct::INT) FROM speech.slm_choices WHERE target = '{REMOTE}' AND round = 1 "
        "AND \"order\" = 'seeded' AND inference = 'sequential'",
    )[0][0]
    assert board.loc[REMOTE, "acc1"] == pytest.approx(acc1)
    assert board.loc["acoustic-chooser-baseline", "position_bias_rate"] == pytest.approx(0.0)


def test_breakdown_covers_the_subscale_and_its_composite(evaluated):
    con = evaluated["con"]
    levels = q(
        con,
        "SELECT DISTINCT level, name FROM speech.seq_breakdown WHERE target = 'acoustic-chooser-baseline' "
        "ORDER BY level",
    )
    assert levels == [("composite", "interpersonal"), ("subscale", SUBSCALE)]


def test_human_ranking_is_correlated_with_every_metric(evaluated):
    con = evaluated["con"]
    rows = con.execute(
        "SELECT metric, n_targets, rho, item_scope, n_scope_items FROM speech.seq_human_alignment ORDER BY metric"
    ).df()
    assert rows["metric"].tolist() == ["acc1", "acc2", "acc_traj", "seq"]
    assert (rows["n_targets"] == 3).all()
    # the ranking file names no items: every item counts
    assert set(rows["item_scope"]) == {"all"} and set(rows["n_scope_items"]) == {len(evaluated["items"])}
    board = con.execute("SELECT * FROM speech.seq_leaderboard WHERE target <> 'chance'").df()
    for metric, rho in zip(rows["metric"], rows["rho"]):
        constant = board[metric].nunique() == 1  # a metric that does not separate the targets has no rank order
        assert (rho != rho) == constant and (constant or -1 <= rho <= 1), metric
