"""Which model call made a warehouse row, and what the call cache and ledger hold about a call.

A row does not store its call's cache key. The ledger does store, per call, the model id, a purpose naming the
role's step (`judge_turn:<seed>:<turn>`, `respond:<turn>`, ...: eyt_dagster/eyt_bench/chat_roles.py) and the
cache key, and the cache holds each key's raw reply. So a row's call is the ledger's call with the row's model
and purpose whose reply is the row's own text: the raw reply itself (chat_seeds, judge_verdicts,
final_intent_verdicts), the reply with a leading <think> block removed (a response), or a JSON reply whose fields
are the row's (a simulator turn, a perception). A match is exact or not made; when several calls match, all of
them are listed. The cache keeps the request behind each key it sent (`requests`, resources/models/call_cache.py), so a
call's page shows the exact messages and settings, and whether they hash to the key."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from resources.models.call_cache import CallCache, decode_request
from resources.models.call_reads import CallReads
from resources.models.chat_client import extract_json_object, strip_thinking

KEY_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class CallRef:
    """The calls that match one row: `keys` (none, one, or several when the row does not tell them apart)."""

    what: str  # e.g. "judge rubric-judge, turn 3"
    model_id: str
    purpose: str
    keys: tuple[str, ...] = ()
    note: str = ""  # why there is no link, when there is none


@dataclass
class CallFinder:
    """Looks up one dialogue's calls with one ledger query (`wanted` first, then `find`)."""

    reads: CallReads
    wanted: list[tuple[str, str]] = field(default_factory=list)  # (model id, purpose)
    _replies: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)  # -> [(key, text)]

    def load(self) -> None:
        for model_id, purpose, key, text in self.reads.replies_for(sorted(set(self.wanted))):
            self._replies.setdefault((model_id, purpose), []).append((key, text))

    def find(self, what: str, model_id: str | None, purpose: str, same: Callable[[str], bool]) -> CallRef:
        if not model_id:
            return CallRef(what, "", purpose, note="the row names no model")
        if self.reads.missing:
            return CallRef(what, model_id, purpose, note=self.reads.missing)
        candidates = self._replies.get((model_id, purpose), [])
        if not candidates:
            return CallRef(
                what,
                model_id,
                purpose,
                note=f"no call of {model_id} for {purpose} in the ledger (an embedded baseline makes none)",
            )
        keys = tuple(sorted({k for k, text in candidates if _safe(same, text)}))
        note = "" if keys else f"{len(candidates)} call(s) of {model_id} for {purpose}, none with this row's reply"
        return CallRef(what, model_id, purpose, keys, note)


def _safe(same: Callable[[str], bool], text: str) -> bool:
    try:
        return same(text)
    except (ValueError, TypeError, KeyError, AttributeError):
        return False


# How a row's text is compared with a cached reply.
def raw_is(raw: str | None) -> Callable[[str], bool]:
    return lambda text: raw is not None and text == raw


def reply_is(response: str | None) -> Callable[[str], bool]:
    return lambda text: response is not None and strip_thinking(text) == response


def json_has(fields: dict[str, Any]) -> Callable[[str], bool]:
    """The reply's JSON object holds these values (a dotted name reaches into a nested object)."""

    def same(text: str) -> bool:
        value = extract_json_object(text)
        for name, expected in fields.items():
            found = value
            for part in name.split("."):
                found = found[part]
            if found != expected:
                return False
        return True

    return same


def purposes(seed_id: str) -> dict[str, Callable[..., str]]:
    """The ledger purposes of one dialogue's calls (as eyt_dagster/eyt_bench/chat_roles.py names them)."""
    return {
        "chat_seed": lambda: f"chat_seed:{seed_id}",
        "simulate": lambda turn: f"simulate:{seed_id}:{turn}",
        "perceive": lambda turn: f"perceive:{turn}",
        "respond": lambda turn: f"respond:{turn}",
        "judge_turn": lambda turn: f"judge_turn:{seed_id}:{turn}",
        "judge_final": lambda: f"judge_final:{seed_id}",
    }


@dataclass(frozen=True)
class Call:
    key: str
    reply: dict[str, Any] | None  # the replies row: model, text, tokens, latency, finish_reason, created_at
    ledger: list[dict[str, Any]]  # every ledger row with this key, in call order (cached or not, ok or not)
    request: dict[str, Any] | None = None  # the request the key hashes (model, base_url, messages, settings, seed)
    # the replies to this request that could not be used (did not validate, cut at max_tokens), first attempt first:
    # rejected_replies rows (attempt, text, tokens, finish_reason, failure, error, rejected_at)
    rejected: list[dict[str, Any]] = field(default_factory=list)

    @property
    def request_verified(self) -> bool:
        """The stored request hashes to the key: it is exactly what was sent (a masked one no longer does)."""
        return self.request is not None and CallCache.key_of(self.request) == self.key

    @property
    def settings(self) -> list[tuple[str, str]]:
        """The request's sampling settings and seed as (name, JSON text), the response format last."""
        if self.request is None:
            return []
        settings = dict(self.request.get("settings") or {})
        rows = [(name, _json(value)) for name, value in settings.items() if name != "response_format"]
        rows.append(("seed", _json(self.request.get("seed"))))
        rows.append(("response_format", _json(settings.get("response_format"), indent=2)))
        return rows

    @property
    def pretty_reply(self) -> str | None:
        """The reply indented when it is one JSON object, else None."""
        if not self.reply:
            return None
        try:
            return json.dumps(json.loads(self.reply["text"]), indent=2, ensure_ascii=False)
        except ValueError:
            return None


def _json(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=True)


def call(reads: CallReads, key: str) -> Call | None:
    """The cached reply, request and ledger rows of one cache key, or None when neither has it."""
    if not KEY_RE.match(key):
        return None
    reply, ledger = reads.reply(key), reads.ledger(key)
    if reply is None and not ledger:
        return None
    blob = reads.request(key)
    return Call(key, reply, ledger, decode_request(blob) if blob is not None else None, reads.rejected(key))
