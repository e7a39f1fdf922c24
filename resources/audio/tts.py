"""Text-to-speech for SpeechEQ clips (docs/method.md#speech-synthesis): embedded espeak-ng and OpenAI-compatible speech.

`EspeakTTS`: libespeak-ng via ctypes, from PyPI `espeakng-loader` (library + data) or the system's (Debian
`apt-get install espeak-ng`; ESPEAK_NG_LIBRARY / ESPEAK_NG_DATA override); one lock for espeak's global
state; 22.05 kHz mono 16-bit WAV; prosody from eyt_dagster/speech_eq/prosody.py. libespeak-ng keeps state
between syntheses that its own initialisation does not reset (a repeat of the same text in one process differs
by a few samples), and the breath noise of some voice variants comes from a generator seeded differently from
run to run; so a clip depended on what the process synthesised before it (with `eyt run --parallel`, on which
worker built which subscale) and on the run. Each clip is therefore synthesised by a private instance of the
library, loaded from a private copy of its file and unloaded after the clip (about 2 ms), with the noise generator
seeded from the clip's inputs: a clip is a function of its text, voice and prosody, in any process, order or run.
`OpenAISpeechTTS`: `/audio/speech` with instructions; streamed WAV headers repaired. `store_clip`:
content-addressed files `audio/<sha256[:2]>/<sha256>.<ext>` under the data directory.
"""

from __future__ import annotations

import _ctypes
import atexit
import ctypes
import ctypes.util
import functools
import hashlib
import io
import os
import shutil
import struct
import tempfile
import threading
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eyt_dagster.speech_eq.prosody import VOICES, Prosody, gender_key, prosody_for, voice_for

INSTALL_HINT = "pip install espeakng-loader (ships libespeak-ng and its data) or apt-get install espeak-ng"
_LOCK = threading.Lock()  # one synthesis at a time per process (one private copy of the library)
_PARAMS = {"rate": 1, "volume": 2, "pitch": 3, "pitch_range": 4, "word_gap": 7}  # Prosody field -> espeak_PARAMETER
_SYNCHRONOUS, _POS_CHARACTER, _CHARS_UTF8, _EE_NOT_FOUND, _DONT_EXIT = 2, 1, 1, 2, 0x8000
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


class TTSError(RuntimeError):
    """A synthesis failed; the message names the engine, the voice and what to do."""


def _locate(library: str | None, data: str | None) -> tuple[str, str | None]:
    library, data = library or os.environ.get("ESPEAK_NG_LIBRARY"), data or os.environ.get("ESPEAK_NG_DATA")
    if library:
        return library, data
    try:
        import espeakng_loader

        return espeakng_loader.get_library_path(), data or espeakng_loader.get_data_path()
    except (ImportError, RuntimeError):
        found = ctypes.util.find_library("espeak-ng")
        if not found:
            raise TTSError(f"espeak-ng: shared library not found; {INSTALL_HINT}") from None
        return found, data


def _library_file(library: str) -> str:
    """The file behind `library` (a path, or a name the system loader resolves, such as libespeak-ng.so.1)."""
    if Path(library).is_file():
        return library
    ctypes.CDLL(library)  # let the loader find it, then read where it mapped it from
    stem = Path(library).name.split(".so")[0] + ".so"
    for line in Path("/proc/self/maps").read_text().splitlines():
        mapped = Path(line.split()[-1])
        if mapped.name.startswith(stem):
            return str(mapped)
    raise TTSError(f"espeak-ng: cannot find the file of {library}; set ESPEAK_NG_LIBRARY to it")


@functools.cache
def _private_copy(library: str) -> str:
    """A copy of the library's file that only this module loads (once per process), so that closing an instance
    really unloads it and the next load starts from the library's initial state."""
    folder = tempfile.mkdtemp(prefix="eyt-espeak-")
    atexit.register(shutil.rmtree, folder, True)
    copy = os.path.join(folder, Path(library).name)
    shutil.copyfile(_library_file(library), copy)
    return copy


def _fresh_engine(library: str, data: str | None) -> _Espeak:
    """A private instance of libespeak-ng with its state as at load (close it after use; under _LOCK)."""
    return _Espeak(library, data, loaded_from=_private_copy(library))


@functools.cache
def _variants(data_path: str) -> frozenset[str]:
    """The voice variants shipped in an espeak-ng data folder."""
    folder = Path(data_path) / "voices" / "!v"
    return frozenset(p.name for p in folder.iterdir()) if folder.is_dir() else frozenset()


class _Espeak:
    """One loaded libespeak-ng in synchronous retrieval mode; use only under _LOCK."""

    def __init__(self, library: str, data: str | None, loaded_from: str | None = None) -> None:
        try:
            self.lib = ctypes.CDLL(loaded_from or library)
        except OSError as exc:
            raise TTSError(f"espeak-ng: cannot load {library} ({exc}); {INSTALL_HINT}") from exc
        self.lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        self.lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        self.lib.espeak_Synth.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        self.lib.espeak_Info.restype = ctypes.c_char_p
        # DONT_EXIT: without it espeak calls exit() when its data directory is missing
        self.sample_rate = self.lib.espeak_Initialize(_SYNCHRONOUS, 0, data.encode() if data else None, _DONT_EXIT)
        path = ctypes.c_char_p()
        self.version = (self.lib.espeak_Info(ctypes.byref(path)) or b"?").decode()
        self.data_path, self.library = (path.value or b"").decode(), library
        if self.sample_rate <= 0 or not (Path(self.data_path) / "phontab").is_file():
            raise TTSError(
                f"espeak-ng: no voice data in {data or self.data_path or 'the default place'}; {INSTALL_HINT}"
            )
        self.variants = _variants(self.data_path)
        self._chunks: list[bytes] = []
        self._callback = _CALLBACK(self._collect)  # kept referenced: the C side holds the pointer
        self.lib.espeak_SetSynthCallback(self._callback)

    def close(self) -> None:
        """Free espeak's memory and unload this instance of the library (it must not be used after)."""
        self.lib.espeak_Terminate()
        _ctypes.dlclose(self.lib._handle)

    def _collect(self, wav: Any, n: int, _events: Any) -> int:
        if wav and n > 0:
            self._chunks.append(ctypes.string_at(wav, n * 2))
        return 0

    def synth(self, text: str, voice: str, settings: dict[str, int]) -> bytes:
        variant = voice.partition("+")[2]
        if variant and self.variants and variant not in self.variants:
            raise TTSError(
                f"espeak-ng: voice '{voice}': no variant '{variant}' among the {len(self.variants)} shipped "
                f"(e.g. f1-f5, m1-m8); use e.g. {VOICES['male'][0]}"
            )
        if self.lib.espeak_SetVoiceByName(voice.encode()) == _EE_NOT_FOUND:
            raise TTSError(f"espeak-ng: voice '{voice}' not found in {self.data_path}; use e.g. {VOICES['female'][0]}")
        for name, value in settings.items():  # after the voice: parameters persist across voice changes
            self.lib.espeak_SetParameter(_PARAMS[name], int(value), 0)
        self._chunks = []
        data = text.encode("utf-8")
        seeding = getattr(self.lib, "espeak_ng_SetRandSeed", None)  # espeak-ng 1.51 and later
        if seeding is not None:  # breath noise (voice variants such as f3) draws from this generator
            seeding(ctypes.c_long(_noise_seed(data, voice, settings)))
        code = self.lib.espeak_Synth(data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
        if code != 0:
            raise TTSError(f"espeak-ng: espeak_Synth returned {code} for voice '{voice}'")
        return b"".join(self._chunks)  # native-order int16, as the wave module expects


def _noise_seed(text: bytes, voice: str, settings: dict[str, int]) -> int:
    """The seed of espeak's noise generator for one clip: from the clip's inputs, so a clip is reproducible and
    two different clips do not share one noise sequence."""
    key = b"\0".join([text, voice.encode(), repr(sorted(settings.items())).encode()])
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


def pcm_to_wav(pcm: bytes, sample_rate: int) -> bytes:
    """Mono 16-bit little-endian PCM in a WAV container."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm)
    return out.getvalue()


@dataclass
class EspeakTTS:
    """Embedded TTS: espeak-ng with the instruction mapped to prosody; `strength` > 1 for a stronger contrast."""

    library_path: str | None = None
    data_path: str | None = None
    name: str = "espeak-ng"

    def _engine(self, voice: str) -> _Espeak:
        try:
            return _fresh_engine(*_locate(self.library_path, self.data_path))
        except TTSError as exc:
            raise TTSError(str(exc).replace("espeak-ng:", f"espeak-ng (voice '{voice}'):", 1)) from None

    def voice_for(self, gender: str | None, slot: int = 0, language: str = "en") -> str:
        return voice_for(gender, slot, language)

    def render(self, text: str, voice: str, prosody: Prosody) -> tuple[bytes, _Espeak]:
        """The 16-bit PCM of `text` in `voice` with these prosody settings, and the (closed) engine that made it:
        what `synthesize` does after reading the instruction, for a caller that sets the prosody itself."""
        with _LOCK:
            engine = self._engine(voice)
            try:
                return engine.synth(text, voice, prosody.as_dict()), engine
            finally:
                engine.close()

    def synthesize(
        self, text: str, instruction: str, voice: str, strength: float = 1.0
    ) -> tuple[bytes, dict[str, Any]]:
        """(WAV bytes, metadata: engine, version, voice, instruction, strength, prosody, matched words, audio)."""
        if not text.strip():
            raise TTSError(f"espeak-ng: empty text for voice '{voice}'")
        prosody, matched = prosody_for(instruction, strength)
        pcm, engine = self.render(text, voice, prosody)
        if not pcm.strip(b"\x00"):
            raise TTSError(f"espeak-ng: silent output for voice '{voice}' and text {text[:40]!r}")
        meta = {
            "engine": self.name,
            "engine_version": engine.version,
            "library": engine.library,
            "voice": voice,
            "instruction": instruction,
            "strength": strength,
            "prosody": prosody.as_dict(),
            "matched_words": list(matched),
            "sample_rate": engine.sample_rate,
            "duration_s": len(pcm) / 2 / engine.sample_rate,
        }
        return pcm_to_wav(pcm, engine.sample_rate), meta


def repair_wav_header(data: bytes) -> bytes:
    """Set the RIFF and data chunk sizes of a streamed WAV (placeholder 0xFFFFFFFF) to the real lengths."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return data
    out, offset, align = bytearray(data), 12, 1
    while offset + 8 <= len(out):
        chunk, size = out[offset : offset + 4], struct.unpack_from("<I", out, offset + 4)[0]
        if chunk == b"fmt " and offset + 22 <= len(out):
            align = max(1, struct.unpack_from("<H", out, offset + 20)[0])
        if chunk == b"data":
            real = len(out) - offset - 8
            if size > real:
                real -= real % align
                del out[offset + 8 + real :]
                struct.pack_into("<I", out, offset + 4, real)
            break
        offset += 8 + size + (size & 1)
    struct.pack_into("<I", out, 4, len(out) - 8)
    return bytes(out)


def wav_info(data: bytes) -> dict[str, Any]:
    """Sample rate, channels and duration of PCM WAV bytes ({} when not readable as PCM WAV)."""
    try:
        with wave.open(io.BytesIO(data)) as w:
            rate, frames = w.getframerate(), w.getnframes()
            return {"sample_rate": rate, "channels": w.getnchannels(), "duration_s": frames / rate}
    except (wave.Error, EOFError, ZeroDivisionError):
        return {}


OPENAI_VOICES: dict[str, tuple[str, ...]] = {
    "female": ("coral", "shimmer", "nova"),
    "male": ("ash", "onyx", "echo"),
    "neutral": ("alloy", "sage"),
}


@dataclass
class OpenAISpeechTTS:
    """Remote TTS on an OpenAI-compatible `/audio/speech` endpoint that honours an `instructions` field."""

    model: str = "gpt-4o-mini-tts"
    base_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    voices: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(OPENAI_VOICES))
    response_format: str = "wav"
    timeout_s: float = 120.0
    max_retries: int = 4
    name: str = "openai-speech"
    _client: Any = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_ref(cls, ref: Any, voices: dict[str, tuple[str, ...]] | None = None) -> OpenAISpeechTTS:
        """From a config ModelRef (model, base_url, api_key_env, timeout_s, max_retries)."""
        return cls(
            model=ref.model,
            base_url=ref.base_url,
            api_key_env=ref.api_key_env,
            voices=voices or dict(OPENAI_VOICES),
            timeout_s=ref.timeout_s,
            max_retries=ref.max_retries,
        )

    def voice_for(self, gender: str | None, slot: int = 0, language: str = "en") -> str:
        """A voice of the endpoint's list for the gender; the endpoint's voices speak every language it does."""
        options = self.voices.get(gender_key(gender)) or self.voices.get("neutral") or next(iter(self.voices.values()))
        return options[slot % len(options)]

    def synthesize(
        self, text: str, instruction: str, voice: str, strength: float = 1.0
    ) -> tuple[bytes, dict[str, Any]]:
        """(audio bytes, metadata). `strength` is recorded only: a regeneration here is a new sampled synthesis."""
        import openai

        where = f"{self.name}: model '{self.model}' voice '{voice}' at {self.base_url or 'api.openai.com'}"
        key = os.environ.get(self.api_key_env) if self.api_key_env else "not-needed"
        if not key:
            raise TTSError(f"{where}: environment variable {self.api_key_env} is not set")
        if self._client is None:
            self._client = openai.OpenAI(
                api_key=key, base_url=self.base_url, timeout=self.timeout_s, max_retries=self.max_retries
            )
        extra = {"instructions": instruction} if instruction.strip() else {}
        try:
            audio = self._client.audio.speech.create(
                model=self.model, voice=voice, input=text, response_format=self.response_format, **extra
            ).read()
        except openai.APIStatusError as exc:
            detail = str(exc.message).replace(key, "***")[:300]
            raise TTSError(
                f"{where}: HTTP {exc.status_code}: {detail}; check the model, voice and key, "
                "or switch the slate's TTS to the embedded espeak-ng"
            ) from None
        except openai.APIError as exc:
            raise TTSError(f"{where}: {type(exc).__name__}; is the server running?") from None
        if not audio:
            raise TTSError(f"{where}: empty audio in the reply")
        audio = repair_wav_header(audio) if self.response_format == "wav" else audio
        meta = {
            "engine": self.name,
            "engine_version": self.model,
            "model": self.model,
            "base_url": self.base_url,
            "voice": voice,
            "instruction": instruction,
            "strength": strength,
            "response_format": self.response_format,
            **wav_info(audio),
        }
        return audio, meta


def store_clip(data_dir: str | Path, wav_bytes: bytes, ext: str = "wav") -> Path:
    """Write bytes to `audio/<sha256[:2]>/<sha256>.<ext>` under data_dir (once) and return that path."""
    if not ext.isalnum():
        raise ValueError(f"clip extension must be alphanumeric, got {ext!r}")
    digest = hashlib.sha256(wav_bytes).hexdigest()
    path = Path(data_dir) / "audio" / digest[:2] / f"{digest}.{ext.lower()}"
    if path.is_file() and path.stat().st_size == len(wav_bytes):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{digest}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(wav_bytes)
    os.replace(tmp, path)
    return path
