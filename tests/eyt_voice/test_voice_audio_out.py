"""The spoken EYT-Bench with a target that answers in audio (`audio_out`), against a real OpenAI-compatible HTTP server
on localhost (tests/support/localhost_server.py: slow, rate-limited, perception's JSON schema enforced, and a reply in
audio answered with `message.audio` as OpenAI answers it), through the real openai client, the real Dagster graph
and DuckDB warehouse. The simulator and the judge are remote models on the same server, so what they were sent is
on the record: the reply's transcript, which the loop reads as the reply.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
import sqlite3
import threading
import wave
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from dagster import AssetKey, DagsterInstance, materialize
from pydantic import ValidationError

from assets.eyt_voice.partitions import VOICE_TARGETS_PARTITION, voice_cell_key
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.definitions import ASSETS
from eyt_dagster.eyt_bench.prompts import render
from eyt_dagster.jobs import POOL_ASSETS, VOICE_ASSETS
from eyt_dagster.slate import TargetRef
from eyt_dagster.slate_settings import speech_target_settings, voice_target_settings
from resources.audio.tts import pcm_to_wav
from resources.models.cache_backend import CALL_CACHE_FILE
from resources.models.call_cache import CallCache
from resources.models.chat_client import OpenAIChatClient
from resources.models.spoken_replies import SpokenReplyError

from support.json_schema_draw import draw
from support.localhost_server import asks_for_audio, audio_completion, chat_completion, serve
from support.pipeline import resources_for
from support.role_play import RolePlay
from support.slates import remote, write_slate

POOL = "nemotron_usa"
TARGET = "speaker"
TARGET_MODEL = "speaker-v1"
VOICE = "verse"
KEY = "sk-audio-out-5c7e9a1b3d"
RATE = 24000  # the stub's reply clips: 24 kHz mono 16-bit WAV, as OpenAI sends wav


def reply_wav(digest: str) -> bytes:
    """A short WAV whose pitch and length follow the request (a function of it alone)."""
    seed = int(digest[:8], 16)
    seconds = 0.3 + (seed % 7) / 10
    t = np.arange(int(seconds * RATE)) / RATE
    samples = 0.3 * np.sin(2 * np.pi * (180 + seed % 150) * t)
    return pcm_to_wav((samples * 32767).astype("<i2").tobytes(), RATE)


class SpeakingServer:
    """The target answers a request for audio with a transcript and its clip, perception with an instance of the
    JSON schema it was sent, and a text request (its text control) with text; the simulator and the judge are
    EYT-Bench's role play. Every spoken reply sent is kept (transcript, audio bytes, request)."""

    def __init__(self) -> None:
        self.play = RolePlay()
        self.spoken: list[tuple[str, bytes, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str | dict[str, Any]:
        if request["model"] != TARGET_MODEL:
            return self.play(request)
        digest = hashlib.sha256(json.dumps(request["messages"], sort_keys=True).encode()).hexdigest()
        if asks_for_audio(request):
            transcript = f"That sounds heavy; I am here with you ({digest[:8]})."
            audio = reply_wav(digest)
            with self._lock:
                self.spoken.append((transcript, audio, request))
            return audio_completion(transcript, audio, model=request["model"], prompt_tokens=40)
        response_format = request.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            return json.dumps(draw(response_format["json_schema"]["schema"], random.Random(digest)))
        return f"A reply in text ({digest[:8]})."


# what each remote model gets: its own key variable, three concurrent calls, retries through the 429s
AUDIO_ENDPOINT = {"api_key_env": "EYT_TEST_AUDIO_KEY", "max_concurrency": 3, "max_retries": 8}


def _slate(tmp_path: Path, base_url: str) -> Path:
    target = remote(
        TARGET,
        base_url,
        family="fam-speaker",
        **AUDIO_ENDPOINT,
        benchmarks=["eyt_voice"],
        speech_input="audio",
        audio_out={"voice": VOICE, "format": "wav"},
        price_in_per_mtok=2.5,
        price_out_per_mtok=10.0,
    )
    return write_slate(
        tmp_path,
        pools={POOL: {"source": "fixture"}},
        dialogues_per_pool=2,
        t_max=3,
        simulator=remote("sim", base_url, family="fam-sim", **AUDIO_ENDPOINT),
        targets=[target],
        judges=[remote("judge", base_url, family="fam-judge", **AUDIO_ENDPOINT)],
        voice={"dialogues_per_pool": 2},
    )


def _run_cell(slate: Path, data: Path, instance: DagsterInstance) -> dict[str, Any]:
    materialize(
        ASSETS,
        selection=VOICE_ASSETS,
        partition_key=str(voice_cell_key(TARGET, POOL)),
        resources=resources_for(slate, data),
        instance=instance,
    )
    event = instance.get_latest_materialization_event(AssetKey(["voice", "voiced_turns"]))
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def _table(data: Path, sql: str) -> Any:
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        return con.execute(sql).df()


@pytest.fixture(scope="module")
def spoken(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("audio-out")
    handler = SpeakingServer()
    with pytest.MonkeyPatch.context() as monkeypatch, serve(handler, delay_s=0.05, rate_limit=(8, 1.0)) as server:
        monkeypatch.setenv("EYT_TEST_AUDIO_KEY", KEY)
        slate = _slate(tmp_path, server.base_url)
        data = tmp_path / "data"
        data.mkdir()
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions(VOICE_TARGETS_PARTITION, [TARGET])
        materialize(
            ASSETS, selection=POOL_ASSETS, partition_key=POOL, resources=resources_for(slate, data), instance=instance
        )
        first = _run_cell(slate, data, instance)
        sent = len(server.chat_requests)
        files = {p: p.read_bytes() for p in (data / "audio").rglob("*") if p.is_file()}
        rows = _table(data, "SELECT * FROM voice.voiced_turns WHERE turn > 0 ORDER BY seed_id, turn")
        rerun = _run_cell(slate, data, instance)
        yield {
            "server": server,
            "handler": handler,
            "data": data,
            "instance": instance,
            "first": first,
            "rerun": rerun,
            "sent": sent,
            "files": files,
            "rows": rows,
        }


def _texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of every text a request's messages carry."""
    out = []
    for message in request["messages"]:
        content = message["content"]
        if isinstance(content, str):
            out.append((message["role"], content))
        else:
            out.extend((message["role"], p["text"]) for p in content if p.get("type") == "text")
    return out


def _by_role(server, handler: SpeakingServer, role: str) -> list[dict[str, Any]]:
    return [
        r.json for r in server.chat_requests if r.json["model"] != TARGET_MODEL and handler.play.role_of(r.json) == role
    ]


@pytest.mark.materialisation
def test_each_reply_asks_for_audio_and_stores_its_transcript_and_the_clip_the_server_sent(spoken):
    handler, data, rows = spoken["handler"], spoken["data"], spoken["rows"]
    assert len(rows) >= 4 and rows["error"].isna().all() and rows["seed_id"].nunique() == 2
    sent = {transcript: (audio, request) for transcript, audio, request in handler.spoken}
    assert len(sent) == len(rows)  # one reply in audio per answered turn, none asked twice
    for row in rows.itertuples():
        audio, request = sent[row.response_text]  # the row's reply is the transcript the server sent
        assert request["modalities"] == ["text", "audio"] and request["audio"] == {"voice": VOICE, "format": "wav"}
        assert "response_format" not in request
        assert request["messages"][0]["content"] == render("target", "system")
        stored = (data / row.reply_clip_path).read_bytes()
        assert stored == audio and hashlib.sha256(audio).hexdigest() == row.reply_clip_sha256
        assert row.reply_clip_path == f"audio/{row.reply_clip_sha256[:2]}/{row.reply_clip_sha256}.wav"
        with wave.open(io.BytesIO(stored)) as w:
            assert row.reply_clip_duration_s == pytest.approx(w.getnframes() / w.getframerate())
        assert row.reply_clip_sha256 != row.clip_sha256  # the user's clip is kept apart from the reply's


@pytest.mark.materialisation
def test_perception_asks_for_text_only_in_the_schema_the_server_enforced(spoken):
    server, rows = spoken["server"], spoken["rows"]
    perceptions = [
        r.json for r in server.chat_requests if r.json["model"] == TARGET_MODEL and "response_format" in r.json
    ]
    assert perceptions and all("modalities" not in r and "audio" not in r for r in perceptions)
    assert {r["response_format"]["json_schema"]["name"] for r in perceptions} == {"UserLabels"}
    drawn = {json.dumps(json.loads(SpeakingServer()(r)), sort_keys=True) for r in perceptions}
    for row in rows.itertuples():
        fields = ("explicit_intent", "latent_intent", "emotion", "intent_description")
        assert json.dumps({f: getattr(row, f"pred_{f}") for f in fields}, sort_keys=True) in drawn


@pytest.mark.materialisation
def test_the_simulator_the_judge_and_the_target_read_the_transcript_as_the_reply(spoken):
    server, handler, rows = spoken["server"], spoken["handler"], spoken["rows"]
    simulator = _by_role(server, handler, "simulator")
    judge = _by_role(server, handler, "judge_turn") + _by_role(server, handler, "judge_final")
    target = [r.json for r in server.chat_requests if r.json["model"] == TARGET_MODEL]
    transcripts = {transcript for transcript, _, _ in handler.spoken}
    for row in rows.itertuples():
        assert row.response_text in transcripts  # the reply is what the server sent as message.audio.transcript
        # the simulator's next request: the target's reply is a user message (its mirrored roles), the transcript
        assert any(("user", row.response_text) in _texts(r) for r in simulator), row.response_text
        assert any(row.response_text in text for r in judge for _, text in _texts(r))
        later = rows[(rows["seed_id"] == row.seed_id) & (rows["turn"] > row.turn)]
        if len(later):  # its own reply goes back to it as assistant text, in both calls of the next turn
            assert sum(("assistant", row.response_text) in _texts(r) for r in target) >= 2


@pytest.mark.materialisation
def test_a_rerun_makes_no_call_and_yields_the_same_audio(spoken):
    server, data, first, rerun = spoken["server"], spoken["data"], spoken["first"], spoken["rerun"]
    assert len(server.chat_requests) == spoken["sent"]
    assert first["target_calls"] > 0 and rerun["target_calls"] == 0
    again = _table(data, "SELECT * FROM voice.voiced_turns WHERE turn > 0 ORDER BY seed_id, turn")
    columns = ["response_text", "reply_clip_path", "reply_clip_sha256", "reply_clip_duration_s"]
    assert again[columns].equals(spoken["rows"][columns])
    assert {p: p.read_bytes() for p in (data / "audio").rglob("*") if p.is_file()} == spoken["files"]


@pytest.mark.materialisation
def test_the_calls_went_through_the_slow_rate_limited_server(spoken):
    assert spoken["server"].refused > 0 and spoken["server"].max_seen_in_flight > 1


@pytest.mark.materialisation
def test_the_cache_keeps_the_transcript_and_the_sha_not_the_audio(spoken):
    data, rows = spoken["data"], spoken["rows"]
    with sqlite3.connect(data / CALL_CACHE_FILE) as con:
        texts = [t for (t,) in con.execute("SELECT text FROM replies WHERE model = ?", (TARGET_MODEL,))]
    envelopes = [json.loads(t) for t in texts if t.startswith('{"audio"')]  # not perception's, nor text replies
    stored = {t["transcript"]: t["audio"] for t in envelopes}
    assert len(stored) == len(rows)
    for row in rows.itertuples():
        audio = stored[row.response_text]
        assert "data" not in audio and audio["sha256"] == row.reply_clip_sha256 and audio["format"] == "wav"
        assert audio["bytes"] == (data / row.reply_clip_path).stat().st_size and audio["id"].startswith("audio_")


@pytest.mark.materialisation
def test_the_key_reaches_no_file_or_log(spoken):
    data, instance = spoken["data"], spoken["instance"]
    for path in data.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    for run in instance.get_runs():
        for entry in instance.all_logs(run.run_id):
            assert KEY not in str(entry)
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in spoken["server"].chat_requests)


@pytest.mark.materialisation
def test_the_explorer_plays_each_reply_clip(spoken):
    from eyt_dagster.core.explorer_links import voice_dialogue_path
    from eyt_dagster.explorer.app import create_app

    from support.asgi_get import get

    data, rows = spoken["data"], spoken["rows"]
    app = create_app(data)
    seed_id = rows["seed_id"].min()
    turns = rows[rows["seed_id"] == seed_id]
    page = get(app, voice_dialogue_path(TARGET, seed_id))
    assert page.status == 200, page.text
    sources = re.findall(r'<audio controls preload="metadata" class="reply-clip" src="([^"]+)"', page.text)
    assert len(sources) == len(turns)
    for src, sha in zip(sources, turns["reply_clip_sha256"]):
        served = get(app, src)
        assert served.status == 200 and hashlib.sha256(served.body).hexdigest() == sha


# -- the chat client and the slate, on their own ------------------------------------------------------------


def _client(base_url: str, tmp_path: Path, cache: CallCache) -> OpenAIChatClient:
    ref = ModelRef(id="speaker", provider="openai", model=TARGET_MODEL, family="f", base_url=base_url)
    return OpenAIChatClient(ref, role="target", cache=cache, seed=1, clip_dir=tmp_path / "data")


@pytest.mark.unit
def test_a_reply_without_audio_is_an_invalid_reply_that_is_not_cached(tmp_path):
    messages = [{"role": "user", "content": "hello"}]
    with serve(lambda request: chat_completion("only text")) as server, CallCache(tmp_path / "c.sqlite") as cache:
        client = _client(server.base_url, tmp_path, cache)
        for _ in range(2):
            with pytest.raises(SpokenReplyError, match="carries none"):
                client.complete_spoken(messages, purpose="respond:1", voice=VOICE, audio_format="wav")
        assert len(server.chat_requests) == 2 and len(cache) == 0  # asked again: nothing was kept
        assert [(row["ok"], row["failure"]) for row in cache.ledger()] == [(False, "invalid_reply")] * 2


@pytest.mark.unit
def test_a_cached_reply_whose_clip_is_gone_names_the_file(tmp_path):
    audio = reply_wav("ab" * 32)
    messages = [{"role": "user", "content": "hello"}]
    with (
        serve(lambda request: audio_completion("hi there", audio)) as server,
        CallCache(tmp_path / "c.sqlite") as cache,
    ):
        client = _client(server.base_url, tmp_path, cache)
        reply = client.complete_spoken(messages, purpose="respond:1", voice=VOICE, audio_format="wav")
        assert reply.value.transcript == "hi there" and Path(reply.value.path).read_bytes() == audio
        again = client.complete_spoken(messages, purpose="respond:1", voice=VOICE, audio_format="wav")
        assert again.value == reply.value and again.stats.cache_hits == 1 and len(server.chat_requests) == 1
        Path(reply.value.path).unlink()
        with pytest.raises(SpokenReplyError, match=re.escape(reply.value.path)):
            client.complete_spoken(messages, purpose="respond:1", voice=VOICE, audio_format="wav")
        assert len(server.chat_requests) == 1


def _target(**extra: Any) -> dict[str, Any]:
    return {"id": "t", "provider": "openai", "model": "m", "family": "f", "base_url": "http://localhost:1/v1", **extra}


@pytest.mark.materialisation
def test_audio_out_is_for_an_audio_voice_target_and_leaves_other_targets_settings_alone():
    spoken = TargetRef(**_target(benchmarks=["eyt_voice"], audio_out={"voice": VOICE}))
    assert spoken.audio_out is not None and spoken.audio_out.format == "wav"
    assert voice_target_settings(spoken)["audio_out"] == {"voice": VOICE, "format": "wav"}
    plain = TargetRef(**_target(benchmarks=["eyt_voice"]))
    assert "audio_out" not in plain.answer_settings() and voice_target_settings(plain) == speech_target_settings(plain)
    for wrong in (
        _target(benchmarks=["eyt_voice"], speech_input="cascaded", audio_out={"voice": VOICE}),
        _target(benchmarks=["eyt_bench"], audio_out={"voice": VOICE}),
        _target(benchmarks=["eyt_voice"], audio_out={"voice": VOICE, "format": "pcm16"}),
    ):
        with pytest.raises(ValidationError, match="audio_out"):
            TargetRef(**wrong)
