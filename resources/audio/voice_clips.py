"""The spoken EYT-Bench's user clips: synthesised once, kept content-addressed, found again by what made them.

`VoiceClips` is the Voicer of eyt_dagster/eyt_voice/voiced_loop.py over a synthesiser (resources/audio/tts.py:
espeak-ng, or an OpenAI-compatible speech endpoint with `instructions`). A clip's key is the sha256 of the
synthesiser's identity (its name and, for espeak-ng, the engine package's version; for an endpoint, model and
base URL), the voice, the tone instruction and the words. The key's clip is looked up in
`<data dir>/cache/voice_clips.sqlite` first, so a rerun, another target hearing the same words, and another
process synthesise nothing. Each clip file is written once under `audio/<sha256[:2]>/<sha256>.wav` (store_clip),
so every target hears byte-identical audio for identical text, tone and voice. Two processes asking for a new
clip at the same moment may both synthesise it; they write the same bytes and the index keeps the first row.

A remote synthesis that fails becomes a per-item error (ClipUnusableError): that dialogue is left unfinished and a
rerun retries it. An espeak-ng failure (a missing library) fails the run with its install hint.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any

from eyt_dagster.core.errors import ClipUnusableError
from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.eyt_voice.voiced_loop import UserClip
from eyt_dagster.eyt_voice.voicing import VoiceChoice
from resources.audio.tts import EspeakTTS, OpenAISpeechTTS, TTSError, store_clip
from resources.storage.sqlite_files import SharedDatabase

INDEX_FILE = Path("cache") / "voice_clips.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS clips (
    key TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    voice TEXT NOT NULL,
    duration_s REAL NOT NULL,
    meta TEXT NOT NULL
);
"""


def synthesiser_identity(tts: EspeakTTS | OpenAISpeechTTS) -> dict[str, Any]:
    """What, beside voice, tone and words, decides a synthesiser's audio: part of every clip's key."""
    if isinstance(tts, OpenAISpeechTTS):
        return {"name": tts.name, "model": tts.model, "base_url": tts.base_url, "format": tts.response_format}
    try:
        version = metadata.version("espeakng-loader")
    except metadata.PackageNotFoundError:
        version = "system"
    return {"name": tts.name, "espeakng_loader": version, "library": tts.library_path, "data": tts.data_path}


class VoiceClips:
    """Clips of user turns for one data directory and synthesiser, in voices of `language` (the pool's: espeak-ng
    speaks Chinese with its `cmn` voice; an endpoint's voices speak every language); counts what it synthesised
    and reused. The language is in a clip's key through its voice name and words."""

    def __init__(
        self, data_dir: str | Path, tts: EspeakTTS | OpenAISpeechTTS, language: str = DEFAULT_LANGUAGE
    ) -> None:
        self.data_dir = Path(data_dir)
        self.tts = tts
        self.language = language
        self.identity = synthesiser_identity(tts)
        self._db = SharedDatabase(self.data_dir / INDEX_FILE, SCHEMA)
        self.synthesised = 0
        self.synthesised_s = 0.0  # seconds of audio synthesised (what a paid speech endpoint bills)
        self.reused = 0

    def key(self, text: str, instruction: str, voice: str) -> str:
        spec = {"tts": self.identity, "voice": voice, "instruction": instruction, "text": text}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()

    def voice(self, text: str, instruction: str, emotion: str, choice: VoiceChoice) -> UserClip:
        voice = self.tts.voice_for(choice.gender, choice.slot, self.language)
        key = self.key(text, instruction, voice)
        with self._db.use() as con:
            row = con.execute("SELECT path, sha256, duration_s FROM clips WHERE key = ?", (key,)).fetchone()
        if row is not None and (self.data_dir / row[0]).is_file():
            self.reused += 1
            return UserClip(
                text, emotion, instruction, choice.gender, voice, str(self.data_dir / row[0]), row[1], float(row[2])
            )
        try:
            audio, meta = self.tts.synthesize(text, instruction, voice)
        except TTSError as exc:
            if isinstance(self.tts, EspeakTTS):
                raise
            raise ClipUnusableError(f"voicing a user turn failed: {exc}") from None
        path = store_clip(self.data_dir, audio)
        sha = path.stem
        duration = float(meta.get("duration_s") or 0.0)
        relative = str(path.relative_to(self.data_dir))
        with self._db.use() as con:
            con.execute(
                "INSERT OR IGNORE INTO clips VALUES (?, ?, ?, ?, ?, ?)",
                (key, relative, sha, voice, duration, json.dumps(meta, sort_keys=True, default=str)),
            )
        self.synthesised += 1
        self.synthesised_s += duration
        return UserClip(text, emotion, instruction, choice.gender, voice, str(path), sha, duration)
