"""The spoken EYT-Bench with an end-to-end audio target and remote voicing, against a real OpenAI-compatible HTTP
server on localhost (tests/support/localhost_server.py: chat completions enforcing the JSON schema, slow and
rate-limited, and an /audio/speech route), through the real openai client, the real Dagster graph and DuckDB warehouse.

One fixture plays the whole story: a first run in which one dialogue's voicing fails, a rerun after the speech
endpoint recovers, a rerun with nothing to do, and a second audio target added to the slate.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import threading
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from dagster import AssetKey, DagsterInstance, materialize

from assets.eyt_voice.dialogues import AUDIO_PROMPT_HASH, voiced_turns
from assets.eyt_voice.partitions import VOICE_TARGETS_PARTITION, voice_cell_key
from eyt_dagster.definitions import ASSETS
from eyt_dagster.eyt_bench.prompts import prompt_hash, render
from eyt_dagster.eyt_bench.types import UserLabels
from eyt_dagster.eyt_voice.audio_listener import AUDIO_PERCEPTION_KEY
from eyt_dagster.eyt_voice.sampling import seed_voices, voice_seeds
from eyt_dagster.eyt_voice.voicing import voice_instruction
from eyt_dagster.jobs import POOL_ASSETS, VOICE_ASSETS, VOICE_REPORT_ASSETS
from eyt_dagster.slate import load_slate
from resources.audio.tts import OpenAISpeechTTS, pcm_to_wav
from resources.models.chat_client import json_schema_of

from support.json_schema_draw import draw
from support.localhost_server import StubResponse, chat_completion, error_response, serve
from support.pipeline import resources_for
from support.slates import write_slate

POOL = "nemotron_usa"
FIRST, SECOND = "hear-a", "hear-b"
CHAT_KEY = "sk-chat-3f9a1c7e5b2d"
TTS_KEY = "sk-tts-8e4b6d2a0c1f"
PRICE_IN, PRICE_OUT = 3.0, 12.0
SPEECH_RATE = 16000  # the stub's clips: 16 kHz mono 16-bit, 32000 bytes a second
AUDIO_TOKENS_PER_S = 100  # what the stub bills a second of input audio, as prompt tokens


# -- the server ---------------------------------------------------------------------------------------------


def _parts(request: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(role, kind, value) of every message part: text, or the decoded bytes of an input_audio part."""
    out = []
    for message in request["messages"]:
        content = message["content"]
        if isinstance(content, str):
            out.append((message["role"], "text", content))
            continue
        for part in content:
            if part["type"] == "input_audio":
                out.append((message["role"], "audio", base64.b64decode(part["input_audio"]["data"])))
            else:
                out.append((message["role"], "text", part["text"]))
    return out


def usage_of(request: dict[str, Any]) -> tuple[int, int]:
    """(prompt tokens, of which audio) as the stub reports them: a token per word of text, 100 a second of audio."""
    text = sum(len(v.split()) for _, kind, v in _parts(request) if kind == "text")
    audio = sum(
        math.ceil(len(v) / (2 * SPEECH_RATE) * AUDIO_TOKENS_PER_S) for _, kind, v in _parts(request) if kind == "audio"
    )
    return text + audio, audio


def audio_shas(request: dict[str, Any]) -> list[str]:
    return [hashlib.sha256(v).hexdigest() for role, kind, v in _parts(request) if kind == "audio" and role == "user"]


def assistant_texts(request: dict[str, Any]) -> list[str]:
    return [v for role, kind, v in _parts(request) if role == "assistant"]


class HearingModel:
    """A chat server that hears: a JSON-schema request gets an instance of the schema, any other a short reply.
    Both are a function of the messages alone (not of the model), so two targets hearing the same clips answer
    alike, and the simulator writes them the same next turns. Usage reports audio input tokens."""

    @staticmethod
    def content(request: dict[str, Any]) -> str:
        digest = hashlib.sha256(json.dumps(request["messages"], sort_keys=True).encode()).hexdigest()
        response_format = request.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            return json.dumps(draw(response_format["json_schema"]["schema"], random.Random(digest)))
        return f"I hear how that sounds to you. Tell me more ({digest[:6]})."

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        tokens, audio = usage_of(request)
        body = chat_completion(self.content(request), model=request["model"], prompt_tokens=tokens)
        body["usage"]["prompt_tokens_details"] = {"audio_tokens": audio, "cached_tokens": 0}
        return body


class SpeechEndpoint:
    """/audio/speech: a WAV whose tone and length follow the voice, the instructions and the words. It refuses
    (HTTP 400) the words in `broken` while they are set."""

    def __init__(self) -> None:
        self.broken: str | None = None
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> bytes | StubResponse:
        with self._lock:
            if self.broken is not None and request["input"] == self.broken:
                return error_response(400, "the synthesiser refused this text")
        spec = json.dumps([request["voice"], request.get("instructions", ""), request["input"]]).encode()
        seed = int.from_bytes(hashlib.sha256(spec).digest()[:4], "big")
        seconds = 0.2 + 0.04 * len(request["input"].split())
        t = np.arange(int(seconds * SPEECH_RATE)) / SPEECH_RATE
        wave = 0.3 * np.sin(2 * np.pi * (140 + seed % 200) * t) + 0.01 * np.random.default_rng(seed).standard_normal(
            len(t)
        )
        return pcm_to_wav((wave * 32767).astype("<i2").tobytes(), SPEECH_RATE)


# -- the slate ----------------------------------------------------------------------------------------------


def _target(target_id: str, base_url: str) -> dict[str, Any]:
    return {
        "id": target_id,
        "provider": "openai",
        "model": f"{target_id}-v1",
        "family": f"fam-{target_id}",
        "base_url": base_url,
        "api_key_env": "EYT_TEST_CHAT_KEY",
        "max_concurrency": 4,
        "max_retries": 8,
        "price_in_per_mtok": PRICE_IN,
        "price_out_per_mtok": PRICE_OUT,
        "benchmarks": ["eyt_voice"],
        "speech_input": "audio",
    }


def _slate(tmp_path: Path, base_url: str, targets: list[str]) -> Path:
    tts = {
        "id": "stub-tts",
        "provider": "openai",
        "model": "stub-tts-1",
        "family": "tts",
        "base_url": base_url,
        "api_key_env": "EYT_TEST_TTS_KEY",
        "max_retries": 0,
    }
    return write_slate(
        tmp_path,
        pools={POOL: {"source": "fixture"}},
        t_max=3,
        targets=[_target(t, base_url) for t in targets],
        voice={"tts": tts, "dialogues_per_pool": 3},
    )


def _run_cell(slate: Path, data: Path, instance: DagsterInstance, target: str) -> dict[str, Any]:
    materialize(
        ASSETS,
        selection=VOICE_ASSETS,
        partition_key=str(voice_cell_key(target, POOL)),
        resources=resources_for(slate, data),
        instance=instance,
    )
    event = instance.get_latest_materialization_event(AssetKey(["voice", "voiced_turns"]))
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def _table(data: Path, sql: str) -> Any:
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        return con.execute(sql).df()


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("voice-audio")
    speech = SpeechEndpoint()
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        serve(HearingModel(), delay_s=0.05, rate_limit=(6, 1.0), speech=speech) as server,
    ):
        monkeypatch.setenv("EYT_TEST_CHAT_KEY", CHAT_KEY)
        monkeypatch.setenv("EYT_TEST_TTS_KEY", TTS_KEY)
        slate = _slate(tmp_path, server.base_url, [FIRST])
        data = tmp_path / "data"
        data.mkdir()
        server.data = data  # where the tests' helpers find the warehouse
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions(VOICE_TARGETS_PARTITION, [FIRST])
        materialize(
            ASSETS, selection=POOL_ASSETS, partition_key=POOL, resources=resources_for(slate, data), instance=instance
        )
        seeds = voice_seeds(_table(data, "SELECT * FROM dialogue.chat_seeds"), 3)
        victim = seeds[1]
        speech.broken = victim.first_query  # its first turn cannot be voiced: that dialogue stays unfinished

        marks: dict[str, tuple[int, int]] = {}
        meta: dict[str, dict[str, Any]] = {}

        def mark(name: str) -> None:
            marks[name] = (len(server.chat_requests), len(server.speech_requests))

        meta["broken"] = _run_cell(slate, data, instance, FIRST)
        mark("broken")
        broken_rows = _table(data, "SELECT * FROM voice.voiced_turns ORDER BY seed_id, turn")
        speech.broken = None
        meta["recovered"] = _run_cell(slate, data, instance, FIRST)
        mark("recovered")
        meta["rerun"] = _run_cell(slate, data, instance, FIRST)
        mark("rerun")
        slate = _slate(tmp_path, server.base_url, [FIRST, SECOND])
        instance.add_dynamic_partitions(VOICE_TARGETS_PARTITION, [SECOND])
        meta["second"] = _run_cell(slate, data, instance, SECOND)
        mark("second")
        materialize(ASSETS, selection=VOICE_REPORT_ASSETS, resources=resources_for(slate, data), instance=instance)
        yield {
            "server": server,
            "data": data,
            "instance": instance,
            "slate": slate,
            "seeds": seeds,
            "victim": victim,
            "marks": marks,
            "meta": meta,
            "broken_rows": broken_rows,
        }


def _turns(data: Path, target: str) -> Any:
    return _table(
        data, f"SELECT * FROM voice.voiced_turns WHERE target = '{target}' AND turn > 0 ORDER BY seed_id, turn"
    )


def _distinct(recorded) -> list[dict]:
    """The bodies of the requests, each once: a request the rate limit refused is recorded again when retried."""
    seen, out = set(), []
    for r in recorded:
        body = json.dumps(r.json, sort_keys=True)
        if body not in seen:
            seen.add(body)
            out.append(r.json)
    return out


def _plain_clips(data: Path) -> set[str]:
    """The clips the prosody probe voiced in the plain voice (its perception calls end with one of them)."""
    return set(_table(data, "SELECT plain_clip_sha256 FROM voice.prosody_probe")["plain_clip_sha256"].dropna())


def _audio_requests(
    server, start: int = 0, end: int | None = None, model: str | None = None, *, probe: bool = False
) -> list[dict]:
    """The distinct requests that carried audio: the dialogues' own, or (`probe`) the prosody probe's."""
    plain = _plain_clips(server.data)
    return [
        body
        for body in _distinct(server.chat_requests[start:end])
        if audio_shas(body) and (model is None or body["model"] == model) and (audio_shas(body)[-1] in plain) == probe
    ]


def _dialogue_of(request: dict, by_seed: dict[str, Any]) -> tuple[str, int]:
    """The (ChatSEED, turn) an audio request belongs to: the seed whose clips its user turns are, in order."""
    shas = audio_shas(request)
    for seed_id, turns in by_seed.items():
        if list(turns["clip_sha256"])[: len(shas)] == shas:
            return seed_id, len(shas)
    raise AssertionError(f"an audio request whose clips are no dialogue's: {shas}")


# -- end-to-end audio targets -------------------------------------------------------------------------------


@pytest.mark.materialisation
def test_the_target_hears_exactly_the_synthesised_clips_turn_by_turn_in_both_calls(story):
    server, data = story["server"], story["data"]
    turns = _turns(data, FIRST)
    assert turns["seed_id"].nunique() == 3 and turns["error"].isna().all()
    for path, sha in zip(turns["clip_path"], turns["clip_sha256"]):
        assert hashlib.sha256((data / path).read_bytes()).hexdigest() == sha
    by_seed = {seed_id: group for seed_id, group in turns.groupby("seed_id")}
    perception_system = render(AUDIO_PERCEPTION_KEY, "system")
    calls: dict[tuple[str, int, str], int] = {}
    for request in _audio_requests(server, model=f"{FIRST}-v1"):
        seed_id, turn = _dialogue_of(request, by_seed)
        history = by_seed[seed_id]
        # the earlier replies go back as assistant text, between the clips of the user turns
        assert assistant_texts(request) == list(history["response_text"])[: turn - 1]
        roles = [m["role"] for m in request["messages"]]
        assert roles == ["system", *["user", "assistant"] * (turn - 1), "user"]
        if "response_format" in request:  # perception: the audio prompt and UserLabels, enforced by the server
            kind = "perceive"
            assert request["messages"][0]["content"] == perception_system
            assert request["response_format"]["json_schema"]["name"] == "UserLabels"
            last = request["messages"][-1]["content"]
            assert [p["type"] for p in last] == ["input_audio", "text"] and f"turn {turn}" in last[1]["text"]
        else:  # the reply: EYT-Bench's target system prompt, and the dialogue
            kind = "respond"
            assert request["messages"][0]["content"] == render("target", "system")
            assert [p["type"] for p in request["messages"][-1]["content"]] == ["input_audio"]
        assert all(
            p["input_audio"]["format"] == "wav"
            for m in request["messages"][1:]
            if m["role"] == "user"
            for p in m["content"]
            if p["type"] == "input_audio"
        )
        calls[(seed_id, turn, kind)] = calls.get((seed_id, turn, kind), 0) + 1
    answered = {(r.seed_id, int(r.turn)) for r in turns.itertuples()}
    # every answered turn was heard in both calls, each call made once
    assert set(calls) == {(s, t, kind) for s, t in answered for kind in ("perceive", "respond")}
    assert set(calls.values()) == {1}


@pytest.mark.materialisation
def test_perception_labels_are_the_schema_instances_the_server_drew(story):
    turns = _turns(story["data"], FIRST)
    by_seed = {seed_id: group for seed_id, group in turns.groupby("seed_id")}
    schema = json_schema_of(UserLabels)
    perceptions = [r for r in _audio_requests(story["server"], model=f"{FIRST}-v1") if "response_format" in r]
    assert len(perceptions) == len(turns)
    for request in perceptions:
        assert request["response_format"]["json_schema"]["schema"] == schema
        seed_id, turn = _dialogue_of(request, by_seed)
        row = by_seed[seed_id].set_index("turn").loc[turn]
        fields = ("explicit_intent", "latent_intent", "emotion", "intent_description")
        assert {f: row[f"pred_{f}"] for f in fields} == json.loads(HearingModel.content(request))


@pytest.mark.materialisation
def test_the_prosody_probe_asks_an_audio_target_again_with_the_plain_clip_after_the_history_as_heard(story):
    server, data = story["server"], story["data"]
    turns = _turns(data, FIRST)
    by_seed = {seed_id: group.set_index("turn") for seed_id, group in turns.groupby("seed_id")}
    probed = _table(data, f"SELECT * FROM voice.prosody_probe WHERE target = '{FIRST}'")
    assert len(probed) > 0 and probed["error"].isna().all()
    requests = {audio_shas(r)[-1]: r for r in _audio_requests(server, model=f"{FIRST}-v1", probe=True)}
    assert set(requests) == set(probed["plain_clip_sha256"])
    for row in probed.itertuples():
        request, dialogue = requests[row.plain_clip_sha256], by_seed[row.seed_id]
        earlier = [dialogue.loc[t, "clip_sha256"] for t in range(1, row.turn)]
        assert audio_shas(request) == [*earlier, row.plain_clip_sha256]
        assert request["messages"][0]["content"] == render(AUDIO_PERCEPTION_KEY, "system")
        assert row.pred_emotion_plain == json.loads(HearingModel.content(request))["emotion"]
        assert row.pred_emotion_toned == dialogue.loc[row.turn, "pred_emotion"]


@pytest.mark.materialisation
def test_audio_input_tokens_reach_the_target_cost_columns(story):
    server, data = story["server"], story["data"]
    turns = _turns(data, FIRST)
    by_seed = {seed_id: group for seed_id, group in turns.groupby("seed_id")}
    reported: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for request in _audio_requests(server, model=f"{FIRST}-v1"):
        tokens, audio = usage_of(request)
        reported.setdefault(_dialogue_of(request, by_seed), []).append((tokens, audio))
    for row in turns.itertuples():
        calls = reported[(row.seed_id, int(row.turn))]  # perception and reply, as the server reported them
        assert len(calls) == 2 and all(audio > 0 for _, audio in calls)
        assert row.target_tokens_in == sum(tokens for tokens, _ in calls)
        cost = (row.target_tokens_in * PRICE_IN + row.target_tokens_out * PRICE_OUT) / 1e6
        assert row.target_cost_usd == pytest.approx(cost)


@pytest.mark.materialisation
def test_a_rerun_makes_no_call_and_synthesises_no_clip(story):
    marks, meta = story["marks"], story["meta"]
    assert marks["rerun"] == marks["recovered"]
    assert meta["rerun"]["clips_synthesised"] == 0 and meta["rerun"]["target_calls"] == 0
    assert meta["rerun"]["clips_reused"] == len(_turns(story["data"], FIRST)) and meta["rerun"]["tts_seconds"] == 0


@pytest.mark.materialisation
def test_a_second_voice_target_sends_only_its_own_calls_and_hears_the_same_clips(story):
    server, data, marks, meta = story["server"], story["data"], story["marks"], story["meta"]
    new = _distinct(server.chat_requests[marks["rerun"][0] : marks["second"][0]])
    assert new and {r["model"] for r in new} == {f"{SECOND}-v1"}
    heard = _turns(data, SECOND)
    control = _table(data, f"SELECT * FROM voice.text_turns WHERE target = '{SECOND}' AND turn > 0")
    probed = _table(data, f"SELECT * FROM voice.prosody_probe WHERE target = '{SECOND}'")
    # two calls per answered turn heard (perception, reply), two per turn of the text control, one per turn the
    # prosody probe asked again; nothing re-asked
    plain = _plain_clips(data)
    assert len([r for r in new if audio_shas(r) and audio_shas(r)[-1] not in plain]) == 2 * len(heard)
    assert len([r for r in new if audio_shas(r) and audio_shas(r)[-1] in plain]) == len(probed) > 0
    assert len([r for r in new if not audio_shas(r)]) == 2 * len(control)
    # the same replies, so the same next turns: every clip was already made, and none was asked for again
    assert marks["second"][1] == marks["rerun"][1] and meta["second"]["clips_synthesised"] == 0
    first = _turns(data, FIRST)
    assert list(heard["clip_sha256"]) == list(first["clip_sha256"])
    gap = _table(data, "SELECT * FROM voice.voice_gap")
    assert set(gap["target"]) == {FIRST, SECOND} and not gap["is_baseline"].any()


@pytest.mark.materialisation
def test_the_requests_went_through_the_slow_rate_limited_server_several_at_once(story):
    server = story["server"]
    assert server.refused > 0  # the rate limit answered 429s, and every call still finished
    assert server.max_seen_in_flight > 1


@pytest.mark.unit
def test_the_code_version_of_voiced_turns_includes_the_audio_perception_prompt():
    # English's hash first, then every other language's: editing the prompt in any language makes the cells stale
    assert (
        AUDIO_PROMPT_HASH == f"{prompt_hash(AUDIO_PERCEPTION_KEY)}-{prompt_hash(AUDIO_PERCEPTION_KEY, language='zh')}"
    )
    assert AUDIO_PROMPT_HASH in voiced_turns.code_versions_by_key[AssetKey(["voice", "voiced_turns"])]


# -- remote voicing -----------------------------------------------------------------------------------------


@pytest.mark.materialisation
def test_each_turn_is_voiced_by_the_endpoint_in_its_gold_emotion_and_the_personas_voice(story):
    server, data = story["server"], story["data"]
    turns = _turns(data, FIRST)
    personas = _table(data, "SELECT * FROM dialogue.persona_pool")
    voices = seed_voices(story["seeds"], personas, load_slate(story["slate"]).seed)
    tts = OpenAISpeechTTS()
    spoken = {(r.json["input"], r.json["instructions"]): r.json for r in server.speech_requests}
    for row in turns.itertuples():
        request = spoken[(row.user_text, row.instruction)]
        assert request["model"] == "stub-tts-1" and request["response_format"] == "wav"
        assert request["instructions"] == row.instruction == voice_instruction(row.gold_emotion)
        choice = voices[row.seed_id]
        assert request["voice"] == row.voice == tts.voice_for(choice.gender, choice.slot)
    assert all(r.headers["authorization"] == f"Bearer {TTS_KEY}" for r in server.speech_requests)


@pytest.mark.materialisation
def test_a_failed_synthesis_leaves_only_that_dialogue_unfinished_and_a_rerun_retries_only_it(story):
    server, marks, meta, victim = story["server"], story["marks"], story["meta"], story["victim"]
    broken = story["broken_rows"]
    failed = broken[broken["error"].notna()]
    assert list(failed["seed_id"]) == [victim.seed_id]
    assert (
        failed["error"].iloc[0].startswith("voicing a user turn failed")
        and "refused this text" in failed["error"].iloc[0]
    )
    assert set(broken[broken["error"].isna()]["seed_id"]) == {s.seed_id for s in story["seeds"]} - {victim.seed_id}
    assert meta["broken"]["unfinished_dialogues"] == 1 and meta["recovered"]["unfinished_dialogues"] == 0
    # the rerun asked the endpoint only for the victim's turns, and the model only about the victim's clips
    victim_rows = _turns(story["data"], FIRST).query("seed_id == @victim.seed_id")
    resynth = [r.json["input"] for r in server.speech_requests[marks["broken"][1] : marks["recovered"][1]]]
    assert resynth and set(resynth) == set(victim_rows["user_text"])
    assert meta["recovered"]["clips_synthesised"] == len(victim_rows)
    first_clip = victim_rows["clip_sha256"].iloc[0]
    resent = _audio_requests(server, marks["broken"][0], marks["recovered"][0])
    assert resent and all(audio_shas(r)[0] == first_clip for r in resent)
    window = server.chat_requests[marks["broken"][0] : marks["recovered"][0]]
    text_resent = [r for r in window if not audio_shas(r.json)]
    assert text_resent == []  # the text control finished in the first run: nothing of it is sent again


@pytest.mark.materialisation
def test_the_keys_reach_no_file_table_log_or_metadata(story):
    data, instance = story["data"], story["instance"]
    for path in data.rglob("*"):
        if path.is_file():
            blob = path.read_bytes()
            assert CHAT_KEY.encode() not in blob and TTS_KEY.encode() not in blob, path
    runs = instance.get_runs()
    assert len(runs) >= 6
    for run in runs:
        for entry in instance.all_logs(run.run_id):
            text = str(entry)  # log messages, materialisations with their metadata, step failures
            assert CHAT_KEY not in text and TTS_KEY not in text


@pytest.mark.materialisation
def test_the_steps_metadata_tells_the_seconds_of_audio(story):
    meta, data = story["meta"], story["data"]
    turns = _turns(data, FIRST)
    assert meta["recovered"]["audio_seconds"] == pytest.approx(turns["clip_duration_s"].sum(), abs=1e-3)
    victim = turns[turns["seed_id"] == story["victim"].seed_id]
    others = turns[turns["seed_id"] != story["victim"].seed_id].drop_duplicates("clip_sha256")
    assert meta["recovered"]["tts_seconds"] == pytest.approx(victim["clip_duration_s"].sum(), abs=1e-3)
    assert meta["broken"]["tts_seconds"] == pytest.approx(others["clip_duration_s"].sum(), abs=1e-3)
    assert "asr_seconds" not in meta["recovered"]  # an audio target has no speech recognition
    assert meta["recovered"]["target_cost_usd"] > 0
