"""The ChatClient for `provider: openai` models: any OpenAI-compatible endpoint via the openai SDK.

* Key: read from the environment variable the slate names (`api_key_env`) when the first network call
  is made; it is never logged, stored in the cache/ledger, or put in an error message (server error
  text is redacted before use). A model without `api_key_env` sends the placeholder "not-needed".
* Timeouts and retries: the SDK's own (`timeout=ref.timeout_s`, `max_retries=ref.max_retries`). It
  retries 408/409/429/5xx and connection errors with exponential backoff (0.5 s doubling, cap 8 s,
  jitter), and a `retry-after-ms` / `Retry-After` (seconds or HTTP date) of up to 120 s replaces the
  backoff. A Retry-After above 120 s is not retried: the call fails with ModelCallError. A timeout is
  retried once only (TIMEOUT_ATTEMPTS): the same request to the same model would most likely need as
  long again, so the error says to raise `timeout_s`. The attempts are counted by the SDK's HTTP client
  (`_CountingHttpClient`), so the ledger's `retries` is right for failed calls too.
* Concurrency: at most the model's `max_concurrency` requests are in flight to one endpoint (base URL +
  model) across every process of the machine, and a 429 pauses every caller of that endpoint and lowers its
  budget for a while (resources/endpoint_gates.py, docs/endpoint-budgets.md).
* Cache: every successful raw reply is stored in the CallCache under a key of model, base URL,
  messages, settings and seed; an identical later call makes no network call. Validation happens
  after the cache (see resources/call_cache.py).
* JSON replies: structured output `auto` tries response_format json_schema, then json_object, then
  plain prompting, moving down when the server answers 400/422 about the response format, and
  remembers the mode that works (in the client, and in the cache file for later runs). A reply that does not validate is
  re-asked with the validation error, up to `parse_retries` times, then ReplyParseError. A reply cut at
  max_tokens (finish_reason=length) that does not validate is its own failure (ReplyCutError, ledger
  `cut_reply`): the re-ask says it was cut and asks for a shorter reply, without pasting it back. Every
  re-ask is the original messages plus at most REASK_MAX_EXTRA_CHARS (an excerpt of the rejected reply
  and the error), never the growing history of earlier attempts. A re-ask that fails (any HTTP error)
  ends in ReplyParseError too, since the model did answer and its answer did not validate. See
  docs/remote-models.md.
* A 400 / 413 / 422 that is not about the response format refuses the request itself (e.g. a prompt longer
  than the context) and raises RequestRefusedError (a ModelCallError): retrying it later will not help. Its
  ledger kind is `context_exceeded` when the server says the prompt does not fit its context, else `refused`.
* Server errors keep the server's own reason: the `message` of its error JSON (OpenAI's, vLLM's and
  llama-server's shape), or its text, cut to SERVER_MESSAGE_MAX_CHARS and with the key redacted; headers
  are never copied. It goes into the raised error (so the item's error row and the run's log) and the ledger.
* Stats: `CallStats.calls` counts chat requests that went to the network (SDK transport retries are
  not counted there; the ledger has them), `cache_hits` those served from the cache. Tokens, cost and
  latency are the reply's own, also for a cache hit, so a rerun reports the same numbers; the
  ledger's `cached` flag (and `CallCache.summary()['spent_usd']`) tells what was really paid.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError

from eyt_dagster.core.chat_protocol import Messages
from eyt_dagster.core.errors import ReplyUnusableError, RequestRefusedError, RoleCallError
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.replies import CallStats, Reply
from resources.call_cache import CachedReply, CallCache
from resources.endpoint_gates import EndpointGate, gate_for, retry_after_seconds

M = TypeVar("M", bound=BaseModel)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY_PLACEHOLDER = "not-needed"
CHAT_PATH = "/chat/completions"
FORMAT_ORDER = ("json_schema", "json_object", "none")
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output", "guided")
REFUSED_STATUSES = (400, 413, 422)  # the request itself is refused (not the route, key or response_format)
SERVER_MESSAGE_MAX_CHARS = 300
PARSE_ERROR_MAX_CHARS = 400
TIMEOUT_ATTEMPTS = 2  # a request that timed out is sent once more, then the call fails
REASK_EXCERPT_CHARS = 600  # at most this much of a rejected reply is shown to the model in a re-ask
REASK_NOTE_CHARS = 300  # the fixed wording of a re-ask note (without the error)
REASK_MAX_EXTRA_CHARS = REASK_EXCERPT_CHARS + PARSE_ERROR_MAX_CHARS + REASK_NOTE_CHARS


class MissingApiKeyError(RuntimeError):
    """The environment variable that should hold a model's API key is not set."""


class ModelCallError(RoleCallError, RuntimeError):
    """A chat call failed after the SDK's retries. Names the model, base URL and status; never the key.
    `kind` is the ledger's failure kind of the request (eyt_dagster/core/errors.py FAILURE_KINDS)."""

    def __init__(self, message: str, *, model_id: str, base_url: str, status: int | None, kind: str = "http") -> None:
        super().__init__(message)
        self.model_id = model_id
        self.base_url = base_url
        self.status = status
        self.kind = kind


class _FormatRejected(ModelCallError):
    """The server refused the response_format it was sent (a 400/422 naming it)."""


class _RequestRefused(ModelCallError, RequestRefusedError):
    """The server refused the request itself (400 / 413 / 422 not about the response format)."""


class ReplyParseError(ReplyUnusableError, ValueError):
    """The model's reply did not validate, even after the allowed re-asks. `kind` is invalid_reply (cut_reply
    for ReplyCutError), or the failure kind of the re-ask that failed (a timeout...)."""

    kind = "invalid_reply"

    def __init__(
        self, *, model_id: str, purpose: str, error: str, raw: str, attempts: int, kind: str | None = None
    ) -> None:
        super().__init__(self._message(model_id, purpose, error, attempts) + f"\nlast reply: {raw[:1000]}")
        self.model_id = model_id
        self.purpose = purpose
        self.error = error
        self.raw = raw
        self.attempts = attempts
        if kind is not None:
            self.kind = kind

    @staticmethod
    def _message(model_id: str, purpose: str, error: str, attempts: int) -> str:
        return f"model '{model_id}' ({purpose}): reply did not validate after {attempts} attempt(s): {error}"


class ReplyCutError(ReplyParseError):
    """The last reply was cut at max_tokens (finish_reason=length) before it was complete JSON."""

    kind = "cut_reply"

    @staticmethod
    def _message(model_id: str, purpose: str, error: str, attempts: int) -> str:
        return f"model '{model_id}' ({purpose}): no usable reply in {attempts} attempt(s): {error}"


@dataclass(frozen=True)
class _Outcome:
    """One chat request's reply (from the network or the cache) and what it cost."""

    text: str
    stats: CallStats
    key: str
    retries: int
    finish_reason: str | None = None


# -- counting the SDK's attempts ----------------------------------------------------------------


def _timeout_errors() -> tuple[type[BaseException], ...]:
    """The timeout exception of the HTTP library the SDK's client is built on (httpx or httpx2)."""
    found: list[type[BaseException]] = []
    for cls in openai.DefaultHttpxClient.__mro__:
        error = getattr(sys.modules.get(cls.__module__.split(".")[0]), "TimeoutException", None)
        if isinstance(error, type) and issubclass(error, BaseException) and error not in found:
            found.append(error)
    return tuple(found)


_TIMEOUT_ERRORS = _timeout_errors()


@dataclass
class _Attempts:
    """What happened on the wire for one chat request: attempts sent (the SDK's retries included) and
    how many of them timed out."""

    sent: int = 0
    timeouts: int = 0

    @property
    def retries(self) -> int:
        return max(self.sent - 1, 0)


class _CountingHttpClient(openai.DefaultHttpxClient):
    """The SDK's HTTP client (same defaults), counting each request's attempts per thread, and ending the
    SDK's retries after TIMEOUT_ATTEMPTS timeouts: it raises openai.APITimeoutError, which the SDK passes
    on without retrying (an SDK that retried anyway would get the same error without a request sent).
    Every attempt passes the endpoint's gate (resources/endpoint_gates.py): a slot of the endpoint's
    process-wide budget, and the shared pause after a 429."""

    def __init__(self, gate: EndpointGate | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._local = threading.local()
        self._gate = gate

    @contextmanager
    def track(self) -> Iterator[_Attempts]:
        attempts = _Attempts()
        self._local.current = attempts
        try:
            yield attempts
        finally:
            self._local.current = None

    def send(self, request: Any, **kwargs: Any) -> Any:
        if self._gate is None:
            return self._send(request, **kwargs)
        with self._gate.slot():
            response = self._send(request, **kwargs)
        self._gate.answered(response.status_code, retry_after_seconds(response.headers))
        return response

    def _send(self, request: Any, **kwargs: Any) -> Any:
        attempts: _Attempts | None = getattr(self._local, "current", None)
        if attempts is None:
            return super().send(request, **kwargs)
        if attempts.timeouts >= TIMEOUT_ATTEMPTS:
            raise openai.APITimeoutError(request=request)
        attempts.sent += 1
        try:
            return super().send(request, **kwargs)
        except _TIMEOUT_ERRORS:
            attempts.timeouts += 1
            if attempts.timeouts >= TIMEOUT_ATTEMPTS:
                raise openai.APITimeoutError(request=request) from None
            raise


# -- parsing ----------------------------------------------------------------------------------

_THINK_RE = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def strip_thinking(text: str) -> str:
    """Drop a leading <think>...</think> block that some reasoning servers leave in the content."""
    return _THINK_RE.sub("", text, count=1)


def extract_json_object(text: str) -> Any:
    """The JSON object in a reply: code fences stripped, then the object starting at the first '{'
    (or, failing that, the span from the first '{' to the last '}'). Raises ValueError."""
    text = strip_thinking(text)
    fenced = _FENCE_RE.search(text)
    if fenced:
        text = fenced.group(1)
    start = text.find("{")
    if start < 0:
        raise ValueError("the reply contains no JSON object")
    try:
        return json.JSONDecoder().raw_decode(text, start)[0]
    except json.JSONDecodeError as first_error:
        end = text.rfind("}")
        try:
            return json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            raise ValueError(f"the reply is not valid JSON: {first_error}") from None


def describe_validation_error(exc: Exception) -> str:
    """A short, model-readable statement of why a reply was rejected."""
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:5]]
        more = len(exc.errors()) - len(parts)
        return "; ".join(parts) + (f"; and {more} more error(s)" if more > 0 else "")
    return str(exc)[:PARSE_ERROR_MAX_CHARS]


def parse_reply(text: str, schema: type[M]) -> M:
    """Validate a reply as `schema`. Raises ValueError or pydantic.ValidationError."""
    return schema.model_validate(extract_json_object(text))


def schema_name(schema: type[BaseModel]) -> str:
    """The response_format name: a-z, A-Z, 0-9, _ and -, at most 64 characters."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "reply"


@lru_cache(maxsize=64)
def _schema_text(schema: type[BaseModel]) -> str:
    return json.dumps(schema.model_json_schema(), ensure_ascii=False)


def json_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """`schema.model_json_schema()`, a fresh copy each time: pydantic builds it anew on every call, which cost
    about 2.5 ms per request, more than the rest of a cached call together (see docs/throughput.md)."""
    return json.loads(_schema_text(schema))


def response_format_for(mode: str, schema: type[BaseModel]) -> dict[str, Any] | None:
    """The response_format to send in a structured-output mode ('none' sends none)."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": schema_name(schema), "schema": json_schema_of(schema)}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def with_schema_instruction(messages: Messages, schema: type[BaseModel]) -> Messages:
    """Messages with the JSON schema spelled out in the system message (for json_object / plain modes,
    where the server does not receive the schema; json_object also requires the word JSON)."""
    note = (
        "Reply with one JSON object only (no prose, no code fences) that validates against this JSON schema:\n"
        + _schema_text(schema)
    )
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0], content=f"{messages[0].get('content', '')}\n\n{note}")
        return [first, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def excerpt(text: str, limit: int = REASK_EXCERPT_CHARS) -> str:
    """`text`, or its start and a note of how long it was when it is longer than `limit` characters."""
    if len(text) <= limit:
        return text
    note = f" [... cut here; {len(text)} characters in all]"
    return text[: limit - len(note)] + note


def reask_messages(
    messages: Messages, bad_reply: str, error: str, *, attempt: int, attempts: int, cut: bool = False
) -> Messages:
    """The ORIGINAL messages plus one re-ask for attempt `attempt` of `attempts`: an excerpt of the rejected
    reply and the error, or, for a reply cut at max_tokens, only a note asking for a shorter reply (the
    cut reply is not pasted back). So a re-ask adds at most REASK_MAX_EXTRA_CHARS to the original request,
    whatever happened before; the attempt number keeps each re-ask a request of its own (not a cache hit)."""
    if cut:
        return [
            *messages,
            {
                "role": "user",
                "content": (
                    f"Your previous reply was cut off at the length limit before the JSON object was complete "
                    f"(attempt {attempt} of {attempts}). Reply again with the complete JSON object only, and keep "
                    f"every text field short."
                ),
            },
        ]
    return [
        *messages,
        {"role": "assistant", "content": excerpt(bad_reply)},
        {
            "role": "user",
            "content": (
                f"Your reply was rejected: {error[:PARSE_ERROR_MAX_CHARS]}. Reply again with the corrected JSON "
                f"object only (attempt {attempt} of {attempts})."
            ),
        },
    ]


def request_body(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of a chat request: the create() arguments with extra_body merged in, as the SDK sends
    them. Posted as is (the SDK's documented `post`), not through `chat.completions.create`, whose walk over
    every message against the SDK's parameter types cost about 3 ms a request, half of a cached-schema
    call's client time (docs/throughput.md); the bytes on the wire are the same."""
    body = {key: value for key, value in kwargs.items() if key != "extra_body"}
    return {**body, **(kwargs.get("extra_body") or {})}


def _mentions_response_format(exc: openai.APIStatusError) -> bool:
    text = f"{exc.message} {exc.body if exc.body is not None else ''}".lower()
    return any(word in text for word in _FORMAT_WORDS)


_SDK_PREFIX_RE = re.compile(r"^Error code: \d+\s*(?:-\s*)?")


def server_message(exc: openai.APIError) -> str:
    """The reason the server gave for an error, as the server wrote it: the `message` (or `detail`) of its
    error JSON (the SDK hands over the `error` object of {"error": {...}}), else the body's text, else the
    SDK's message without its "Error code: N -" prefix. Empty when the server gave none."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        for holder in (inner, body):
            if isinstance(holder, dict):
                for field in ("message", "detail"):
                    value = holder.get(field)
                    if isinstance(value, str) and value.strip():
                        return value.strip()
        if isinstance(inner, str) and inner.strip():
            return inner.strip()
    if isinstance(body, str) and body.strip():
        return body.strip()
    return _SDK_PREFIX_RE.sub("", str(exc.message or "")).strip()


_CONTEXT_MARKERS = (
    "context_length_exceeded",  # OpenAI's error code
    "exceed_context_size",  # llama-server's error type
    "context size",  # llama-server: "request (N tokens) exceeds the available context size (M tokens)"
    "context length",  # vLLM: "This model's maximum context length is N tokens"
    "context window",
)


def exceeds_context(exc: openai.APIStatusError) -> bool:
    """Whether a refusal says the prompt does not fit the model's context (in its code, type or message)."""
    body = exc.body if isinstance(exc.body, dict) else {}
    text = " ".join(str(body.get(field, "")) for field in ("code", "type", "message")) + f" {server_message(exc)}"
    return any(marker in text.lower() for marker in _CONTEXT_MARKERS)


# -- the client -------------------------------------------------------------------------------


class OpenAIChatClient:
    """A ChatClient for one `provider: openai` ModelRef playing one role."""

    def __init__(self, ref: ModelRef, *, role: str, cache: CallCache, seed: int, run_id: str | None = None) -> None:
        if ref.provider != "openai":
            raise ValueError(f"model '{ref.id}' has provider '{ref.provider}'; OpenAIChatClient needs provider openai")
        self.ref = ref
        self.model_id = ref.id
        self.role = role
        self.cache = cache
        self.seed = seed
        self.run_id = run_id
        self.base_url = (ref.base_url or DEFAULT_BASE_URL).rstrip("/")
        self._lock = threading.Lock()
        self._client: openai.OpenAI | None = None
        self._http: _CountingHttpClient | None = None
        self._json_mode: str = ref.structured_output
        if ref.structured_output == "auto":
            self._json_mode = cache.json_mode(ref.model, self.base_url) or FORMAT_ORDER[0]

    def __repr__(self) -> str:
        return f"OpenAIChatClient(model_id={self.model_id!r}, role={self.role!r}, base_url={self.base_url!r})"

    def with_seed(self, seed: int) -> OpenAIChatClient:
        """The same client (shared connection and structured-output mode) with another sampling seed."""
        twin = OpenAIChatClient(self.ref, role=self.role, cache=self.cache, seed=seed, run_id=self.run_id)
        with self._lock:
            twin._client, twin._http, twin._json_mode = self._client, self._http, self._json_mode
        return twin

    @property
    def json_mode(self) -> str:
        """The structured-output mode JSON calls use now: json_schema, json_object or none."""
        return self._json_mode

    # -- key and SDK client --------------------------------------------------------------------

    def _api_key(self) -> str:
        env = self.ref.api_key_env
        if env is None:
            return NO_KEY_PLACEHOLDER
        value = os.environ.get(env)
        if not value:
            raise MissingApiKeyError(
                f"model '{self.model_id}' ({self.role}) needs an API key in the environment variable {env}, "
                f"which is not set: export {env}=<your key> before running (the key is never read from the slate)"
            )
        return value

    def check_credentials(self) -> None:
        """Fail now (MissingApiKeyError) rather than at the first uncached call."""
        self._sdk()

    def _sdk(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                http = _CountingHttpClient(gate_for(self.base_url, self.ref.model, self.ref.max_concurrency))
                self._client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=self._api_key(),
                    timeout=self.ref.timeout_s,
                    max_retries=self.ref.max_retries,
                    http_client=http,
                )
                self._http = http
            return self._client

    def _redact(self, text: str) -> str:
        """Remove the key (if a server echoed it) from text bound for errors or the ledger."""
        env = self.ref.api_key_env
        secret = os.environ.get(env) if env else None
        if secret:
            text = text.replace(secret, "***")
        return text

    # -- one request ---------------------------------------------------------------------------

    def _settings(self, response_format: dict[str, Any] | None) -> dict[str, Any]:
        ref = self.ref
        return {
            "temperature": ref.temperature,
            "max_tokens": ref.max_tokens,
            "reasoning_effort": (ref.reasoning_effort or "medium") if ref.thinking else None,
            "extra_body": ref.extra_body,
            "response_format": response_format,
        }

    def _request_kwargs(self, messages: Messages, settings: dict[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.ref.model,
            "messages": messages,
            "temperature": settings["temperature"],
            "max_tokens": settings["max_tokens"],
            "seed": self.seed,
        }
        for name in ("reasoning_effort", "response_format"):
            if settings[name] is not None:
                kwargs[name] = settings[name]
        if settings["extra_body"]:
            kwargs["extra_body"] = settings["extra_body"]
        return kwargs

    def _stats(self, tokens_in: int, tokens_out: int, latency_s: float, cached: bool) -> CallStats:
        cost = (tokens_in * self.ref.price_in_per_mtok + tokens_out * self.ref.price_out_per_mtok) / 1_000_000
        return CallStats(
            calls=0 if cached else 1,
            cache_hits=1 if cached else 0,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=cost,
            latency_s=latency_s,
        )

    def _request(self, messages: Messages, response_format: dict[str, Any] | None, purpose: str) -> _Outcome:
        """One chat request: from the cache if this exact request finished before, else the network (once,
        also when other threads send the same request meanwhile: resources/call_cache.py). Not yet in the
        ledger (the caller records it once it knows whether the reply validates)."""
        settings = self._settings(response_format)
        key = CallCache.key(
            model=self.ref.model, base_url=self.base_url, messages=messages, settings=settings, seed=self.seed
        )
        hit = self.cache.get(key)  # a finished request needs no flight (on Postgres, a lock is a round trip)
        if hit is not None:
            return self._outcome(hit, key, cached=True, retries=0)
        with self.cache.one_flight(key):
            return self._cached_or_sent(messages, settings, purpose, key, response_format)

    def _cached_or_sent(
        self,
        messages: Messages,
        settings: dict[str, Any],
        purpose: str,
        key: str,
        response_format: dict[str, Any] | None,
    ) -> _Outcome:
        hit = self.cache.get(key)
        if hit is not None:
            return self._outcome(hit, key, cached=True, retries=0)
        sdk = self._sdk_or_record(purpose, key)
        assert self._http is not None
        started = time.perf_counter()
        with self._http.track() as attempts:
            try:
                completion = sdk.post(
                    CHAT_PATH, body=request_body(self._request_kwargs(messages, settings)), cast_to=ChatCompletion
                )
            except openai.APIError as exc:  # HTTP errors, connection errors and timeouts, after the retries
                latency = time.perf_counter() - started
                raise self._failed(exc, purpose, key, latency, response_format, attempts) from None
        latency = time.perf_counter() - started
        reply = self._reply_from(completion, latency)
        self.cache.put(
            key,
            model=self.ref.model,
            text=reply.text,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_s=latency,
            finish_reason=reply.finish_reason,
        )
        return self._outcome(reply, key, cached=False, retries=attempts.retries)

    def _sdk_or_record(self, purpose: str, key: str) -> openai.OpenAI:
        """The SDK client; a missing key is recorded in the ledger before it is raised."""
        try:
            return self._sdk()
        except MissingApiKeyError:
            self.cache.record(
                run_id=self.run_id,
                role=self.role,
                model_id=self.model_id,
                purpose=purpose,
                cached=False,
                ok=False,
                error=f"{self.ref.api_key_env} is not set",
                failure="no_key",
                cache_key=key,
            )
            raise

    @staticmethod
    def _reply_from(completion: Any, latency: float) -> CachedReply:
        choice = completion.choices[0] if completion.choices else None
        usage = completion.usage
        return CachedReply(
            text=(choice.message.content if choice is not None else None) or "",
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=latency,
            finish_reason=choice.finish_reason if choice is not None else None,
        )

    def _outcome(self, reply: CachedReply, key: str, *, cached: bool, retries: int) -> _Outcome:
        stats = self._stats(reply.tokens_in, reply.tokens_out, reply.latency_s, cached)
        return _Outcome(text=reply.text, stats=stats, key=key, retries=retries, finish_reason=reply.finish_reason)

    def _failed(
        self,
        exc: openai.APIError,
        purpose: str,
        key: str,
        latency: float,
        response_format: dict[str, Any] | None,
        attempts: _Attempts,
    ) -> ModelCallError:
        """Record a failed request and build the error to raise (redacted, no SDK exception chained)."""
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        detail = self._redact(server_message(exc))[:SERVER_MESSAGE_MAX_CHARS] or "the server gave no reason"
        timeout = f"{self.ref.timeout_s:g} s"
        fix = f"raise timeout_s for model '{self.model_id}' in the slate"
        if isinstance(exc, openai.APITimeoutError) and attempts.timeouts >= TIMEOUT_ATTEMPTS:
            what, failure = f"timed out after {timeout} twice; {fix}", "timeout"
        elif isinstance(exc, openai.APITimeoutError):
            what, failure = f"timed out after {timeout} (max_retries={self.ref.max_retries}); {fix}", "timeout"
        elif status is None:
            what, failure = f"connection failed ({detail})", "connection"
        elif status in REFUSED_STATUSES and isinstance(exc, openai.APIStatusError):
            failure = "context_exceeded" if exceeds_context(exc) else "refused"
            what = f"HTTP {status}: {detail}"
            if failure == "context_exceeded":
                what += f"; give the server of model '{self.model_id}' a larger context per request"
        else:
            what, failure = f"HTTP {status}: {detail}", "http"
        retryable = failure != "timeout" and (status is None or status in (408, 409, 429) or status >= 500)
        retries = f" (SDK max_retries={self.ref.max_retries})" if retryable else ""
        message = f"model '{self.model_id}' ({self.role}, {purpose}) at {self.base_url}: {what}{retries}"
        rejected_format = (
            response_format is not None
            and status in (400, 422)
            and isinstance(exc, openai.APIStatusError)
            and _mentions_response_format(exc)
        )
        self.cache.record(
            run_id=self.run_id,
            role=self.role,
            model_id=self.model_id,
            purpose=purpose,
            cached=False,
            ok=False,
            latency_s=latency,
            retries=attempts.retries,
            error=what,
            failure="format_rejected" if rejected_format else failure,
            cache_key=key,
        )
        failure = "format_rejected" if rejected_format else failure
        error_type = (
            _FormatRejected if rejected_format else _RequestRefused if status in REFUSED_STATUSES else ModelCallError
        )
        return error_type(message, model_id=self.model_id, base_url=self.base_url, status=status, kind=failure)

    def _cut_message(self, stats: CallStats) -> str:
        """Why a reply ended with finish_reason=length: max_tokens, or (fewer tokens than that) a server whose
        context window was full, which a larger max_tokens would not fix."""
        if 0 < stats.tokens_out < self.ref.max_tokens:
            return (
                f"reply cut after {stats.tokens_out} tokens (finish_reason=length), below max_tokens="
                f"{self.ref.max_tokens}: the server's context window filled up (prompt {stats.tokens_in} tokens); "
                f"give the server of model '{self.model_id}' a larger context per request"
            )
        return (
            f"reply cut at max_tokens={self.ref.max_tokens} (finish_reason=length); "
            f"raise max_tokens for model '{self.model_id}' in the slate"
        )

    def _record(self, outcome: _Outcome, purpose: str, error: str | None = None, failure: str | None = None) -> None:
        s = outcome.stats
        self.cache.record(
            run_id=self.run_id,
            role=self.role,
            model_id=self.model_id,
            purpose=purpose,
            cached=s.cache_hits > 0,
            ok=error is None,
            tokens_in=s.tokens_in,
            tokens_out=s.tokens_out,
            cost_usd=s.cost_usd,
            latency_s=s.latency_s,
            retries=outcome.retries,
            error=self._redact(error) if error else None,
            failure=failure,
            cache_key=outcome.key,
        )

    # -- the ChatClient protocol ---------------------------------------------------------------

    def complete_text(self, messages: Messages, *, purpose: str) -> Reply[str]:
        """Send the messages; return the assistant's text (a leading <think> block removed)."""
        outcome = self._request(list(messages), None, purpose)
        self._record(outcome, purpose)
        return Reply(value=strip_thinking(outcome.text), raw=outcome.text, stats=outcome.stats)

    def complete_json(self, messages: Messages, schema: type[M], *, purpose: str) -> Reply[M]:
        """Send the messages; return the reply validated as `schema`, re-asking on a reply that does
        not validate (up to ref.parse_retries times), then ReplyParseError (ReplyCutError when the last
        reply was cut at max_tokens). A cut reply that validates anyway is used. A failure of the first
        request raises ModelCallError; a failure of a re-ask raises ReplyParseError with the last reply."""
        original = list(messages)
        conversation = original
        total = CallStats()
        attempts = self.ref.parse_retries + 1
        last_reply, last_error = "", ""
        for attempt in range(1, attempts + 1):
            try:
                outcome = self._request_json(conversation, schema, purpose)
            except ModelCallError as exc:
                if attempt == 1:
                    raise
                raise ReplyParseError(
                    model_id=self.model_id,
                    purpose=purpose,
                    raw=self._redact(last_reply),
                    error=f"{last_error}; then the re-ask failed: {exc}",
                    attempts=attempt,
                    kind=exc.kind,
                ) from None
            total = total + outcome.stats
            try:
                value = parse_reply(outcome.text, schema)
            except (ValueError, ValidationError) as exc:
                cut = outcome.finish_reason == "length"
                error = self._redact(describe_validation_error(exc))
                if cut:
                    error = self._cut_message(outcome.stats)
                    self._record(outcome, purpose, error=error, failure="cut_reply")
                else:
                    self._record(outcome, purpose, error=f"reply did not validate: {error}", failure="invalid_reply")
                last_reply, last_error = outcome.text, error
                if attempt == attempts:
                    error_type = ReplyCutError if cut else ReplyParseError
                    raise error_type(
                        model_id=self.model_id,
                        purpose=purpose,
                        error=error,
                        raw=self._redact(outcome.text),
                        attempts=attempts,
                    ) from None
                conversation = reask_messages(
                    original, self._redact(outcome.text), error, attempt=attempt + 1, attempts=attempts, cut=cut
                )
                continue
            self._record(outcome, purpose)
            return Reply(value=value, raw=outcome.text, stats=total)
        raise AssertionError("unreachable")

    def _request_json(self, messages: Messages, schema: type[BaseModel], purpose: str) -> _Outcome:
        """One JSON request in the current structured-output mode, stepping down on a rejection."""
        while True:
            mode = self._json_mode
            sent = messages if mode == "json_schema" else with_schema_instruction(messages, schema)
            try:
                return self._request(sent, response_format_for(mode, schema), purpose)
            except _FormatRejected:
                if self.ref.structured_output != "auto" or not self._step_down(mode):
                    raise

    def _step_down(self, rejected: str) -> bool:
        """Remember that `rejected` does not work here; False when there is nothing left to try."""
        with self._lock:
            if self._json_mode == rejected:
                position = FORMAT_ORDER.index(rejected)
                if position + 1 >= len(FORMAT_ORDER):
                    return False
                self._json_mode = FORMAT_ORDER[position + 1]
                self.cache.set_json_mode(self.ref.model, self.base_url, self._json_mode)
            return True
