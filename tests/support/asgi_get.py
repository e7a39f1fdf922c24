"""GET requests to an ASGI app in process, for the tests (eyt_dagster/explorer/asgi_request.py does the work)."""

from __future__ import annotations

import asyncio

from eyt_dagster.explorer.asgi_request import Answer, request

__all__ = ["Answer", "get"]


def get(app, url: str) -> Answer:
    return asyncio.run(request(app, url, host="testserver"))
