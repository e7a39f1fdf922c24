"""GET requests to an ASGI app in process (Starlette's TestClient needs httpx, which the project does not install)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str
    body: bytes = b""


def get(app, url: str) -> Answer:
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
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[dict] = []
    asked: list[bool] = []

    async def receive() -> dict:
        """The (empty) request body first; then, as a server does, wait for the client to go away (a streamed
        response cancels this wait when it is done)."""
        if asked:
            await asyncio.sleep(3600)
        asked.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return Answer(start["status"], headers, body.decode(errors="replace"), body)
