"""One GET request to an ASGI app in the same process, as a server would make it (the static export renders its
pages this way; the tests ask the app the same way). Starlette's TestClient would need httpx, which the project
does not install."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from starlette.types import ASGIApp, Message


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")


async def request(application: ASGIApp, url: str, host: str = "localhost") -> Answer:
    """GET `url` (a path with its query) from the app; the whole response once it has been sent."""
    parts = urlsplit(url)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": unquote(parts.path),
        "raw_path": parts.path.encode(),
        "query_string": parts.query.encode(),
        "root_path": "",
        "headers": [(b"host", host.encode())],
        "client": ("127.0.0.1", 0),
        "server": (host, 80),
    }
    sent: list[Message] = []
    asked = False

    async def receive() -> Message:
        """The (empty) request body first; then, as a server does, wait for the client to go away (a streamed
        response cancels this wait when it is done)."""
        nonlocal asked
        if asked:
            await asyncio.sleep(3600)
        asked = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await application(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return Answer(int(start["status"]), headers, body)
