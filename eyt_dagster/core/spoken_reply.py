"""A chat reply in audio: what a chat model said (its transcript) and the clip it said it in, and the chat client
protocol of a model that can answer so (resources/models/chat_client.py implements it for OpenAI-compatible endpoints:
a request with `modalities: ["text", "audio"]` whose reply carries `message.audio`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from eyt_dagster.core.chat_protocol import ChatClient, Messages
from eyt_dagster.core.replies import Reply


@dataclass(frozen=True)
class SpokenReply:
    """The transcript the endpoint sent with its audio, and the audio's content-addressed file."""

    transcript: str
    path: str  # absolute; the tables store it relative to the data directory
    sha256: str
    duration_s: float | None  # None when the format's length could not be read
    format: str


@runtime_checkable
class SpeakingChatClient(ChatClient, Protocol):
    """A chat client that can also ask for a reply in audio."""

    def complete_spoken(self, messages: Messages, *, purpose: str, voice: str, audio_format: str) -> Reply[SpokenReply]:
        """Send the messages asking for text and audio; return the transcript with the stored clip."""
        ...
