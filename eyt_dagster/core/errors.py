"""Errors of a model call (or of the clip a call needs) that belong to one item (a dialogue, a verdict, a forced
choice), shared by both benchmarks: the item becomes an error row and the rest of the partition goes on. Also the
one vocabulary of failure kinds, used by the call ledger's `failure` column and by the error rows' `error_kind`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

# Why a call failed (the ledger's `failure` column; `error_kind` of dialogue.dialogue_turns' error rows).
FAILURE_KINDS: dict[str, str] = {
    "timeout": "no reply within timeout_s, also after the one retry a timeout gets",
    "connection": "the server could not be reached, after the SDK's retries",
    "http": "the server answered an HTTP error (408/409/429/5xx after the SDK's retries; others at once)",
    "refused": "the server refused the request itself (HTTP 400/413/422 not about the response format); "
    "sending it again will not help",
    "context_exceeded": "the server refused the request because the prompt does not fit the model's context "
    "(on llama-server: the context of one slot, -c divided by --parallel)",
    "format_rejected": "the server refused the response_format; the client moves to the next mode",
    "format_ignored": "the server ignored the response_format (a reply with no JSON object); the client spells the "
    "schema out in the prompt from then on",
    "invalid_reply": "the reply did not validate against the reply schema (after the re-asks, for an error row)",
    "cut_reply": "the reply was cut at max_tokens (finish_reason=length) and did not validate",
    "no_key": "the environment variable that should hold the API key is not set",
    "budget": "stopped by budget: a spend cap (the slate's `budget`, a model's, or --max-cost) was reached before "
    "this call was sent; not a failure of the model, and a run under a higher cap carries on from the cache",
    "other": "any other per-item failure (the error text says what)",
}

# How a summary line names n failures of a kind: (one, several).
_KIND_WORDS: dict[str, tuple[str, str]] = {
    "timeout": ("timeout", "timeouts"),
    "connection": ("connection failure", "connection failures"),
    "http": ("HTTP error", "HTTP errors"),
    "refused": ("refused", "refused"),
    "context_exceeded": ("refused: context length", "refused: context length"),
    "format_rejected": ("response_format refused", "response_format refused"),
    "format_ignored": ("response_format ignored", "response_format ignored"),
    "invalid_reply": ("invalid reply", "invalid replies"),
    "cut_reply": ("reply cut at max_tokens", "replies cut at max_tokens"),
    "no_key": ("missing API key", "missing API key"),
    "budget": ("stopped by budget", "stopped by budget"),
    "other": ("other failure", "other failures"),
}


class RoleCallError(Exception):
    """A model call failed for this item only; the chat client's errors derive from it. `kind` is one of
    FAILURE_KINDS."""

    kind: str = "other"


# A call that failed in a way that belongs to one dialogue (an unusable reply, a server error after
# retries): the dialogue or verdict becomes an error row and the rest of the partition goes on.
# Anything else (a missing API key, a bug) fails the run, loudly.
class ReplyUnusableError(RoleCallError):
    """The model answered, but its reply never validated after the allowed re-asks. `raw` is the last reply
    (where a protocol scores such a reply as wrong rather than as an error, e.g. SpeechEQ's parse failures)."""

    raw: str = ""
    kind = "invalid_reply"


class RequestRefusedError(RoleCallError):
    """The server answered this request with a refusal of the request itself (HTTP 400 / 413 / 422 not about
    the response format, e.g. a prompt longer than the model's context). Unlike a connection failure, a
    timeout, a rate limit or a server error, retrying the same request later will not help."""

    kind = "refused"


class ClipUnusableError(RoleCallError):
    """A clip of this item cannot be read or analysed (missing, undecodable, silent): the round cannot be put to
    the model, so the item becomes an error row naming the clip, and a rerun tries it again."""


# Words every budget stop's message holds: how an error row of a table without `error_kind` is known as one.
BUDGET_STOP = "stopped by budget, not sent"


class BudgetSpentError(RoleCallError):
    """A spend cap was reached before this call was sent (eyt_dagster/core/budget.py): the item stops, marked as
    stopped by budget rather than failed, and no request goes out. The message holds BUDGET_STOP."""

    kind = "budget"

    def __init__(self, model_id: str, purpose: str, reason: str) -> None:
        super().__init__(
            f"model '{model_id}' ({purpose}): {BUDGET_STOP}: {reason}. Raise the cap (the slate's `budget`, the "
            "model's `budget`, or --max-cost) and run again: what was answered comes from the cache"
        )


def budget_stops(errors: Any) -> Any:
    """Which error rows of a frame a spend cap stopped (a boolean Series): `error_kind` budget where the table has
    that column, else an error text that says so."""
    if "error_kind" in errors.columns:
        return errors["error_kind"] == "budget"
    return errors["error"].astype(str).str.contains(BUDGET_STOP, regex=False)


PER_ITEM_ERRORS: tuple[type[Exception], ...] = (RoleCallError, ValidationError)


def failure_kind(exc: BaseException) -> str:
    """The FAILURE_KINDS key of a per-item error: the chat client's errors carry theirs; a reply that a role
    rejected itself (pydantic) is an invalid reply."""
    kind = getattr(exc, "kind", None)
    if isinstance(kind, str) and kind in FAILURE_KINDS:
        return kind
    return "invalid_reply" if isinstance(exc, ValidationError) else "other"


def describe_error(exc: BaseException) -> str:
    """An item's error for its error row and the run's log: a model call's error says everything itself (model, role,
    endpoint, the server's reason), so it is its message alone; anything else is named by its kind."""
    if isinstance(exc, RoleCallError):
        return str(exc)
    if isinstance(exc, ValidationError):
        return f"reply did not validate: {exc}"
    return f"{type(exc).__name__}: {exc}"


def describe_failures(failures: Iterable[tuple[str | None, str | None]]) -> str:
    """(role, kind) pairs as one line, per role and kind, most frequent first:
    "simulator: 2 timeouts, 2 refused: context length; target: 1 HTTP error". Empty for none."""
    counts = Counter((role or "unknown", kind or "other") for role, kind in failures)
    by_role: dict[str, list[tuple[str, int]]] = {}
    for (role, kind), n in sorted(counts.items(), key=lambda item: (item[0][0], -item[1], item[0][1])):
        by_role.setdefault(role, []).append((kind, n))
    parts = []
    for role, kinds in by_role.items():
        words = [f"{n} {_KIND_WORDS.get(kind, (kind, kind))[0 if n == 1 else 1]}" for kind, n in kinds]
        parts.append(f"{role}: {', '.join(words)}")
    return "; ".join(parts)


def failures_line(errors: Any) -> str:
    """Error rows' failures per role and kind as one line (describe_failures), from a frame's `error_role` and
    `error_kind` columns; rows of a table without them (or written before they existed) count as unknown."""
    n = len(errors)
    roles = errors["error_role"] if "error_role" in errors.columns else [None] * n
    kinds = errors["error_kind"] if "error_kind" in errors.columns else [None] * n
    return describe_failures(
        (_text_or_none(role), _text_or_none(kind)) for role, kind in zip(roles, kinds, strict=True)
    )


def _text_or_none(value: object) -> str | None:
    return None if value is None or value != value else str(value)  # NaN != NaN: a missing value in a frame
