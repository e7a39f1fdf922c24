"""A localhost OpenAI-compatible chat server with a fixed latency, for `eyt bench` (stdlib only).

POST /v1/chat/completions waits `latency_s`, then answers: a request whose response_format is json_schema
gets a valid instance of that schema (drawn by eyt_dagster/ops/json_schema_draw.py, seeded by the request's
model, messages and schema, so the same request always gets the same answer whatever the order of arrival, and two
models asked the same thing answer differently, as two real models do: each target then plays its own dialogues,
and the simulator's and judge's requests of one target are not the call cache's hits for the next; its strings
are English words, so the client's tokenizers and encoders do the work a real model's answer gives them); any
other request gets one of a few fixed sentences, chosen the same way (so two targets' replies differ, and the
simulator's next request differs with them). Each request is served on its own thread, so the server never limits
concurrency: what is measured is the client's schedule. `max_in_flight` tells the most requests it held at
once.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from eyt_dagster.ops.json_schema_draw import draw, prose

CHAT_PATH = "/v1/chat/completions"
PLAIN_REPLIES = (  # a plain (not JSON) request gets one of these, chosen by its model and messages
    "That sounds hard; tell me more about what happened, and we can look at it together.",
    "I hear you. What would help most right now?",
    "Thank you for telling me. Let us take it one step at a time: what happened first?",
    "That is a lot to carry. Which part worries you most?",
    "I understand. Here is one thing you could try today, and we can adjust it together.",
)


def _digest(*asked: Any) -> str:
    return hashlib.sha256(json.dumps(list(asked), sort_keys=True).encode()).hexdigest()


def answer(request: dict[str, Any]) -> str:
    """The assistant content for one chat request."""
    response_format = request.get("response_format") or {}
    if response_format.get("type") != "json_schema":
        return PLAIN_REPLIES[int(_digest(request.get("model"), request.get("messages")), 16) % len(PLAIN_REPLIES)]
    spec = response_format["json_schema"]
    digest = _digest(request.get("model"), request.get("messages"), spec)
    return json.dumps(draw(spec["schema"], random.Random(digest), strings=prose), ensure_ascii=False)


def completion(content: str, model: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-bench-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": len(content.split()),
            "total_tokens": 10 + len(content.split()),
        },
    }


class _Handler(BaseHTTPRequestHandler):
    server: LatencyServer
    protocol_version = "HTTP/1.1"  # keep-alive, like a real server behind the SDK's connection pool
    # headers and body go out in two writes; with Nagle's algorithm on, the client's delayed ACK holds the
    # second one ~40 ms, which would add that much "latency" to every request
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") != CHAT_PATH:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
            return
        self.server.enter(str(body.get("model", "")))
        try:
            if self.server.latency_s:
                time.sleep(self.server.latency_s)
            reply = completion(answer(body), str(body.get("model", "")))
        finally:
            self.server.leave(str(body.get("model", "")))
        self._send(200, reply)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


class LatencyServer(ThreadingHTTPServer):
    """The running server; `base_url` for the slate, `requests` and `max_in_flight` for the report."""

    daemon_threads = True
    request_queue_size = 512

    def __init__(self, latency_s: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.latency_s = latency_s
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.in_flight_by_model: dict[str, int] = {}
        self.max_in_flight_by_model: dict[str, int] = {}  # per endpoint (model): what its budget must bound
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def enter(self, model: str = "") -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            now = self.in_flight_by_model[model] = self.in_flight_by_model.get(model, 0) + 1
            self.max_in_flight_by_model[model] = max(self.max_in_flight_by_model.get(model, 0), now)

    def leave(self, model: str = "") -> None:
        with self._lock:
            self.in_flight -= 1
            self.in_flight_by_model[model] -= 1

    def __enter__(self) -> LatencyServer:
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), name="bench-server", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
