"""The spoken EYT-Bench in Chinese: a Chinese pool voiced with espeak-ng's Mandarin voice, heard by a cascade
whose recogniser can write Chinese, judged and scored as the text benchmark scores that pool, its recognition
errors counted in characters (CER); a cascade whose recogniser writes English only is kept off Chinese pools."""

import re
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from dagster import DagsterInstance, materialize

from assets.eyt_bench.partitions import TARGETS_PARTITION
from assets.eyt_voice.partitions import VOICE_TARGETS_PARTITION, voice_cell_key
from eyt_dagster.eyt_bench.prompts import prompt_hash
from eyt_dagster.eyt_voice.error_rates import tokens
from eyt_dagster.eyt_voice.gap import asr_errors
from eyt_dagster.eyt_voice.settings import PACKAGED_ASR, english_only_asr
from eyt_dagster.jobs import POOL_ASSETS, VOICE_ASSETS, VOICE_REPORT_ASSETS
from eyt_dagster.ops.run_plan import eyt_runs
from eyt_dagster.slate import load_slate

from support.pipeline import resources_for, slate_assets
from support.slates import write_slate

CJK = re.compile(r"[\u4e00-\u9fff]")
POOL = "cped"
HEARS_CHINESE = "reference-cascade"  # reference transcripts: a recogniser that writes what was said, in any language
HEARS_ENGLISH = "whisper-en-cascade"  # the packaged tiny.en


def _target(target_id: str, asr: str | None) -> dict:
    cascade = {"cues": "emo_des", **({"asr_model_path": asr} if asr else {})}
    return {
        "id": target_id,
        "provider": "embedded",
        "model": "reflective",
        "family": "eyt-baseline-target",
        "benchmarks": ["eyt_voice"],
        "speech_input": "cascaded",
        "cascade": cascade,
    }


def _slate(tmp_path: Path) -> Path:
    return write_slate(
        tmp_path,
        pools={"nemotron_usa": {"source": "fixture"}, POOL: {"source": "fixture"}},
        t_max=4,
        targets=[_target(HEARS_CHINESE, None), _target(HEARS_ENGLISH, PACKAGED_ASR)],
        voice={"dialogues_per_pool": 2},
    )


@pytest.mark.unit
def test_english_only_recognisers_are_known_by_name():
    assert english_only_asr(PACKAGED_ASR) and english_only_asr("/models/whisper-small.en/")
    assert not english_only_asr(None) and not english_only_asr("/models/whisper-small")


@pytest.mark.unit
def test_each_voice_target_plays_the_pools_it_can_hear(tmp_path):
    slate = load_slate(_slate(tmp_path))
    assert slate.voice_pools_of(HEARS_CHINESE) == ["nemotron_usa", "cped"]
    assert slate.voice_pools_of(HEARS_ENGLISH) == ["nemotron_usa"]
    voice_targets = [HEARS_CHINESE, HEARS_ENGLISH]
    runs = eyt_runs(
        list(slate.pools),
        [],
        voice_targets=voice_targets,
        voice_pools={t: slate.voice_pools_of(t) for t in voice_targets},
        speech=False,
        reports=False,
    )
    assert [r.label for r in runs if r.job == "eyt_voice"] == [
        f"eyt_voice [nemotron_usa|{HEARS_CHINESE}]",
        f"eyt_voice [cped|{HEARS_CHINESE}]",
        f"eyt_voice [nemotron_usa|{HEARS_ENGLISH}]",
    ]


@pytest.mark.unit
def test_refresh_and_the_automation_leave_the_cells_a_target_cannot_hear_alone(tmp_path):
    from assets.eyt_voice.partitions import voice_target_pool_partitions
    from eyt_dagster.automation import UNHEARD, outside_slate, slate_keys

    keys = slate_keys(load_slate(_slate(tmp_path)))
    assert keys[UNHEARD] == {f"{HEARS_ENGLISH}|{POOL}"}

    def outside(target: str, pool: str) -> list[str]:
        return outside_slate(voice_target_pool_partitions, str(voice_cell_key(target, pool)), keys)

    assert outside(HEARS_ENGLISH, POOL) == [
        f"pool cped for voice target {HEARS_ENGLISH} (its recogniser writes English only)"
    ]
    assert outside(HEARS_ENGLISH, "nemotron_usa") == outside(HEARS_CHINESE, POOL) == []
    assert outside("dropped-target", POOL) == ["target dropped-target"]  # as before: outside the slate, said once


@pytest.fixture(scope="module")
def chinese_voice_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("voice_zh")
    slate = _slate(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(TARGETS_PARTITION, [HEARS_CHINESE, HEARS_ENGLISH])
    instance.add_dynamic_partitions(VOICE_TARGETS_PARTITION, [HEARS_CHINESE, HEARS_ENGLISH])
    resources, assets = resources_for(slate, data), slate_assets(slate)
    materialize(assets, selection=POOL_ASSETS, partition_key=POOL, resources=resources, instance=instance)
    cell = str(voice_cell_key(HEARS_CHINESE, POOL))
    materialize(assets, selection=VOICE_ASSETS, partition_key=cell, resources=resources, instance=instance)
    materialize(assets, selection=VOICE_REPORT_ASSETS, resources=resources, instance=instance)
    return slate, data, instance


def _table(data: Path, sql: str) -> pd.DataFrame:
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    try:
        return con.execute(sql).df()
    finally:
        con.close()


@pytest.mark.materialisation
def test_a_chinese_pool_is_voiced_in_mandarin_and_its_errors_are_counted_in_characters(chinese_voice_run):
    _, data, _ = chinese_voice_run
    turns = _table(data, "SELECT * FROM voice.voiced_turns WHERE turn > 0 ORDER BY seed_id, turn")
    assert turns["seed_id"].nunique() == 2 and len(turns) >= 4
    # the simulator speaks Chinese, espeak-ng's Mandarin voice says it, and the clips are real audio
    assert all(len(CJK.findall(text)) > len(text) / 3 for text in turns["user_text"])
    assert turns["voice"].str.startswith("cmn").all()
    assert all((data / p).is_file() for p in turns["clip_path"]) and (turns["clip_duration_s"] > 0.3).all()
    # reference transcripts: what was said, so no errors; the reference length is its Chinese characters
    assert (turns["error_unit"] == "character").all() and (turns["word_errors"] == 0).all()
    assert list(turns["ref_words"]) == [len(tokens(text, "zh")) for text in turns["user_text"]]
    assert (turns["asr_transcript"] == turns["user_text"]).all()
    assert set(turns["prompt_hash"]) == {prompt_hash("simulator", "perception", "target", language="zh")}


@pytest.mark.materialisation
def test_the_recognition_report_gives_a_character_error_rate_for_a_chinese_pool(chinese_voice_run):
    _, data, _ = chinese_voice_run
    row = _table(data, f"SELECT * FROM voice.asr_errors WHERE pool = '{POOL}'").iloc[0]
    assert row["target"] == HEARS_CHINESE and row["error_unit"] == "character"
    assert row["cer"] == 0.0 and pd.isna(row["wer"]) and row["ref_words"] > 0
    con = duckdb.connect(str(data / "eyt.duckdb"), read_only=True)
    con.execute((Path(__file__).resolve().parents[2] / "sql" / "asr_errors.sql").read_text())
    twin = con.execute(f"SELECT * FROM asr_errors_sql WHERE pool = '{POOL}'").df().iloc[0]
    con.close()
    assert twin["error_unit"] == "character" and twin["cer"] == 0.0 and pd.isna(twin["wer"])
    assert twin["ref_words"] == row["ref_words"]


@pytest.mark.materialisation
def test_a_chinese_voice_cell_is_judged_and_scored_like_the_pool_in_text(chinese_voice_run):
    slate_path, data, _ = chinese_voice_run
    slate = load_slate(slate_path)
    verdicts = _table(data, "SELECT * FROM voice.judge_verdicts")
    assert set(verdicts["mode"]) == {"voice", "text"} and verdicts["error"].isna().all()
    assert set(verdicts["prompt_hash"]) == {prompt_hash("judge_turn", language=slate.judge_prompt_language)}
    scores = _table(data, "SELECT * FROM voice.dialogue_scores")
    assert scores.groupby("mode").size().to_dict() == {"text": 2, "voice": 2}
    assert scores["drift"].notna().all()
    gap = _table(data, f"SELECT * FROM voice.voice_gap WHERE pool = '{POOL}'")
    assert len(gap) > 0 and gap["n_paired"].max() == 2
    text = _table(data, "SELECT * FROM voice.text_turns WHERE turn > 0")
    assert all(len(CJK.findall(t)) > len(t) / 3 for t in text["user_text"])


@pytest.mark.materialisation
def test_the_explorer_shows_a_chinese_cells_character_error_rate_and_its_mandarin_clips(chinese_voice_run):
    import html

    from eyt_dagster.core.explorer_links import voice_dialogue_path, voice_path
    from eyt_dagster.explorer.app import create_app

    from support.asgi_get import get

    _, data, _ = chinese_voice_run
    app = create_app(data)
    board = get(app, voice_path())
    assert board.status == 200, board.text
    rows = [r for r in board.text.split("<tr>") if f"<td>{POOL}</td>" in r and "characters" in r]
    assert rows and "CER" in rows[0] and "WER" not in rows[0]
    turns = _table(data, "SELECT * FROM voice.voiced_turns WHERE turn > 0 ORDER BY seed_id, turn")
    seed_id = turns["seed_id"].iloc[0]
    page = get(app, voice_dialogue_path(HEARS_CHINESE, seed_id))
    assert page.status == 200, page.text
    first = turns[turns["seed_id"] == seed_id].iloc[0]
    assert html.escape(first["user_text"]) in page.text  # the Chinese words, escaped as every model text is
    assert f"0 character errors of {first['ref_words']}" in page.text


@pytest.mark.materialisation
def test_a_cascade_that_writes_english_only_is_refused_a_chinese_pool(chinese_voice_run):
    slate, data, instance = chinese_voice_run
    cell = str(voice_cell_key(HEARS_ENGLISH, POOL))
    with pytest.raises(Exception, match=r"whisper-en-cascade.*writes English only.*'cped' is played in 'zh'"):
        materialize(
            slate_assets(slate),
            selection=VOICE_ASSETS,
            partition_key=cell,
            resources=resources_for(slate, data),
            instance=instance,
        )


@pytest.mark.unit
def test_recognition_errors_by_hand_in_characters_and_in_words():
    def turn(pool, unit, ref, errors, seed="s", n=1, right=True):
        return {
            "target": "t",
            "pool": pool,
            "seed_id": seed,
            "turn": n,
            "error": None,
            "complete": True,
            "error_unit": unit,
            "ref_words": ref,
            "word_errors": errors,
            **{f"gold_{label}": "a" for label in ("explicit_intent", "latent_intent", "emotion")},
            **{f"pred_{label}": "a" if right else "b" for label in ("explicit_intent", "latent_intent", "emotion")},
        }

    rows = [
        turn("cped", "character", 12, 0, n=1),
        turn("cped", "character", 8, 2, n=2, right=False),
        turn("nemotron_usa", "word", 10, 1, n=1),
    ]
    got = asr_errors(pd.DataFrame(rows)).set_index("pool")
    assert got.loc["cped", "cer"] == pytest.approx(2 / 20) and np.isnan(got.loc["cped", "wer"])
    assert got.loc["cped", "emotion_acc_clean"] == 1.0 and got.loc["cped", "emotion_acc_misheard"] == 0.0
    assert got.loc["nemotron_usa", "wer"] == pytest.approx(0.1) and np.isnan(got.loc["nemotron_usa", "cer"])
    # a partition written before units were recorded counted words
    old = pd.DataFrame([turn("nemotron_usa", None, 4, 1)])
    assert asr_errors(old).iloc[0]["error_unit"] == "word"
    with pytest.raises(ValueError, match="more than one unit"):
        asr_errors(pd.DataFrame([turn("p", "word", 3, 0), turn("p", "character", 3, 0, n=2)]))


# -- a remote audio target and remote voicing, in Chinese, through the localhost server -----------------------


@pytest.mark.materialisation
def test_a_remote_audio_target_hears_a_chinese_pool_with_the_chinese_prompts(tmp_path, monkeypatch, localhost_server):
    from test_voice_audio import CHAT_KEY, TTS_KEY, HearingModel, SpeechEndpoint, _distinct
    from test_voice_audio import _target as audio_target

    from eyt_dagster.eyt_bench.prompts import render
    from eyt_dagster.eyt_voice.audio_listener import AUDIO_PERCEPTION_KEY

    monkeypatch.setenv("EYT_TEST_CHAT_KEY", CHAT_KEY)
    monkeypatch.setenv("EYT_TEST_TTS_KEY", TTS_KEY)
    server = localhost_server(HearingModel(), delay_s=0.02, rate_limit=(8, 1.0), speech=SpeechEndpoint())
    tts = {
        "id": "stub-tts",
        "provider": "openai",
        "model": "stub-tts-1",
        "family": "tts",
        "base_url": server.base_url,
        "api_key_env": "EYT_TEST_TTS_KEY",
    }
    slate = write_slate(
        tmp_path,
        pools={POOL: {"source": "fixture"}},
        t_max=3,
        targets=[audio_target("hear-zh", server.base_url)],
        voice={"tts": tts, "dialogues_per_pool": 2},
    )
    data = tmp_path / "data"
    data.mkdir()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(VOICE_TARGETS_PARTITION, ["hear-zh"])
    resources, assets = resources_for(slate, data), slate_assets(slate)
    materialize(assets, selection=POOL_ASSETS, partition_key=POOL, resources=resources, instance=instance)
    cell = str(voice_cell_key("hear-zh", POOL))
    materialize(assets, selection=VOICE_ASSETS, partition_key=cell, resources=resources, instance=instance)
    chats, speech = _distinct(server.chat_requests), _distinct(server.speech_requests)

    def hears(request: dict) -> bool:  # the calls that carry clips (the text control's calls carry none)
        return any(
            isinstance(m["content"], list) and any(p["type"] == "input_audio" for p in m["content"])
            for m in request["messages"]
        )

    heard = [r for r in chats if hears(r)]
    perceive = [r for r in heard if (r.get("response_format") or {}).get("type") == "json_schema"]
    replies = [r for r in heard if not r.get("response_format")]
    assert perceive and replies
    # perception: the Chinese audio-perception prompt, its closing instruction in Chinese after the clips
    assert {r["messages"][0]["content"] for r in perceive} == {render(AUDIO_PERCEPTION_KEY, "system", "zh")}
    assert all(CJK.search(r["messages"][-1]["content"][-1]["text"]) for r in perceive)
    assert {r["messages"][0]["content"] for r in replies} == {render("target", "system", "zh")}
    # the endpoint voices the Chinese words; the tone instruction is the emotion's English direction
    assert speech and all(len(CJK.findall(r["input"])) > len(r["input"]) / 3 for r in speech)
    assert all(r["instructions"] and r["instructions"].isascii() for r in speech)
    turns = _table(data, "SELECT * FROM voice.voiced_turns WHERE turn > 0")
    assert len(turns) and turns["error"].isna().all() and turns["asr_transcript"].isna().all()
    assert (turns["error_unit"] == "character").all()
    assert set(turns["prompt_hash"]) == {prompt_hash("simulator", "perception", "target", language="zh")}
