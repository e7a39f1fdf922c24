"""The ChatClient for `provider: openai` models (any OpenAI-compatible endpoint): the reply protocol the roles
call. It asks for a text or a structured (JSON) reply, validates it, re-asks after a reply that does not
validate, and turns the reply into the role's value and its call stats. The network side (key, SDK client,
retries, timeouts, endpoint gates, what a failed request was) is resources/models/chat_transport.py.

* Cache: every successful raw reply is stored in the CallCache under a key of model, base URL,
  messages, settings and seed; an identical later call makes no network call. Validation happens
  after the cache (see resources/models/call_cache.py).
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
* Stats: `CallStats.calls` counts chat requests that went to the network (SDK transport retries are
  not counted there; the ledger has them), `cache_hits` those served from the cache. Tokens, cost and
  latency are the reply's own, also for a cache hit, so a rerun reports the same numbers; the
  ledger's `cached` flag (and `CallCache.summary()['spent_usd']`) tells what was really paid.
* Audio replies (`complete_spoken`): the request adds `modalities` and `audio` (so its key differs from the text
  call's); the reply's audio is written to the data directory's clip store and the cache keeps its transcript and
  sha256 (resources/models/spoken_replies.py).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from eyt_dagster.core.chat_protocol import Messages
from eyt_dagster.core.errors import ReplyUnusableError
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.provider_profiles import join_notes
from eyt_dagster.core.reasoning import reasoning_tokens, split_inline
from eyt_dagster.core.replies import CallStats, Reply
from eyt_dagster.core.spoken_reply import SpokenReply
from resources.models.call_cache import CachedReply, CallCache
from resources.models.chat_transport import ChatTransport, FormatRejectedError, ModelCallError
from resources.models.spend_guard import SpendGuard
from resources.models.spoken_replies import SpokenReplyError, audio_settings, keep_audio, spoken_reply

M = TypeVar("M", bound=BaseModel)

FORMAT_ORDER = ("json_schema", "json_object", "none")
PARSE_ERROR_MAX_CHARS = 400
REASK_EXCERPT_CHARS = 600  # at most this much of a rejected reply is shown to the model in a re-ask
REASK_NOTE_CHARS = 300  # the fixed wording of a re-ask note (without the error)
REASK_MAX_EXTRA_CHARS = REASK_EXCERPT_CHARS + PARSE_ERROR_MAX_CHARS + REASK_NOTE_CHARS


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
    reasoning: str = ""
    json_mode: str | None = None  # the structured-output mode a JSON request was sent in
    # > 0: the request's replies were unusable this many times across runs (ModelRef.reply_attempts): this is the last
    # of them, served from the cache without asking again
    gave_up_after: int = 0


# -- parsing ----------------------------------------------------------------------------------

_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def strip_thinking(text: str) -> str:
    """The answer of a reply whose content may start with reasoning blocks (eyt_dagster/core/reasoning.py)."""
    return split_inline(text)[1]


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


# -- the client -------------------------------------------------------------------------------


class OpenAIChatClient:
    """A ChatClient for one `provider: openai` ModelRef playing one role."""

    def __init__(
        self,
        ref: ModelRef,
        *,
        role: str,
        cache: CallCache,
        seed: int,
        run_id: str | None = None,
        repeat: int = 0,
        clip_dir: str | Path | None = None,
        guard: SpendGuard | None = None,
    ) -> None:
        if ref.provider != "openai":
            raise ValueError(f"model '{ref.id}' has provider '{ref.provider}'; OpenAIChatClient needs provider openai")
        self.ref = ref
        self.model_id = ref.id
        self.role = role
        self.cache = cache
        self.seed = seed
        self.repeat = repeat
        self.run_id = run_id
        self.clip_dir = clip_dir  # the data directory whose clip store keeps the audio of spoken replies
        self.guard = guard  # the spend caps, asked before every network call (None: no cap applies)
        self._transport = ChatTransport(ref, role=role, cache=cache, run_id=run_id)
        self.base_url = self._transport.base_url
        self._lock = threading.Lock()
        self._json_mode: str = ref.structured_output
        self._first_mode: str = ref.structured_output  # where `auto` starts: the earliest mode a reply can be in
        if ref.structured_output == "auto":
            # a server known to ignore response_format starts in the mode that spells the schema out in the prompt
            honoured = self._transport.profile.honours_response_format
            self._first_mode = FORMAT_ORDER[0] if honoured else FORMAT_ORDER[-1]
            self._json_mode = cache.json_mode(ref.model, self.base_url) or self._first_mode

    def __repr__(self) -> str:
        return f"OpenAIChatClient(model_id={self.model_id!r}, role={self.role!r}, base_url={self.base_url!r})"

    def with_seed(self, seed: int, repeat: int = 0) -> OpenAIChatClient:
        """The same client (shared connection and structured-output mode) with another sampling seed, for the
        sample `repeat` (0: the first; a later one has its own cache keys: CallCache.request)."""
        twin = OpenAIChatClient(
            self.ref,
            role=self.role,
            cache=self.cache,
            seed=seed,
            run_id=self.run_id,
            repeat=repeat,
            clip_dir=self.clip_dir,
            guard=self.guard,
        )
        twin._transport.share_connection(self._transport)
        with self._lock:
            twin._json_mode = self._json_mode
        return twin

    @property
    def json_mode(self) -> str:
        """The structured-output mode JSON calls use now: json_schema, json_object or none."""
        return self._json_mode

    def check_credentials(self) -> None:
        """Fail now (MissingApiKeyError) rather than at the first uncached call."""
        self._transport.check_credentials()

    def _redact(self, text: str) -> str:
        """Remove the key (if a server echoed it) from text bound for errors or the ledger."""
        return self._transport.redact(text)

    # -- one request ---------------------------------------------------------------------------

    def _settings(self, response_format: dict[str, Any] | None, audio: dict[str, Any] | None = None) -> dict[str, Any]:
        ref = self.ref
        return {
            "temperature": ref.temperature,
            "max_tokens": ref.max_tokens,
            "reasoning_effort": (ref.reasoning_effort or "medium") if ref.thinking else None,
            "extra_body": ref.extra_body,
            "response_format": response_format,
            **(audio or {}),  # only a spoken request has these keys: every other key is as it was
        }

    def _stats(self, reply: CachedReply, cached: bool) -> CallStats:
        """What one reply cost: completion tokens include the reasoning tokens, as providers bill them."""
        cost = (reply.tokens_in * self.ref.price_in_per_mtok + reply.tokens_out * self.ref.price_out_per_mtok) / 1e6
        return CallStats(
            calls=0 if cached else 1,
            cache_hits=1 if cached else 0,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            cost_usd=cost,
            latency_s=reply.latency_s,
            reasoning_tokens=reply.reasoning_tokens or 0,
            adaptations=reply.notes,
        )

    def _request(
        self,
        messages: Messages,
        response_format: dict[str, Any] | None,
        purpose: str,
        audio: dict[str, Any] | None = None,
    ) -> _Outcome:
        """One chat request: from the cache if this exact request finished before, else the network (once,
        also when other threads send the same request meanwhile: resources/models/call_cache.py). Not yet in the
        ledger (the caller records it once it knows whether the reply validates)."""
        settings = self._settings(response_format, audio)
        request = CallCache.request(
            model=self.ref.model,
            base_url=self.base_url,
            messages=messages,
            settings=settings,
            seed=self.seed,
            repeat=self.repeat,
        )
        key = CallCache.key_of(request)
        hit = self.cache.get(key)  # a finished request needs no flight (on Postgres, a lock is a round trip)
        if hit is not None:
            return self._outcome(hit, key, cached=True, retries=0)
        with self.cache.one_flight(key):
            return self._cached_or_sent(request, purpose, key)

    def _cached_or_sent(self, request: dict[str, Any], purpose: str, key: str) -> _Outcome:
        hit = self.cache.get(key)
        if hit is not None:
            return self._outcome(hit, key, cached=True, retries=0)
        rejected = self.cache.rejected(key)
        if len(rejected) >= self.ref.reply_attempts:  # asked often enough: the last unusable reply stands
            last = self._outcome(rejected[-1].reply, key, cached=True, retries=0)
            return replace(last, gave_up_after=len(rejected))
        if self.guard is not None:
            self.guard.admit(self.model_id, purpose)  # a cap reached: BudgetSpentError, nothing sent
        messages, settings = request["messages"], request["settings"]
        self.cache.put_request(key, request, self._redact)  # before sending: a failed call's page shows it too
        reply, retries = self._transport.send(messages, settings, seed=self.seed, purpose=purpose, key=key)
        if settings.get("audio"):
            reply = self._kept(reply, settings["audio"]["format"], purpose, key, retries)
        self.cache.put(
            key,
            model=self.ref.model,
            text=reply.text,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_s=reply.latency_s,
            finish_reason=reply.finish_reason,
            reasoning=reply.reasoning,
            reasoning_tokens=reply.reasoning_tokens,
            adaptations=reply.adaptations,
        )
        return self._outcome(reply, key, cached=False, retries=retries)

    def _kept(self, reply: CachedReply, audio_format: str, purpose: str, key: str, retries: int) -> CachedReply:
        """A reply asked for in audio, its audio stored (the text becomes the envelope the cache keeps). A reply with
        no usable audio is recorded as an invalid reply and raised (SpokenReplyError), not cached."""
        if self.clip_dir is None:
            raise ValueError(f"model '{self.model_id}': a reply in audio needs the client's clip_dir")
        try:
            return replace(reply, text=keep_audio(reply.text, self.clip_dir, audio_format))
        except SpokenReplyError as exc:
            outcome = self._outcome(replace(reply, text=exc.raw), key, cached=False, retries=retries)
            self._record(outcome, purpose, error=str(exc), failure="invalid_reply")
            raise SpokenReplyError(f"model '{self.model_id}' ({purpose}): {exc}", self._redact(exc.raw)) from None

    def _outcome(self, reply: CachedReply, key: str, *, cached: bool, retries: int) -> _Outcome:
        """A reply as the roles read it: its answer, and its reasoning apart (also a reply cached before reasoning was
        kept apart, whose <think> block is still in its text)."""
        inline, answer = split_inline(reply.text)
        reasoning = "\n\n".join(part for part in (reply.reasoning or "", inline) if part)
        if inline and not reply.reasoning_tokens:
            reply = replace(reply, reasoning_tokens=reasoning_tokens(0, reply.tokens_out, inline, answer))
        stats = self._stats(reply, cached)
        return _Outcome(answer, stats, key, retries, reply.finish_reason, reasoning)

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

    def _unusable(self, outcome: _Outcome, purpose: str, error: str, failure: str) -> str:
        """Record a reply that could not be used (`failure`: invalid_reply or cut_reply) and take it out of the replies
        the cache serves, so a later run asks again (up to ModelRef.reply_attempts across runs). The error as the
        row shows it: when the request is not asked again, it says so."""
        if outcome.gave_up_after:
            error += (
                f"; not asked again: {outcome.gave_up_after} replies to this request were unusable across runs "
                f"(reply_attempts: {self.ref.reply_attempts} for model '{self.model_id}')"
            )
        self._record(outcome, purpose, error=error, failure=failure)
        if not outcome.gave_up_after:
            self.cache.reject(outcome.key, failure, self._redact(error))
        return error

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
            reasoning_tokens=s.reasoning_tokens,
            adaptations=join_notes(s.adaptations),
        )

    # -- the ChatClient protocol ---------------------------------------------------------------

    def complete_text(self, messages: Messages, *, purpose: str) -> Reply[str]:
        """Send the messages; return the assistant's answer (its reasoning apart). A reply cut at max_tokens
        (finish_reason=length) is used as it is, and counted (`cut_replies` of its stats)."""
        outcome = self._request(list(messages), None, purpose)
        stats = outcome.stats
        if outcome.finish_reason == "length":  # used now; a later run asks again (ModelRef.reply_attempts)
            self._unusable(outcome, purpose, self._cut_message(stats), "cut_reply")
            stats = stats.model_copy(update={"cut_replies": 1})
        else:
            self._record(outcome, purpose)
        return Reply(value=outcome.text, raw=outcome.text, stats=stats, reasoning=outcome.reasoning)

    def complete_spoken(self, messages: Messages, *, purpose: str, voice: str, audio_format: str) -> Reply[SpokenReply]:
        """Send the messages asking for text and audio (`voice`, `audio_format`); return the transcript with the
        stored clip. Raw is the envelope the cache keeps (transcript, the clip's sha256, no audio bytes). A reply
        without usable audio raises SpokenReplyError (an invalid reply)."""
        if self.clip_dir is None:
            raise ValueError(f"model '{self.model_id}': a reply in audio needs the client's clip_dir")
        outcome = self._request(list(messages), None, purpose, audio_settings(voice, audio_format))
        try:
            value = spoken_reply(outcome.text, self.clip_dir)
        except SpokenReplyError as exc:
            self._unusable(outcome, purpose, str(exc), "invalid_reply")
            raise
        self._record(outcome, purpose)
        return Reply(value=value, raw=outcome.text, stats=outcome.stats, reasoning=outcome.reasoning)

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
            except (ValueError, ValidationError) as first_error:
                problem: Exception = first_error
                if attempt == 1 and self._format_ignored(outcome, purpose):
                    outcome = self._request_json(conversation, schema, purpose)  # the same question, schema in prompt
                    total = total + outcome.stats
                    try:
                        value = parse_reply(outcome.text, schema)
                        self._record(outcome, purpose)
                        return Reply(value=value, raw=outcome.text, stats=total, reasoning=outcome.reasoning)
                    except (ValueError, ValidationError) as again:
                        problem = again
                cut = outcome.finish_reason == "length"
                error = self._redact(describe_validation_error(problem))
                if cut:
                    error = self._cut_message(outcome.stats)
                    shown = self._unusable(outcome, purpose, error, "cut_reply")
                else:
                    shown = self._unusable(outcome, purpose, f"reply did not validate: {error}", "invalid_reply")
                    shown = shown.removeprefix("reply did not validate: ")
                last_reply, last_error = outcome.text, shown
                if attempt == attempts:
                    error_type = ReplyCutError if cut else ReplyParseError
                    raise error_type(
                        model_id=self.model_id,
                        purpose=purpose,
                        error=shown,
                        raw=self._redact(outcome.text),
                        attempts=attempts,
                    ) from None
                conversation = reask_messages(
                    original, self._redact(outcome.text), error, attempt=attempt + 1, attempts=attempts, cut=cut
                )
                continue
            self._record(outcome, purpose)
            return Reply(value=value, raw=outcome.text, stats=total, reasoning=outcome.reasoning)
        raise AssertionError("unreachable")

    def _format_ignored(self, outcome: _Outcome, purpose: str) -> bool:
        """Whether a first reply shows the server ignored response_format (json_schema mode, no JSON object in the
        reply, not cut): then the client moves to the mode that spells the schema out in the prompt, remembers it for
        the endpoint, and records the reply (`format_ignored`)."""
        if self.ref.structured_output != "auto" or outcome.json_mode != "json_schema":
            return False
        if outcome.finish_reason == "length" or "{" in outcome.text:
            return False
        with self._lock:
            if self._json_mode == "json_schema":
                self._json_mode = FORMAT_ORDER[-1]
                self.cache.set_json_mode(self.ref.model, self.base_url, self._json_mode)
        note = "the reply held no JSON object: the server ignores response_format; the schema goes in the prompt now"
        self._record(outcome, purpose, error=note, failure="format_ignored")
        return True

    def _request_json(self, messages: Messages, schema: type[BaseModel], purpose: str) -> _Outcome:
        """One JSON request in the current structured-output mode, stepping down on a rejection. After a step down, a
        valid reply this request got in an earlier mode comes from the cache: nothing answered is asked again."""
        while True:
            mode = self._json_mode
            earlier = self._answered_earlier(messages, schema, mode) if self.ref.structured_output == "auto" else None
            if earlier is not None:
                return earlier
            try:
                sent = self._sent(messages, schema, mode)
                return replace(self._request(sent, response_format_for(mode, schema), purpose), json_mode=mode)
            except FormatRejectedError:
                if self.ref.structured_output != "auto" or not self._step_down(mode):
                    raise

    @staticmethod
    def _sent(messages: Messages, schema: type[BaseModel], mode: str) -> Messages:
        return messages if mode == "json_schema" else with_schema_instruction(messages, schema)

    def _answered_earlier(self, messages: Messages, schema: type[BaseModel], mode: str) -> _Outcome | None:
        """A cached reply to this request in a mode before `mode` (from the profile's first mode on) that validates, or
        None. Nothing to look up while the endpoint is in its first mode (the common case)."""
        for earlier in FORMAT_ORDER[FORMAT_ORDER.index(self._first_mode) : FORMAT_ORDER.index(mode)]:
            request = CallCache.request(
                model=self.ref.model,
                base_url=self.base_url,
                messages=self._sent(messages, schema, earlier),
                settings=self._settings(response_format_for(earlier, schema)),
                seed=self.seed,
                repeat=self.repeat,
            )
            key = CallCache.key_of(request)
            hit = self.cache.get(key)
            if hit is None:
                continue
            outcome = self._outcome(hit, key, cached=True, retries=0)
            try:
                parse_reply(outcome.text, schema)
            except (ValueError, ValidationError):
                continue
            return replace(outcome, json_mode=earlier)
        return None

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
