"""A real, scriptable OpenAI-compatible HTTP server for tests (127.0.0.1 only, stdlib only).

It serves POST /v1/chat/completions (and, when given a `speech` handler, POST /v1/audio/speech;
everything else is 404) from a background thread. A test plugs in a `handler(request_json)` that
returns one of:

* a `str`: sent as the assistant's content of a 200 chat.completion (with `usage`);
* a `dict`: sent as the JSON body of a 200 reply, as is (build one with `chat_completion`);
* a `StubResponse(status, body, headers)`: full control (429 with Retry-After, 400, 500, ...).

Every request is recorded (path, headers, JSON body) in `server.requests`, so a test can count
network calls or check the Authorization header.

    with serve(ScriptedReplies(["hello"])) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k")
        ...
        assert server.requests[0].headers["authorization"] == "Bearer k"

In a test, the `localhost_server` fixture (tests/conftest.py) does the same for the whole test:
`server = localhost_server(handler, delay_s=...)`, stopped at teardown.

`ScriptedReplies` plays a fixed queue of replies; `reject_response_formats` wraps a handler so the
server answers 400 to the structured-output modes it "does not support"; `SchemaDrawnReplies` answers
like a server with constrained decoding (vLLM guided decoding, llama.cpp grammars, OpenAI structured
output): a random instance of the JSON schema the request's response_format carries.

A request that asks for a reply in audio (`modalities: ["text", "audio"]`, `asks_for_audio`) is answered as OpenAI
answers it: build the body with `audio_completion(transcript, audio_bytes)`, whose message has no content and
`audio` = {id, data (base64), transcript, expires_at}.

A `speech(request_json)` handler answers /v1/audio/speech with the audio's bytes, or a StubResponse
(an error). Speech requests are recorded too (`speech_requests`) but are not slowed, rate-limited or
counted in flight: those options describe the chat endpoint.

Like a real server under load, it can also be slow and rate-limited (options of `serve`):
`delay_s` holds every request that long before answering; `max_in_flight` answers 429 (with
Retry-After) to a request that arrives while that many are being served; `rate_limit=(n, per_s)`
serves at most n requests in any per_s-second window and answers 429 to the rest. Requests are served
on their own threads, so many can be in progress at once (`max_seen_in_flight` tells how many were).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.json_schema_draw import draw

CHAT_PATH = "/v1/chat/completions"
SPEECH_PATH = "/v1/audio/speech"


@dataclass
class StubResponse:
    """A fully specified reply: status, JSON (dict) or text (str) body, extra headers."""

    status: int = 200
    body: dict[str, Any] | str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RecordedRequest:
    """One request the server received. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    json: dict[str, Any] | None


HandlerResult = str | dict[str, Any] | StubResponse
Handler = Callable[[dict[str, Any]], HandlerResult]
SpeechHandler = Callable[[dict[str, Any]], bytes | StubResponse]


def _count_tokens(text: str) -> int:
    return len(text.split())


def chat_completion(
    content: str,
    *,
    model: str = "stub-model",
    prompt_tokens: int = 10,
    completion_tokens: int | None = None,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """A chat.completion body in the real wire format, with `usage`."""
    completion_tokens = _count_tokens(content) if completion_tokens is None else completion_tokens
    return {
        "id": f"chatcmpl-stub-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def asks_for_audio(request_json: dict[str, Any]) -> bool:
    """Whether a chat request asks for a reply in audio (OpenAI's `modalities` with "audio")."""
    return "audio" in (request_json.get("modalities") or [])


def audio_completion(
    transcript: str,
    audio: bytes,
    *,
    model: str = "stub-model",
    prompt_tokens: int = 10,
    completion_tokens: int | None = None,
    audio_id: str | None = None,
) -> dict[str, Any]:
    """A chat.completion body answering a request for audio, in OpenAI's wire format: the message's content is null
    and its `audio` holds the clip's bytes in base64 with their transcript. `usage` reports the audio's completion
    tokens in completion_tokens_details (a token per word of the transcript when not given)."""
    completion_tokens = _count_tokens(transcript) if completion_tokens is None else completion_tokens
    body = chat_completion("", model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    body["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "audio": {
            "id": audio_id or f"audio_stub_{hashlib.sha256(audio).hexdigest()[:16]}",
            "data": base64.b64encode(audio).decode("ascii"),
            "transcript": transcript,
            "expires_at": int(time.time()) + 3600,
        },
    }
    body["usage"]["completion_tokens_details"] = {"audio_tokens": completion_tokens, "reasoning_tokens": 0}
    return body


def error_response(
    status: int,
    message: str,
    *,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> StubResponse:
    """An error in OpenAI's shape: {"error": {"message", "type", "param", "code"}}."""
    body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    return StubResponse(status=status, body=body, headers=dict(headers or {}))


def llama_server_error(status: int, message: str, type_: str, **extra: Any) -> StubResponse:
    """An error in llama.cpp's llama-server shape: {"error": {"code": <status>, "message", "type", ...}} (its
    `format_error_response`; a context overflow adds n_prompt_tokens and n_ctx)."""
    return StubResponse(status=status, body={"error": {"code": status, "message": message, "type": type_, **extra}})


def context_exceeded(n_prompt_tokens: int = 4569, n_ctx: int = 4096) -> StubResponse:
    """llama-server's answer to a prompt longer than a slot's context (HTTP 400, exceed_context_size_error)."""
    return llama_server_error(
        400,
        f"request ({n_prompt_tokens} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it",
        "exceed_context_size_error",
        n_prompt_tokens=n_prompt_tokens,
        n_ctx=n_ctx,
    )


def rate_limited(retry_after: float | str = 1, message: str = "Rate limit reached") -> StubResponse:
    """A 429 with a Retry-After header (seconds)."""
    return error_response(
        429, message, type_="rate_limit_error", code="rate_limit_exceeded", headers={"Retry-After": str(retry_after)}
    )


class ScriptedReplies:
    """A handler that plays a queue of results in order; when empty it answers 500 'script exhausted'."""

    def __init__(self, replies: Iterable[HandlerResult]) -> None:
        self._queue: deque[HandlerResult] = deque(replies)
        self._lock = threading.Lock()

    def push(self, *replies: HandlerResult) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def __call__(self, request_json: dict[str, Any]) -> HandlerResult:
        with self._lock:
            if not self._queue:
                return error_response(
                    500, "stub script exhausted", type_="server_error", headers={"x-should-retry": "false"}
                )
            return self._queue.popleft()


def reject_response_formats(rejected: set[str], inner: Handler) -> Handler:
    """Wrap `inner` so a request whose response_format type is in `rejected` gets a 400, like a
    server without structured output support (e.g. {"json_schema"} or {"json_schema", "json_object"})."""

    def handler(request_json: dict[str, Any]) -> HandlerResult:
        kind = (request_json.get("response_format") or {}).get("type")
        if kind in rejected:
            return error_response(400, f"response_format type '{kind}' is not supported", param="response_format")
        return inner(request_json)

    return handler


class SchemaDrawnReplies:
    """A handler that answers like a server enforcing the request's JSON schema (constrained decoding).

    A request with response_format json_schema gets a random instance of that schema as its content;
    any other request gets `text`. The draw is seeded from `seed` and the request's messages and schema, so
    the same request always gets the same answer (like a model at temperature 0) whatever the order in
    which concurrent requests arrive. `drawn` lists (schema name, instance) of every answer drawn."""

    def __init__(self, seed: int = 0, *, text: str = "A plain reply from the schema-enforcing stub.") -> None:
        self.seed = seed
        self.text = text
        self.drawn: list[tuple[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, request_json: dict[str, Any]) -> HandlerResult:
        response_format = request_json.get("response_format") or {}
        if response_format.get("type") != "json_schema":
            return self.text
        spec = response_format["json_schema"]
        digest = hashlib.sha256(
            json.dumps([self.seed, request_json.get("messages"), spec], sort_keys=True).encode()
        ).hexdigest()
        instance = draw(spec["schema"], random.Random(digest))
        with self._lock:
            self.drawn.append((spec.get("name", ""), instance))
        return json.dumps(instance, ensure_ascii=False)


class _RequestHandler(BaseHTTPRequestHandler):
    server: StubServer  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.server.record(RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if self.path.rstrip("/") == SPEECH_PATH and self.server.speech is not None:
            self._send_speech(body)
            return
        if self.path.rstrip("/") != CHAT_PATH:
            self._send(error_response(404, f"no route {self.path}", type_="not_found"))
            return
        if not isinstance(body, dict):
            self._send(error_response(400, "request body is not a JSON object"))
            return
        refused = self.server.admit()
        if refused is not None:
            self._send(refused)
            return
        try:
            if self.server.delay_s:
                time.sleep(self.server.delay_s)
            result = self.server.dispatch(body)
        finally:
            self.server.leave()
        self._send(result)

    def do_GET(self) -> None:
        self.server.record(RecordedRequest("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None))
        self._send(error_response(404, f"no route {self.path}", type_="not_found"))

    def _send_speech(self, body: Any) -> None:
        if not isinstance(body, dict):
            self._send(error_response(400, "request body is not a JSON object"))
            return
        assert self.server.speech is not None
        try:
            result = self.server.speech(body)
        except Exception as exc:
            result = error_response(
                500, f"stub speech handler raised {type(exc).__name__}: {exc}", type_="server_error"
            )
        if isinstance(result, StubResponse):
            self._send(result)
            return
        try:
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            self.send_header("Content-Length", str(len(result)))
            self.end_headers()
            self.wfile.write(result)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send(self, result: HandlerResult) -> None:
        response = _as_response(result)
        payload = response.body if isinstance(response.body, str) else json.dumps(response.body or {})
        data = payload.encode()
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired): nothing to do


def _as_response(result: HandlerResult) -> StubResponse:
    if isinstance(result, StubResponse):
        return result
    if isinstance(result, str):
        return StubResponse(200, chat_completion(result))
    if isinstance(result, dict):
        return StubResponse(200, result)
    raise TypeError(f"stub handler returned {type(result).__name__}; expected str, dict or StubResponse")


class StubServer(ThreadingHTTPServer):
    """The running server. `handler` may be swapped between calls; `requests` lists what arrived."""

    daemon_threads = True
    request_queue_size = 64  # many clients may connect at once

    def __init__(
        self,
        handler: Handler,
        *,
        delay_s: float = 0.0,
        max_in_flight: int | None = None,
        rate_limit: tuple[int, float] | None = None,
        speech: SpeechHandler | None = None,
        port: int = 0,
    ) -> None:
        super().__init__(("127.0.0.1", port), _RequestHandler)
        self.handler = handler
        self.speech = speech
        self.delay_s = delay_s
        self.max_in_flight = max_in_flight
        self.rate_limit = rate_limit
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_seen_in_flight = 0
        self.refused = 0
        self._served_at: deque[float] = deque()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The requests to /v1/chat/completions (what a client's network-call count should match)."""
        with self._lock:
            return [r for r in self.requests if r.path.rstrip("/") == CHAT_PATH]

    @property
    def speech_requests(self) -> list[RecordedRequest]:
        """The requests to /v1/audio/speech."""
        with self._lock:
            return [r for r in self.requests if r.path.rstrip("/") == SPEECH_PATH]

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def admit(self) -> StubResponse | None:
        """Count a chat request in, or refuse it with a 429 (too many in flight, or over the rate limit)."""
        with self._lock:
            now = time.monotonic()
            if self.max_in_flight is not None and self.in_flight >= self.max_in_flight:
                self.refused += 1
                return rate_limited(1, f"too many requests in flight (at most {self.max_in_flight})")
            if self.rate_limit is not None:
                limit, window = self.rate_limit
                while self._served_at and now - self._served_at[0] >= window:
                    self._served_at.popleft()
                if len(self._served_at) >= limit:
                    self.refused += 1
                    wait = max(1, math.ceil(window - (now - self._served_at[0])))
                    return rate_limited(wait, f"rate limit of {limit} requests per {window:g} s reached")
                self._served_at.append(now)
            self.in_flight += 1
            self.max_seen_in_flight = max(self.max_seen_in_flight, self.in_flight)
            return None

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def dispatch(self, body: dict[str, Any]) -> StubResponse:
        """Run the test's handler; an exception in it becomes a 500 naming the exception."""
        try:
            return _as_response(self.handler(body))
        except Exception as exc:
            return error_response(
                500,
                f"stub handler raised {type(exc).__name__}: {exc}",
                type_="server_error",
                headers={"x-should-retry": "false"},
            )

    def start(self) -> StubServer:
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), name="openai-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


@contextmanager
def serve(
    handler: Handler,
    *,
    delay_s: float = 0.0,
    max_in_flight: int | None = None,
    rate_limit: tuple[int, float] | None = None,
    speech: SpeechHandler | None = None,
    port: int = 0,
) -> Iterator[StubServer]:
    """Run a stub server for the duration of the block; yields it (use `.base_url`, `.requests`).
    `delay_s`, `max_in_flight` and `rate_limit` make it slow or rate-limited (see the module docstring);
    `speech` answers /v1/audio/speech; `port` (0: any free one) lets a test bring an endpoint back where it was down."""
    server = StubServer(
        handler, delay_s=delay_s, max_in_flight=max_in_flight, rate_limit=rate_limit, speech=speech, port=port
    ).start()
    try:
        yield server
    finally:
        server.stop()
