"""The chat client every model-backed role of either benchmark talks through (resources/models/chat_client.py
implements it for OpenAI-compatible endpoints)."""

from __future__ import annotations

from typing import Protocol, TypeVar

from pydantic import BaseModel

from eyt_dagster.core.replies import Reply

M = TypeVar("M", bound=BaseModel)
Messages = list[dict[str, str]]


class ChatClient(Protocol):
    """A chat-completion endpoint for one configured model (resources.models.chat_client implements it)."""

    model_id: str

    def complete_text(self, messages: Messages, *, purpose: str) -> Reply[str]:
        """Send the messages; return the assistant's text."""
        ...

    def complete_json(self, messages: Messages, schema: type[M], *, purpose: str) -> Reply[M]:
        """Send the messages; return the reply validated as `schema` (retrying a reply that does not parse)."""
        ...
