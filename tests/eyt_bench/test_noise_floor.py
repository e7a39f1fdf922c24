"""The noise floor: repeated plays and verdicts (slate `repeats`, `judge_repeats`), the variance decomposition,
pass^k, and that `repeats: 1` changes nothing."""

import json

import duckdb
import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core.explorer_links import dialogue_path
from eyt_dagster.core.samples import sample_seed
from eyt_dagster.explorer.app import create_app
from eyt_dagster.eyt_bench import noise_floor as nf
from eyt_dagster.eyt_bench.repeats import samples
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from eyt_dagster.slate import default_slate_path, load_slate

from support.asgi_get import get
from support.localhost_server import serve
from support.pipeline import materialize_all
from support.role_play import RolePlay
from support.slates import KEY, STUB_ENDPOINT, remote, write_slate

# -- the decomposition, by hand ---------------------------------------------------------------------------


@pytest.mark.unit
def test_components_match_a_hand_computed_case():
    # ChatSEED 0: repeats (1, 3) and (5, 7) over two judge samples; ChatSEED 1: (2, 2) and (4, 4).
    y = np.array([[[1, 3], [5, 7]], [[2, 2], [4, 4]]], dtype=float)
    # ybar_sr = [[2, 6], [2, 4]], ybar_s = [4, 3], grand mean 3.5
    # MS_judge = (1+1+1+1+0+0+0+0) / (2*2*1) = 1
    # MS_rep = 2 * ((2-4)^2 + (6-4)^2 + (2-3)^2 + (4-3)^2) / (2*1) = 10  -> within = (10 - 1) / 2 = 4.5
    # MS_seed = 4 * (0.5^2 + 0.5^2) / 1 = 2  -> between = max(0, (2 - 10) / 4) = 0
    got = nf.components(y)
    assert got == {"between": 0.0, "within": pytest.approx(4.5), "judge": pytest.approx(1.0)}


@pytest.mark.unit
def test_components_without_repeats_put_everything_between():
    y = np.array([[[1.0]], [[3.0]], [[8.0]]])
    got = nf.components(y)
    assert got["between"] == pytest.approx(np.var([1, 3, 8], ddof=1))
    assert np.isnan(got["within"]) and np.isnan(got["judge"])


@pytest.mark.unit
def test_components_recover_known_variances_on_simulated_data():
    rng = np.random.default_rng(3)
    s, r, q = 4000, 3, 2
    y = (
        rng.normal(0, 2.0, (s, 1, 1))  # between: sd 2
        + rng.normal(0, 1.0, (s, r, 1))  # within: sd 1
        + rng.normal(0, 0.5, (s, r, q))  # judge: sd 0.5
    )
    got = nf.components(y)
    assert got["between"] == pytest.approx(4.0, rel=0.06)
    assert got["within"] == pytest.approx(1.0, rel=0.06)
    assert got["judge"] == pytest.approx(0.25, rel=0.06)


def _samples(values):
    """A samples frame of one cell from {(seed_id, repeat, judge_repeat): (empathy, completed)}."""
    rows = [
        {
            "target": "t",
            "pool": "p",
            "seed_id": seed_id,
            "repeat": r,
            "judge_repeat": q,
            "empathy": empathy,
            "completed": completed,
            "n_turns": 3,
            "n_judged_turns": 3,
        }
        for (seed_id, r, q), (empathy, completed) in values.items()
    ]
    df = pd.DataFrame(rows)
    for column in ("explicit_correct", "latent_correct", "emotion_correct", "drift", "satisfaction"):
        df[column] = 1.0
    df["persona"] = df["anthropomorphic"] = 50.0
    return df


@pytest.mark.unit
def test_noise_floor_row_uses_only_seeds_with_every_sample():
    df = _samples(
        {
            ("a", 0, 0): (60.0, True),
            ("a", 1, 0): (80.0, True),
            ("b", 0, 0): (20.0, False),
            ("b", 1, 0): (40.0, True),
            ("c", 0, 0): (90.0, True),  # repeat 1 missing (unfinished): left out
        }
    )
    row = nf.noise_floor(df, repeats=2, judge_repeats=1).set_index("metric").loc["empathy"]
    assert row["n_seeds"] == 2 and row["mean"] == pytest.approx(50.0)
    # ybar_s = [70, 30]; MS_rep = ((10^2)*2 + (10^2)*2) / 2 = 200 -> within = 200; MS_seed = 2 * (20^2 * 2) = 1600
    # between = (1600 - 200) / 2 = 700
    assert row["sd_within"] == pytest.approx(np.sqrt(200)) and row["sd_between"] == pytest.approx(np.sqrt(700))
    assert row["share_within"] == pytest.approx(200 / 900) and np.isnan(row["sd_judge"])
    assert row["spread"] == pytest.approx(np.std([60, 80], ddof=1))  # both seeds spread by 20
    assert row["rerun_sd"] == pytest.approx(np.sqrt(200 / 2))


@pytest.mark.unit
def test_pass_hat_k_and_pass_k_by_hand():
    assert nf.pass_hat_k(2, 3, 1) == pytest.approx(2 / 3)
    assert nf.pass_hat_k(2, 3, 2) == pytest.approx(1 / 3)
    assert nf.pass_hat_k(2, 3, 3) == 0.0
    df = _samples(
        {
            **{("a", r, 0): (50.0, True) for r in range(3)},  # 3 of 3
            ("b", 0, 0): (50.0, True),
            ("b", 1, 0): (50.0, False),
            ("b", 2, 0): (50.0, True),  # 2 of 3
            # judge repeats: a majority of the judge samples counts, a tie does not
            ("c", 0, 0): (50.0, True),
            ("c", 0, 1): (50.0, False),
        }
    )
    got = nf.pass_k(df, repeats=3, judge_repeats=2).set_index("k")["pass_k"]
    assert got[1] == pytest.approx((1 + 2 / 3) / 2)
    assert got[2] == pytest.approx((1 + 1 / 3) / 2)
    assert got[3] == pytest.approx(0.5)
    assert (nf.pass_k(df, repeats=3, judge_repeats=2)["n_seeds"] == 2).all()  # c has one play only


@pytest.mark.unit
def test_samples_past_the_cells_own():
    assert samples(1, 1) == []
    assert samples(2, 1) == [(1, 0)]
    assert samples(2, 2) == [(0, 1), (1, 0), (1, 1)]
    assert sample_seed(7, 0) == 7 and sample_seed(7, 2) == 9


# -- end to end, against a sampling endpoint -----------------------------------------------------------


class SamplingRolePlay(RolePlay):
    """RolePlay whose target and judge sample with the request's seed, as a real endpoint at temperature > 0
    does: the target's reply and the judge's scores depend on it."""

    def __call__(self, request):
        role = self.role_of(request)
        seed = request.get("seed") or 0
        if role == "target":
            self.by_role[role] += 1
            return ["A pasta night and a bean chili.", "Try a soup; it keeps for days."][seed % 2]
        if role == "judge_turn":
            self.by_role[role] += 1
            history = json.dumps(request["messages"])
            base = 1.0 if "pasta" in history else 0.5
            scores = {c: base for c in SUBSCORE_COLUMNS}
            scores[SUBSCORE_COLUMNS[0]] = 0.0 if seed % 2 else base  # the judge's own sampling
            return json.dumps({**scores, "rationale": "ok"})
        return super().__call__(request)


def _rows(con, table, order):
    df = con.execute(f"SELECT * EXCLUDE (created_at) FROM {table} ORDER BY {order}").df()
    return df.reset_index(drop=True)


@pytest.fixture(scope="module")
def repeated_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("repeats")
    play = SamplingRolePlay()
    with pytest.MonkeyPatch.context() as monkeypatch, serve(play) as server:
        monkeypatch.setenv("EYT_TEST_KEY", KEY)
        common = dict(
            pools={"nemotron_usa": {"source": "fixture"}},
            dialogues_per_pool=3,
            t_max=4,
            simulator=remote("sim-model", server.base_url, family="fam-sim", **STUB_ENDPOINT),
            targets=[remote("chat-model", server.base_url, family="fam-target", **STUB_ENDPOINT)],
            judges=[remote("judge-model", server.base_url, family="fam-judge", **STUB_ENDPOINT)],
            replacement_judge=None,
        )
        data = tmp_path / "data"
        data.mkdir()
        once = write_slate(tmp_path, **common)
        materialize_all(once, data)
        con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
        before = {
            "turns": _rows(con, "dialogue.dialogue_turns", "seed_id, turn"),
            "scores": _rows(con, "dialogue.dialogue_scores", "seed_id"),
            "repeat_rows": con.execute("SELECT count(*) FROM dialogue.repeat_scores").fetchone()[0],
        }
        con.close()
        first_requests = len(server.chat_requests)
        twice = write_slate(tmp_path, **common, repeats=2, judge_repeats=2)
        materialize_all(twice, data)
        requests = server.chat_requests[first_requests:]
        yield data, before, requests


@pytest.mark.materialisation
def test_repeats_one_is_todays_run_and_more_repeats_change_none_of_its_rows(repeated_run):
    data, before, requests = repeated_run
    assert before["repeat_rows"] == 0
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    pd.testing.assert_frame_equal(_rows(con, "dialogue.dialogue_turns", "seed_id, turn"), before["turns"])
    pd.testing.assert_frame_equal(_rows(con, "dialogue.dialogue_scores", "seed_id"), before["scores"])
    con.close()
    # sample 0's calls came from the cache: every new target request is repeat 1's, every new judge request a
    # judge sample 1 or a verdict on repeat 1's dialogues
    seed = load_slate(default_slate_path()).seed  # write_slate keeps the default slate's seed
    target_seeds = {r.json.get("seed") for r in requests if r.json["model"] == "chat-model-v1"}
    assert target_seeds == {sample_seed(seed, 1)}


@pytest.mark.materialisation
def test_repeated_samples_are_stored_and_decomposed(repeated_run):
    data, _, _ = repeated_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    dialogues = con.execute("SELECT DISTINCT repeat, sample_seed FROM dialogue.repeat_dialogues").fetchall()
    assert dialogues == [(1, sample_seed(load_slate(default_slate_path()).seed, 1))]
    got = con.execute(
        "SELECT repeat, judge_repeat, count(*) FROM dialogue.repeat_scores GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert got == [(0, 1, 3), (1, 0, 3), (1, 1, 3)]
    seed = load_slate(default_slate_path()).seed
    seeds = con.execute(
        "SELECT DISTINCT repeat, judge_repeat, sample_seed, judge_sample_seed FROM dialogue.repeat_scores"
    ).fetchall()
    assert sorted(seeds) == [(r, q, seed + r, seed + q) for r, q in [(0, 1), (1, 0), (1, 1)]]
    floor = con.execute("SELECT * FROM dialogue.noise_floor").df().set_index("metric")
    assert set(floor["n_seeds"]) == {3}
    empathy = floor.loc["empathy"]
    # the target's two samples are judged 1.0 and 0.5 on every sub-score, and the judge's sample 1 zeroes one
    assert empathy["sd_within"] > 0 and empathy["sd_judge"] > 0
    # the objective metrics do not read the judge: no judge spread at all
    assert floor.loc["explicit_acc", "sd_judge"] == 0
    shares = empathy[["share_between", "share_within", "share_judge"]].astype(float).fillna(0).sum()
    assert shares == pytest.approx(1.0)
    passes = con.execute("SELECT k, pass_k FROM dialogue.pass_k ORDER BY k").fetchall()
    assert [k for k, _ in passes] == [1, 2] and passes[1][1] <= passes[0][1]
    con.close()


SQL = __import__("pathlib").Path(__file__).resolve().parents[2] / "sql"
TWIN_KEYS = {"noise_floor": ["target", "pool", "metric"], "pass_k": ["target", "pool", "k"]}
TWIN_COLUMNS = {
    "noise_floor": [c for c in nf.COLUMNS if c not in TWIN_KEYS["noise_floor"]],
    "pass_k": ["repeats", "n_seeds", "pass_k"],
}


@pytest.mark.materialisation
@pytest.mark.parametrize("twin", sorted(TWIN_KEYS))
def test_sql_twins_equal_the_assets_on_repeated_samples(repeated_run, twin):
    data, _, _ = repeated_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    con.execute("SET VARIABLE repeats = 2; SET VARIABLE judge_repeats = 2")
    for name in ("per_dialogue", twin):
        con.execute((SQL / f"{name}.sql").read_text())
    asset = con.execute(f"SELECT * FROM dialogue.{twin}").df()
    from_sql = con.execute(f"SELECT * FROM {twin}_sql").df()
    con.close()
    assert len(asset) == len(from_sql) > 0
    merged = asset.merge(from_sql, on=TWIN_KEYS[twin], suffixes=("", "_sql"))
    assert len(merged) == len(asset)
    for column in TWIN_COLUMNS[twin]:
        left, right = merged[column].astype(float).to_numpy(), merged[f"{column}_sql"].astype(float).to_numpy()
        np.testing.assert_allclose(left, right, rtol=1e-9, atol=1e-9, equal_nan=True, err_msg=f"{twin}.{column}")


@pytest.mark.materialisation
def test_the_dialogue_page_shows_every_sample_and_each_repeated_play(repeated_run):
    data, _, _ = repeated_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    seed_id = con.execute("SELECT min(seed_id) FROM dialogue.dialogue_scores").fetchone()[0]
    replies = con.execute(
        "SELECT DISTINCT response_text FROM dialogue.repeat_dialogues WHERE seed_id = $s", {"s": seed_id}
    ).fetchall()
    con.close()
    app = create_app(data)
    own = get(app, dialogue_path("chat-model", seed_id))
    assert own.status == 200, own.text
    assert "Repeated samples" in own.text and own.text.count("<tr") >= 4  # header + 4 samples
    assert f'href="{dialogue_path("chat-model", seed_id, 1)}"' in own.text.replace("&amp;", "&")
    again = get(app, dialogue_path("chat-model", seed_id, 1))
    assert again.status == 200, again.text
    assert (
        "repeat 1" in again.text
        and f"sample seed {sample_seed(load_slate(default_slate_path()).seed, 1)}" in again.text
    )
    assert all(text in again.text for (text,) in replies)  # repeat 1's own replies (the target's other sample)
    assert get(app, dialogue_path("chat-model", seed_id, 5)).status == 404
    assert get(app, dialogue_path("chat-model", seed_id) + "?repeat=x").status == 400
