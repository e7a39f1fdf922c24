"""Errors of a model call (or of the clip a call needs) that belong to one item (a dialogue, a verdict, a forced
choice), shared by both benchmarks: the item becomes an error row and the rest of the partition goes on."""

from __future__ import annotations

from pydantic import ValidationError


# A call that failed in a way that belongs to one dialogue (an unusable reply, a server error after
# retries): the dialogue or verdict becomes an error row and the rest of the partition goes on.
# Anything else (a missing API key, a bug) fails the run, loudly.
class RoleCallError(Exception):
    """A model call failed for this item only; the chat client's errors derive from it."""


class ReplyUnusableError(RoleCallError):
    """The model answered, but its reply never validated after the allowed re-asks. `raw` is the last reply
    (where a protocol scores such a reply as wrong rather than as an error, e.g. SpeechEQ's parse failures)."""

    raw: str = ""


class RequestRefusedError(RoleCallError):
    """The server answered this request with a refusal of the request itself (HTTP 400 / 413 / 422 not about
    the response format, e.g. a prompt longer than the model's context). Unlike a connection failure, a
    timeout, a rate limit or a server error, retrying the same request later will not help."""


class ClipUnusableError(RoleCallError):
    """A clip of this item cannot be read or analysed (missing, undecodable, silent): the round cannot be put to
    the model, so the item becomes an error row naming the clip, and a rerun tries it again."""


PER_ITEM_ERRORS: tuple[type[Exception], ...] = (RoleCallError, ValidationError)
