"""Talking to a `provider: openai` endpoint (any OpenAI-compatible server) through the openai SDK: the key, the
SDK client, timeouts and retries, the endpoint's gate, and what a failed request was. The reply protocol on top
(structured replies, re-asks, the cache, call stats) is resources/models/chat_client.py.

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
  budget for a while (resources/models/endpoint_gates.py, docs/endpoint-budgets.md).
* A 400 / 422 naming the response format is `format_rejected` (_FormatRejected), so the caller can step down
  to a plainer structured-output mode.
* A 400 / 413 / 422 that is not about the response format refuses the request itself (e.g. a prompt longer
  than the context) and raises RequestRefusedError (a ModelCallError): retrying it later will not help. Its
  ledger kind is `context_exceeded` when the server says the prompt does not fit its context, else `refused`.
* Provider profiles (eyt_dagster/core/provider_profiles.py): the model's profile (`profile:` in the slate, `auto` by
  default) adapts every request to what its kind of server takes (max_tokens sent as max_completion_tokens, a
  temperature the provider does not take left to its default, ...). A 400 / 422 that names a parameter the request
  sent (`param`, `unsupported_parameter` / `unsupported_value`, or the same in the message) teaches one more
  adaptation: it is stored for the endpoint and model in the call cache (every later process uses it) and the request
  is sent again at once. A refusal that no adaptation can help (a parameter the request needs, one the slate's
  extra_body adds, or one adapted already) raises IncompatibleEndpointError, which fails the model's cells at once.
  Each note of what was changed travels with the reply into the ledger, the cache and the rows the call fed.
* Reasoning (eyt_dagster/core/reasoning.py): the reply's `reasoning_content` / `reasoning` field and any leading
  <think> block are kept apart from the answer, with the reasoning tokens the provider reports (else an estimate).
* Server errors keep the server's own reason: the `message` of its error JSON (OpenAI's, vLLM's and
  llama-server's shape), or its text, cut to SERVER_MESSAGE_MAX_CHARS and with the key redacted; headers
  are never copied. It goes into the raised error (so the item's error row and the run's log) and the ledger.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from eyt_dagster.core.chat_protocol import Messages
from eyt_dagster.core.errors import RequestRefusedError, RoleCallError
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.provider_profiles import (
    Adaptation,
    ProviderProfile,
    Unadaptable,
    adapt,
    adaptation_for_refusal,
    join_notes,
    resolve_profile,
)
from eyt_dagster.core.reasoning import reasoning_tokens, split_reply
from resources.models.call_cache import CachedReply, CallCache
from resources.models.endpoint_gates import EndpointGate, gate_for, retry_after_seconds
from resources.models.spoken_replies import wire_text

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY_PLACEHOLDER = "not-needed"
CHAT_PATH = "/chat/completions"
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output", "guided")
REFUSED_STATUSES = (400, 413, 422)  # the request itself is refused (not the route, key or response_format)
SERVER_MESSAGE_MAX_CHARS = 300
TIMEOUT_ATTEMPTS = 2  # a request that timed out is sent once more, then the call fails
MAX_ADAPTATIONS = 4  # parameters one request may learn to adapt before it fails
_log = logging.getLogger("eyt.providers")
# What each endpoint taught, per call cache, base URL and model: shared by every client of the process, read from the
# cache once, so a lesson one thread learns is used by every later request at once.
_LESSONS: dict[tuple[str, str, str], list[Adaptation]] = {}
_LESSONS_LOCK = threading.Lock()
# The first request of a process to an endpoint goes alone: the requests that arrive meanwhile wait for it, so a
# lesson it learns is used by all of them instead of each being refused for the same parameter.
_PROBED: set[tuple[str, str, str]] = set()
_PROBES: dict[tuple[str, str, str], threading.Lock] = {}


class _FirstRequest:
    """Held by the first request to an endpoint; a request that waited for it goes on as soon as it is through."""

    def __init__(self, key: tuple[str, str, str]) -> None:
        self.key = key
        with _LESSONS_LOCK:
            self.lock = None if key in _PROBED else _PROBES.setdefault(key, threading.Lock())
        self.held = False

    def __enter__(self) -> None:
        if self.lock is None:
            return
        self.lock.acquire()
        with _LESSONS_LOCK:
            self.held = self.key not in _PROBED
        if not self.held:
            self.lock.release()

    def __exit__(self, *exc: object) -> None:
        if self.held:
            with _LESSONS_LOCK:
                _PROBED.add(self.key)
            self.lock.release()  # type: ignore[union-attr]


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


class FormatRejectedError(ModelCallError):
    """The server refused the response_format it was sent (a 400/422 naming it)."""


class RefusedRequestError(ModelCallError, RequestRefusedError):
    """The server refused the request itself (400 / 413 / 422 not about the response format)."""


class IncompatibleEndpointError(RuntimeError):
    """The endpoint refuses a parameter that no adaptation can help with (one every request needs, one the slate's
    extra_body adds, one already adapted): every call to it would fail the same way, so the run fails at once with
    the model, role, endpoint and the server's reason named, instead of failing each item in turn."""


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
    Every attempt passes the endpoint's gate (resources/models/endpoint_gates.py): a slot of the endpoint's
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


def error_object(exc: openai.APIError) -> dict[str, Any]:
    """The server's error object: OpenAI's {"error": {...}} (the SDK hands over the inner object), vLLM's flat
    {"object": "error", ...}, or Google's list-wrapped [{"error": {...}}]; {} when the body is none of these."""
    body: Any = exc.body
    if isinstance(body, list) and body:
        body = body[0]
    if isinstance(body, dict):
        inner = body.get("error", body)
        return inner if isinstance(inner, dict) else body
    return {}


def server_message(exc: openai.APIError) -> str:
    """The reason the server gave for an error, as the server wrote it: the `message` (or `detail`) of its
    error JSON (the SDK hands over the `error` object of {"error": {...}}), else the body's text, else the
    SDK's message without its "Error code: N -" prefix. Empty when the server gave none."""
    body = exc.body
    if isinstance(body, list) and body and isinstance(body[0], dict):
        body = body[0]  # Google's list-wrapped error
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


# -- the transport ----------------------------------------------------------------------------


def base_url_of(ref: ModelRef) -> str:
    """The endpoint a model is called at: its base_url (OpenAI's when it names none), without a trailing slash."""
    return (ref.base_url or DEFAULT_BASE_URL).rstrip("/")


class ChatTransport:
    """The wire to one `provider: openai` ModelRef playing one role: the SDK client (made at the first network
    call, behind the endpoint's gate), and the ledger row of each request that fails."""

    def __init__(self, ref: ModelRef, *, role: str, cache: CallCache, run_id: str | None = None) -> None:
        self.ref = ref
        self.model_id = ref.id
        self.role = role
        self.cache = cache
        self.run_id = run_id
        self.base_url = base_url_of(ref)
        self._lock = threading.Lock()
        self._client: openai.OpenAI | None = None
        self._http: _CountingHttpClient | None = None
        self.profile: ProviderProfile = resolve_profile(ref.profile, self.base_url, ref.model)
        self._lessons_key = (cache.where, self.base_url, ref.model)

    def share_connection(self, other: ChatTransport) -> None:
        """Use `other`'s SDK client (and so its connections), if it has made one yet."""
        with other._lock:
            self._client, self._http = other._client, other._http

    # -- the provider's adaptations ---------------------------------------------------------------

    def adaptations(self) -> list[Adaptation]:
        """The profile's adaptations, then those the endpoint taught by refusing a parameter (in that order: a learned
        one names the parameter as the profile sends it)."""
        return [*self.profile.adaptations, *self._lessons()]

    def _lessons(self) -> list[Adaptation]:
        with _LESSONS_LOCK:
            if self._lessons_key not in _LESSONS:
                _LESSONS[self._lessons_key] = self.cache.adaptations(self.ref.model, self.base_url)
            return list(_LESSONS[self._lessons_key])

    def _learn(self, adaptation: Adaptation) -> None:
        """Keep an adaptation the endpoint taught, for this process and in the cache (for every later process), and
        say so once; a lesson another thread learned first is not stored or said again."""
        self._lessons()
        with _LESSONS_LOCK:
            lessons = _LESSONS[self._lessons_key]
            if any(
                (a.param, a.action, a.value) == (adaptation.param, adaptation.action, adaptation.value) for a in lessons
            ):
                return
            _LESSONS[self._lessons_key] = [*(a for a in lessons if a.param != adaptation.param), adaptation]
        self.cache.set_adaptation(self.ref.model, self.base_url, adaptation)
        _log.warning(
            "model '%s' (%s) at %s: %s; %s",
            self.model_id,
            self.role,
            self.base_url,
            adaptation.describe(),
            adaptation.source,
        )

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

    def redact(self, text: str) -> str:
        """Remove the key (if a server echoed it) from text bound for errors or the ledger."""
        env = self.ref.api_key_env
        secret = os.environ.get(env) if env else None
        if secret:
            text = text.replace(secret, "***")
        return text

    # -- one request ---------------------------------------------------------------------------

    def _request_kwargs(self, messages: Messages, settings: dict[str, Any], seed: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.ref.model,
            "messages": messages,
            "temperature": settings["temperature"],
            "max_tokens": settings["max_tokens"],
            "seed": seed,
        }
        for name in ("reasoning_effort", "response_format"):
            if settings[name] is not None:
                kwargs[name] = settings[name]
        if settings.get("audio"):  # a reply in audio (resources/models/spoken_replies.py)
            kwargs["modalities"], kwargs["audio"] = settings["modalities"], settings["audio"]
        if settings["extra_body"]:
            kwargs["extra_body"] = settings["extra_body"]
        return kwargs

    def send(
        self, messages: Messages, settings: dict[str, Any], *, seed: int, purpose: str, key: str
    ) -> tuple[CachedReply, int]:
        """One chat request over the network, the SDK's retries included: the reply and how many retries it
        took. A failure is recorded in the ledger (under the cache key `key`) and raised as ModelCallError
        (MissingApiKeyError when the key is not set)."""
        sdk = self._sdk_or_record(purpose, key)
        assert self._http is not None
        body = request_body(self._request_kwargs(messages, settings, seed))
        extra_fields = frozenset(settings["extra_body"] or {})
        started = time.perf_counter()
        resent = 0
        with _FirstRequest(self._lessons_key), self._http.track() as attempts:
            while True:
                wire = dict(body)
                used = self.adaptations()
                notes = adapt(wire, used)
                try:
                    completion = sdk.post(CHAT_PATH, body=wire, cast_to=ChatCompletion)
                    break
                except openai.APIError as exc:  # HTTP errors, connection errors and timeouts, after the retries
                    latency = time.perf_counter() - started
                    lesson = self._lesson(exc, wire, extra_fields, used) if resent < MAX_ADAPTATIONS else None
                    if isinstance(lesson, Adaptation):
                        self._learn(lesson)
                        resent += 1
                        continue
                    if isinstance(lesson, Unadaptable):
                        raise self._incompatible(exc, lesson, purpose, key, latency, attempts) from None
                    raise self._failed(exc, purpose, key, latency, settings["response_format"], attempts) from None
        latency = time.perf_counter() - started
        reply = self._reply_from(completion, latency, spoken=bool(settings.get("audio")), notes=notes)
        return reply, attempts.retries  # the adapted resends are among the attempts counted

    def _lesson(
        self, exc: openai.APIError, wire: dict[str, Any], extra_fields: frozenset[str], used: list[Adaptation]
    ) -> Adaptation | Unadaptable | None:
        """What a refusal of `wire` (built with the adaptations `used`) teaches (eyt_dagster/core/provider_profiles.py
        adaptation_for_refusal), for a 400 / 422. A parameter another thread learned to adapt while this request was
        under way is learned again (the same lesson), not taken for one that adapting did not help."""
        if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
            return None
        learned = frozenset(a.param for a in used if a not in self.profile.adaptations)
        message = self.redact(server_message(exc))
        return adaptation_for_refusal(error_object(exc), message, wire, extra_fields=extra_fields, adapted=learned)

    def _incompatible(
        self, exc: openai.APIError, lesson: Unadaptable, purpose: str, key: str, latency: float, attempts: _Attempts
    ) -> IncompatibleEndpointError:
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        detail = self.redact(server_message(exc))[:SERVER_MESSAGE_MAX_CHARS] or "the server gave no reason"
        what = f"HTTP {status}: {detail}; {lesson.reason}"
        self._record_failed(purpose, key, error=what, failure="refused", latency_s=latency, retries=attempts.retries)
        return IncompatibleEndpointError(f"model '{self.model_id}' ({self.role}, {purpose}) at {self.base_url}: {what}")

    def _sdk_or_record(self, purpose: str, key: str) -> openai.OpenAI:
        """The SDK client; a missing key is recorded in the ledger before it is raised."""
        try:
            return self._sdk()
        except MissingApiKeyError:
            self._record_failed(purpose, key, error=f"{self.ref.api_key_env} is not set", failure="no_key")
            raise

    def _record_failed(self, purpose: str, key: str, **what: Any) -> None:
        """A ledger row for a request that got no reply (`what`: error, failure kind, latency, retries)."""
        self.cache.record(
            run_id=self.run_id,
            role=self.role,
            model_id=self.model_id,
            purpose=purpose,
            cached=False,
            ok=False,
            cache_key=key,
            **what,
        )

    @staticmethod
    def _reply_from(
        completion: Any, latency: float, spoken: bool = False, notes: list[str] | None = None
    ) -> CachedReply:
        """The reply, its reasoning apart; asked for in audio, its text is the wire envelope of the audio, which the
        chat client turns into the envelope it caches (resources/models/spoken_replies.py)."""
        choice = completion.choices[0] if completion.choices else None
        message = choice.message if choice is not None else None
        usage = completion.usage
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        reasoning, answer = split_reply((message.content if message is not None else None) or "", message)
        details = getattr(usage, "completion_tokens_details", None)
        reported = int(getattr(details, "reasoning_tokens", 0) or 0)
        return CachedReply(
            text=wire_text(message) if spoken else answer,
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=tokens_out,
            latency_s=latency,
            finish_reason=choice.finish_reason if choice is not None else None,
            reasoning=reasoning or None,
            reasoning_tokens=reasoning_tokens(reported, tokens_out, reasoning, answer),
            adaptations=join_notes(notes or []),
        )

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
        detail = self.redact(server_message(exc))[:SERVER_MESSAGE_MAX_CHARS] or "the server gave no reason"
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
        failure = "format_rejected" if rejected_format else failure
        self._record_failed(purpose, key, error=what, failure=failure, latency_s=latency, retries=attempts.retries)
        error_type = (
            FormatRejectedError
            if rejected_format
            else RefusedRequestError
            if status in REFUSED_STATUSES
            else ModelCallError
        )
        return error_type(message, model_id=self.model_id, base_url=self.base_url, status=status, kind=failure)
