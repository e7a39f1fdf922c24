"""TTS: the espeak prosody lexicon (pure), real espeak-ng synthesis, the clip store, and the remote engine
against a local HTTP server."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from eyt_dagster.speech_eq.prosody import LEXICON, LIMITS, NEUTRAL, VOICES, prosody_for, voice_for
from eyt_dagster.speech_eq.vocabulary import BLAND_WORDS
from resources.audio.tts import EspeakTTS, OpenAISpeechTTS, TTSError, pcm_to_wav, repair_wav_header, store_clip

REPO = Path(__file__).resolve().parents[3]

SENTENCE = "I honestly did not expect you to say that to me today."


# --- the lexicon (pure) ---------------------------------------------------------------------------------
def _deviation(instruction: str, strength: float) -> dict[str, float]:
    p, _ = prosody_for(instruction, strength)
    return {k: abs(v - getattr(NEUTRAL, k)) for k, v in p.as_dict().items()}


@pytest.mark.unit
def test_lexicon_directions() -> None:
    assert len(LEXICON) >= 25
    assert not set(LEXICON) & set(BLAND_WORDS), "bland register words must not drive prosody"
    fast, matched = prosody_for("Speak fast, please")
    assert fast.rate > NEUTRAL.rate and matched == ("fast",)
    assert prosody_for("slow and drawn-out")[0].rate < NEUTRAL.rate
    whispered = prosody_for("Whispered, barely moving the lips")[0]
    assert whispered.volume < NEUTRAL.volume
    assert prosody_for("shouting")[0].volume > prosody_for("loud")[0].volume > NEUTRAL.volume
    assert prosody_for("high-pitched")[0].pitch > NEUTRAL.pitch > prosody_for("deep")[0].pitch
    assert prosody_for("flat monotone")[0].pitch_range < NEUTRAL.pitch_range
    assert prosody_for("halting, with long pauses")[0].word_gap > NEUTRAL.word_gap


@pytest.mark.unit
def test_lexicon_matching_rules() -> None:
    assert prosody_for("HIGH PITCHED") == (prosody_for("high-pitched")[0], ("high-pitched",))
    assert prosody_for("low pitch")[1] == ("low pitch",)  # the longest phrase, not also 'low'
    for unrelated in ("steadfast below the slowness", "a nice, polite and calm voice", "", "12 34 !"):
        assert prosody_for(unrelated) == (NEUTRAL, ())
    assert prosody_for("quiet, not shouting")[1] == ("quiet",)
    assert prosody_for("very fast")[0].rate > prosody_for("fast")[0].rate > prosody_for("slightly fast")[0].rate


@pytest.mark.unit
def test_strength_scales_every_deviation_and_clamps() -> None:
    text = "Fast, high-pitched and loud, with trembling pauses"
    one, two = _deviation(text, 1.0), _deviation(text, 2.0)
    assert all(two[k] >= one[k] for k in one) and all(two[k] > one[k] for k in one if one[k])
    assert prosody_for(text, 0.0)[0] == NEUTRAL
    extreme = prosody_for("very rushed rapid breakneck shrill shouting", 5.0)[0]
    assert (extreme.rate, extreme.pitch, extreme.volume) == (LIMITS["rate"][1], LIMITS["pitch"][1], LIMITS["volume"][1])
    hushed = prosody_for("whispered, hushed, slow and deep", 5.0)[0]
    assert (hushed.rate, hushed.pitch, hushed.volume) == (LIMITS["rate"][0], LIMITS["pitch"][0], LIMITS["volume"][0])
    with pytest.raises(ValueError):
        prosody_for(text, -1.0)


@pytest.mark.unit
def test_voices_exist_in_the_shipped_espeak_data() -> None:
    loader = pytest.importorskip("espeakng_loader")
    variants = Path(loader.get_data_path()) / "voices" / "!v"
    for voices in VOICES.values():
        for voice in voices:
            variant = voice.partition("+")[2]
            assert not variant or (variants / variant).is_file(), voice
    assert voice_for("Female", 0) != voice_for("female", 1) and voice_for("F") == VOICES["female"][0]
    assert voice_for("male") != voice_for("female") and voice_for(None) == VOICES["neutral"][0]


# --- real espeak-ng synthesis ---------------------------------------------------------------------------
def _features(wav: bytes, tmp_path: Path) -> tuple[float, float]:
    """(mean pitch Hz over voiced frames, duration s) with the project's features, else librosa directly."""
    try:
        from resources.audio.audio_features import clip_features
    except ImportError:
        import librosa

        y, sr = sf.read(io.BytesIO(wav), dtype="float32")
        f0 = librosa.yin(y, fmin=60, fmax=500, sr=sr)
        rms = librosa.feature.rms(y=y)[0][: len(f0)]
        return float(f0[: len(rms)][rms > 0.1 * rms.max()].mean()), len(y) / sr
    path = tmp_path / f"{hashlib.sha256(wav).hexdigest()}.wav"
    path.write_bytes(wav)
    feats = clip_features(path)
    assert feats.mean_pitch_hz is not None
    return feats.mean_pitch_hz, feats.duration_s


@pytest.fixture(scope="module")
def espeak() -> EspeakTTS:
    # espeakng-loader is a dependency of the project, so a missing engine is a failure, not a skip
    tts = EspeakTTS()
    tts.synthesize("Test.", "", VOICES["female"][0])
    return tts


@pytest.mark.unit
def test_espeak_writes_a_valid_wav(espeak: EspeakTTS) -> None:
    wav, meta = espeak.synthesize(SENTENCE, "Quick, bright voice with short breathless pauses", "en-us+f3")
    info = sf.info(io.BytesIO(wav))
    assert (info.samplerate, info.channels, info.subtype) == (22050, 1, "PCM_16")
    y, _ = sf.read(io.BytesIO(wav), dtype="float32")
    assert float(np.sqrt(np.mean(y**2))) > 0.01 and 1.0 < info.duration < 6.0
    assert meta["engine"] == "espeak-ng" and meta["engine_version"] and meta["sample_rate"] == 22050
    assert meta["matched_words"] == ["quick", "bright", "breathless", "pauses"]
    assert meta["prosody"]["rate"] > NEUTRAL.rate and abs(meta["duration_s"] - info.duration) < 1e-6
    with pytest.raises(TTSError, match="en-us\\+zz"):
        espeak.synthesize(SENTENCE, "", "en-us+zz")
    with pytest.raises(TTSError, match="empty text"):
        espeak.synthesize("  ", "fast", "en-us+f3")


@pytest.mark.unit
def test_fast_high_pitched_is_shorter_and_higher_than_slow_heavy(espeak: EspeakTTS, tmp_path: Path) -> None:
    gaps = []
    for strength in (1.0, 2.0):
        up_pitch, up_dur = _features(
            espeak.synthesize(SENTENCE, "fast, high-pitched", "en-us+m3", strength)[0], tmp_path
        )
        dn_pitch, dn_dur = _features(espeak.synthesize(SENTENCE, "slow, heavy", "en-us+m3", strength)[0], tmp_path)
        assert up_dur < dn_dur and up_pitch > dn_pitch
        gaps.append((12 * np.log2(up_pitch / dn_pitch), dn_dur / up_dur))
        print(f"strength {strength}: {up_pitch:.0f} vs {dn_pitch:.0f} Hz, {up_dur:.2f} vs {dn_dur:.2f} s")
    assert gaps[0][0] >= 2.0 and gaps[0][1] >= 1.5  # clears the contrast filter's pitch and duration points
    assert gaps[1][0] > gaps[0][0] and gaps[1][1] > gaps[0][1]  # a regeneration with strength 2 pushes further


@pytest.mark.unit
def test_voices_per_gender_differ_in_pitch(espeak: EspeakTTS, tmp_path: Path) -> None:
    female, _ = _features(espeak.synthesize(SENTENCE, "", voice_for("female"))[0], tmp_path)
    male, _ = _features(espeak.synthesize(SENTENCE, "", voice_for("male"))[0], tmp_path)
    assert female > male * 1.4
    for gender, first in (("female", female), ("male", male)):  # two speakers of one gender sound apart
        second, _ = _features(espeak.synthesize(SENTENCE, "", voice_for(gender, 1))[0], tmp_path)
        assert abs(12 * np.log2(first / second)) > 1.5, gender


@pytest.mark.cli
def test_a_clip_depends_only_on_its_text_voice_and_prosody(espeak: EspeakTTS) -> None:
    # libespeak-ng carries state from one synthesis to the next; each clip gets a fresh instance, so a repeat is
    # the same bytes whatever came before it (in a worker process that built other subscales first, say)
    first, _ = espeak.synthesize(SENTENCE, "calm and warm", "en-us+m3")
    espeak.synthesize("Something else entirely, loud and fast!", "excited, loud", "en+f4")
    espeak.synthesize(SENTENCE, "slow, heavy", "en-us+m3", 2.0)
    again, _ = espeak.synthesize(SENTENCE, "calm and warm", "en-us+m3")
    assert again == first
    fresh, _ = EspeakTTS().synthesize(SENTENCE, "calm and warm", "en-us+m3")
    assert fresh == first
    # a voice with breath noise (f3), in another process started later: the noise is seeded from the clip's inputs
    here = hashlib.sha256(espeak.synthesize(SENTENCE, "loud, clipped", "en-us+f3")[0]).hexdigest()
    code = (
        "import hashlib; from resources.audio.tts import EspeakTTS; "
        f"print(hashlib.sha256(EspeakTTS().synthesize({SENTENCE!r}, 'loud, clipped', 'en-us+f3')[0]).hexdigest())"
    )
    time.sleep(1.1)  # another second on the clock, in case anything still read it
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert there.stdout.strip() == here


@pytest.mark.unit
def test_concurrent_calls_are_serialised(espeak: EspeakTTS) -> None:
    jobs = [("fast, high-pitched", "en-us+f3"), ("slow, heavy", "en+m7")] * 6
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda job: espeak.synthesize(SENTENCE, *job), jobs))
    serial = {job: espeak.synthesize(SENTENCE, *job)[1]["duration_s"] for job in set(jobs)}
    for job, (wav, meta) in zip(jobs, results):
        assert abs(meta["duration_s"] - serial[job]) < 0.05 and meta["voice"] == job[1]
        assert sf.info(io.BytesIO(wav)).frames == round(meta["duration_s"] * 22050)


@pytest.mark.unit
def test_store_clip_is_content_addressed_and_idempotent(espeak: EspeakTTS, tmp_path: Path) -> None:
    wav, _ = espeak.synthesize(SENTENCE, "loud", "en-us+m3")
    digest = hashlib.sha256(wav).hexdigest()
    first = store_clip(tmp_path, wav)
    assert first == tmp_path / "audio" / digest[:2] / f"{digest}.wav" and first.read_bytes() == wav
    stamp = first.stat().st_mtime_ns
    assert store_clip(tmp_path, wav, "wav") == first and first.stat().st_mtime_ns == stamp
    other = store_clip(tmp_path, wav + b"\x00\x00")
    assert other != first and len([p for p in (tmp_path / "audio").rglob("*") if p.is_file()]) == 2
    with pytest.raises(ValueError):
        store_clip(tmp_path, wav, "../x")


# --- OpenAI-compatible speech endpoint ------------------------------------------------------------------
def _wav(seconds: float = 0.25, rate: int = 24000, streamed: bool = False) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    pcm = (0.3 * 32767 * np.sin(2 * np.pi * 220 * t)).astype("<i2").tobytes()
    data = bytearray(pcm_to_wav(pcm, rate))
    if streamed:  # what OpenAI sends: unknown sizes written as 0xFFFFFFFF
        struct.pack_into("<I", data, 4, 0xFFFFFFFF)
        struct.pack_into("<I", data, data.index(b"data") + 4, 0xFFFFFFFF)
    return bytes(data)


@contextmanager
def speech_server(reply: bytes, status: int = 200) -> Iterator[tuple[str, list[dict]]]:
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
            payload = reply if status == 200 else json.dumps({"error": {"message": "unknown voice"}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "audio/wav" if status == 200 else "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.unit
def test_openai_speech_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTS_TEST_KEY", "sk-local")
    clip = _wav()
    with speech_server(clip) as (url, seen):
        tts = OpenAISpeechTTS(model="gpt-4o-mini-tts", base_url=url, api_key_env="TTS_TEST_KEY", max_retries=0)
        voice = tts.voice_for("female")
        audio, meta = tts.synthesize("Of course. I am listening.", "Slow, low-pitched and quiet", voice)
    assert audio == clip and meta["sample_rate"] == 24000 and meta["voice"] == voice == "coral"
    request = seen[0]
    assert request["path"] == "/v1/audio/speech" and request["auth"] == "Bearer sk-local"
    assert {k: request[k] for k in ("model", "voice", "input", "instructions", "response_format")} == {
        "model": "gpt-4o-mini-tts",
        "voice": "coral",
        "input": "Of course. I am listening.",
        "instructions": "Slow, low-pitched and quiet",
        "response_format": "wav",
    }
    assert tts.voice_for("male") != tts.voice_for("female") != tts.voice_for("female", 1)


@pytest.mark.unit
def test_openai_streamed_wav_header_is_repaired_and_errors_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    streamed = _wav(streamed=True)
    with speech_server(streamed) as (url, _):
        audio, meta = OpenAISpeechTTS(base_url=url, api_key_env=None).synthesize("Hi there.", "loud", "ash")
    assert audio == repair_wav_header(streamed) == _wav() and abs(meta["duration_s"] - 0.25) < 1e-6
    assert sf.info(io.BytesIO(audio)).frames == 6000
    with speech_server(b"", status=400) as (url, _), pytest.raises(TTSError) as err:
        OpenAISpeechTTS(base_url=url, api_key_env=None, max_retries=0).synthesize("Hi.", "loud", "nobody")
    assert "gpt-4o-mini-tts" in str(err.value) and "'nobody'" in str(err.value) and "400" in str(err.value)
    monkeypatch.delenv("TTS_MISSING_KEY", raising=False)
    with pytest.raises(TTSError, match="TTS_MISSING_KEY"):
        OpenAISpeechTTS(base_url="http://127.0.0.1:9/v1", api_key_env="TTS_MISSING_KEY").synthesize("Hi.", "", "ash")
