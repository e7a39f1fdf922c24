"""What each kind of OpenAI-compatible server takes, ignores and refuses, as data: the provider profiles a slate's
model names with `profile:`, and the adaptations of a request that a profile (or a refusal the server sent) calls
for. Pure: no network, no storage. resources/models/chat_transport.py applies them to the wire body; the table of
providers, with the public page each row comes from, is in docs/remote-models.md.

An adaptation changes how one request parameter travels: `rename` it (max_tokens -> max_completion_tokens), `drop` it
(the provider's default applies), `clamp` it into the provider's range, or `map` a value the provider does not take
to the nearest one it does. Each applied adaptation leaves a note in the call's ledger row, the run log and the rows
the call fed ("temperature: provider default (1); the slate asked 0.7"). A note of a sampling setting sent with
another value than the slate's is a different experimental condition (`changes_condition`), which the leaderboard
flags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

Action = Literal["rename", "drop", "clamp", "map"]
# The names a slate's `profile:` takes (`auto` picks one of the others from the base URL and model name).
ProfileName = Literal[
    "auto", "openai", "openai-reasoning", "anthropic", "gemini", "vllm", "llama.cpp", "ollama", "generic"
]

# The parameters whose value decides what the model samples: changing one changes the experiment.
SAMPLING_PARAMS = frozenset({"temperature", "top_p", "reasoning_effort"})
# Parameters a request cannot do without (a refusal naming one cannot be adapted away).
NEEDED_PARAMS = frozenset({"model", "messages", "modalities", "audio"})
# reasoning_effort values from least to most reasoning (a value a provider lacks maps to its nearest neighbour).
EFFORT_ORDER = ("none", "minimal", "low", "medium", "high")
# Another name a parameter may go by, where a server asks for it ("Use 'max_completion_tokens' instead").
RENAMES = {"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Adaptation:
    """One change to how parameter `param` is sent. `value`: the new name (rename), the provider's default (drop; None
    when unknown), the largest value allowed (clamp), or the values the provider takes (map). `source` says where it
    comes from: a profile's name, or the server's own refusal."""

    param: str
    action: Action
    value: Any = None
    source: str = ""

    def apply(self, body: dict[str, Any]) -> str | None:
        """Change `body` in place; the note for the ledger, or None when the request was not changed in a way
        worth a note (the parameter was absent, or already within what the provider takes)."""
        if self.param not in body:
            return None
        asked = body[self.param]
        if self.action == "rename":
            body[self.value] = body.pop(self.param)
            return f"{self.param} sent as {self.value}"
        if self.action == "drop":
            del body[self.param]
            if self.value is not None and asked == self.value:
                return None  # the provider's default is what the slate asked for
            default = "provider default" + (f" ({_number(self.value)})" if self.value is not None else "")
            return f"{self.param}: {default}; the slate asked {_number(asked)}"
        if self.action == "clamp":
            if not isinstance(asked, int | float) or asked <= self.value:
                return None
            body[self.param] = self.value
            return f"{self.param}: {_number(self.value)} (the provider's maximum); the slate asked {_number(asked)}"
        sent = nearest_effort(asked, tuple(self.value))
        if sent == asked:
            return None
        body[self.param] = sent
        return f"{self.param}: {sent} (the provider has no '{asked}'); the slate asked {asked}"

    def describe(self) -> str:
        """The adaptation in words, for the docs and the model card."""
        if self.action == "rename":
            return f"{self.param} sent as {self.value}"
        if self.action == "drop":
            default = f" (provider default {_number(self.value)})" if self.value is not None else ""
            return f"{self.param} not sent{default}"
        if self.action == "clamp":
            return f"{self.param} capped at {_number(self.value)}"
        return f"{self.param} mapped to one of {', '.join(self.value)}"


def nearest_effort(asked: str, allowed: tuple[str, ...]) -> str:
    """`asked` when allowed, else the allowed reasoning_effort value nearest to it (the larger one on a tie)."""
    if asked in allowed or not allowed:
        return asked
    if asked not in EFFORT_ORDER:
        return allowed[-1]
    rank = EFFORT_ORDER.index(asked)
    known = [value for value in allowed if value in EFFORT_ORDER]
    if not known:
        return allowed[0]
    return min(known, key=lambda value: (abs(EFFORT_ORDER.index(value) - rank), -EFFORT_ORDER.index(value)))


@dataclass(frozen=True)
class ProviderProfile:
    """What one kind of server takes. `adaptations` apply to every request; `honours_response_format` False: the
    server ignores response_format, so JSON calls start in the mode that spells the schema out in the prompt;
    `page`: the public documentation. Reasoning is read from every field and block any provider uses
    (eyt_dagster/core/reasoning.py), so it needs no setting here."""

    name: str
    title: str
    page: str
    adaptations: tuple[Adaptation, ...] = ()
    honours_response_format: bool = True


def _profile(name: str, title: str, page: str, *adaptations: Adaptation, **flags: Any) -> ProviderProfile:
    marked = tuple(Adaptation(a.param, a.action, a.value, f"profile {name}") for a in adaptations)
    return ProviderProfile(name, title, page, marked, **flags)


PROFILES: dict[str, ProviderProfile] = {
    p.name: p
    for p in (
        _profile(
            "openai",
            "OpenAI, chat models (gpt-4o, gpt-4.1)",
            "https://platform.openai.com/docs/api-reference/chat/create",
            Adaptation("max_tokens", "rename", "max_completion_tokens"),
        ),
        _profile(
            "openai-reasoning",
            "OpenAI, reasoning models (gpt-5 family, o3, o4-mini)",
            "https://platform.openai.com/docs/guides/reasoning",
            Adaptation("max_tokens", "rename", "max_completion_tokens"),
            Adaptation("temperature", "drop", 1),
            Adaptation("reasoning_effort", "map", ("minimal", "low", "medium", "high")),
        ),
        _profile(
            "anthropic",
            "Anthropic, OpenAI SDK compatibility",
            "https://docs.claude.com/en/api/openai-sdk",
            Adaptation("temperature", "clamp", 1.0),
            Adaptation("reasoning_effort", "drop"),  # ignored there; thinking is asked for in extra_body
            honours_response_format=False,
        ),
        _profile(
            "gemini",
            "Google Gemini, OpenAI compatibility",
            "https://ai.google.dev/gemini-api/docs/openai",
            Adaptation("reasoning_effort", "map", ("none", "minimal", "low", "medium", "high")),
        ),
        _profile("vllm", "vLLM", "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html"),
        _profile(
            "llama.cpp",
            "llama.cpp llama-server",
            "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
        ),
        _profile(
            "ollama",
            "Ollama, OpenAI compatibility",
            "https://docs.ollama.com/api/openai-compatibility",
            Adaptation("reasoning_effort", "map", ("none", "low", "medium", "high")),
        ),
        _profile("generic", "any other OpenAI-compatible server", "https://platform.openai.com/docs/api-reference"),
    )
}
PROFILE_NAMES: tuple[str, ...] = get_args(ProfileName)
assert set(PROFILE_NAMES) == {"auto", *PROFILES}, "every profile name has a profile"

_REASONING_MODEL_RE = re.compile(r"^(?:openai/)?(?:o\d|gpt-5)", re.IGNORECASE)


def detect_profile(base_url: str, model: str) -> str:
    """The profile `auto` picks: the hosted providers by their API host (OpenAI's reasoning models by name), Ollama by
    its default port; any other server is `generic`, which reads reasoning from every field and learns the rest from
    the server's refusals."""
    parts = urlsplit(base_url)
    host, port = (parts.hostname or "").lower(), parts.port
    if host == "api.openai.com":
        return "openai-reasoning" if _REASONING_MODEL_RE.match(model) else "openai"
    if host == "api.anthropic.com":
        return "anthropic"
    if host == "generativelanguage.googleapis.com":
        return "gemini"
    if port == 11434 or "ollama" in host:
        return "ollama"
    return "generic"


def resolve_profile(name: str, base_url: str, model: str) -> ProviderProfile:
    """The profile a model's `profile:` names (`auto`: detected from the base URL and model name)."""
    if name == "auto":
        name = detect_profile(base_url, model)
    if name not in PROFILES:
        raise ValueError(f"profile '{name}' does not exist; the profiles are {', '.join(PROFILE_NAMES)}")
    return PROFILES[name]


# -- learning from a refusal ----------------------------------------------------------------------


@dataclass(frozen=True)
class Unadaptable:
    """A refusal that names a parameter no adaptation can help with: the request needs it (messages), the slate
    set it on purpose (extra_body), or it was adapted already and is still refused."""

    param: str
    reason: str


_PARAM_PATTERNS = (
    re.compile(r"[Uu]nsupported parameter:?\s*'([\w.\[\]]+)'"),
    re.compile(r"[Uu]nsupported value:?\s*'([\w.\[\]]+)'"),
    re.compile(r"'([\w.]+)' (?:is not supported|does not support|is not allowed|must be)"),
    re.compile(r"[Uu]nrecognized request argument supplied:\s*([\w.]+)"),
    re.compile(r"[Uu]nknown (?:field|parameter|name)[:\s]*[`'\"]?([\w.]+)"),
    re.compile(r"\('body', '([\w.]+)'"),  # a pydantic location, as vLLM's validation errors give it
    re.compile(r"\b([\w.]+)[`'\"]?:? (?:is )?(?:not supported|not permitted|unsupported)"),
    re.compile(r"\b([\w.]+)[`'\"]?:? (?:must be|should be|is out of range)"),
)
# A refusal teaches an adaptation only when it says the parameter (or its value) is not taken, or states the range.
_UNSUPPORTED_CODES = frozenset({"unsupported_parameter", "unsupported_value"})
_UNSUPPORTED_RE = re.compile(
    r"unsupported|not supported|unrecognized|unknown (?:field|parameter|name)|extra inputs are not permitted|"
    r"extra_forbidden|not allowed|only the default|supported values|allowed values|must be one of",
    re.IGNORECASE,
)
_INSTEAD_RE = re.compile(r"[Uu]se '([\w.]+)' instead")
_DEFAULT_RE = re.compile(r"[Oo]nly the default \(([^)]+)\) value is supported")
_RANGE_RE = re.compile(r"(?:between|range(?: of)?|from)\s*\[?(-?\d+(?:\.\d+)?)\s*(?:and|to|,|\.\.)\s*(-?\d+(?:\.\d+)?)")
_MAX_RE = re.compile(r"(?:less than or equal to|at most|maximum(?: value)?(?: is| of)?|<=)\s*(-?\d+(?:\.\d+)?)")
_QUOTED_RE = re.compile(r"'([a-z]+)'")


def _as_number(text: str) -> float | int:
    value = float(text)
    return int(value) if value.is_integer() else value


def _named_param(error: dict[str, Any], message: str, sent: dict[str, Any]) -> str | None:
    """The parameter a refusal names, if it is one the request sent: the error's `param` (its last path part, for
    vLLM's `body.temperature`-style locations), else the first sent name the message quotes in a known phrasing."""
    param = error.get("param")
    candidates = [_top_level(param)] if isinstance(param, str) and param else []
    for pattern in _PARAM_PATTERNS:
        candidates += [_top_level(match) for match in pattern.findall(message)]
    return next((name for name in candidates if name in sent), None)


def _top_level(path: str) -> str:
    """The request field a parameter path starts at: `messages[0].role` -> messages, `body.seed` -> seed."""
    return re.split(r"[.\[]", path.removeprefix("body."))[0]


def adaptation_for_refusal(
    error: dict[str, Any],
    message: str,
    sent: dict[str, Any],
    *,
    extra_fields: frozenset[str] = frozenset(),
    adapted: frozenset[str] = frozenset(),
) -> Adaptation | Unadaptable | None:
    """What to change after an HTTP 400 / 422 that refused the request `sent` (the body as sent): `error` is the
    server's error object (OpenAI's {"message", "type", "param", "code"}, or what else it sent), `message` its text.
    None when the refusal names no parameter the request sent (it is then an ordinary refusal, or a response_format
    one, which the structured-output modes handle). `extra_fields`: the body fields the slate's extra_body added;
    `adapted`: parameters already adapted for this endpoint."""
    param = _named_param(error, message, sent)
    if param is None or param == "response_format":
        return None
    unsupported = str(error.get("code") or "") in _UNSUPPORTED_CODES or bool(_UNSUPPORTED_RE.search(message))
    ranged = bool(_RANGE_RE.search(message) or _MAX_RE.search(message))
    named = isinstance(error.get("param"), str) and _top_level(error["param"]) == param  # the error's own field
    if param in NEEDED_PARAMS and not unsupported:
        return None  # a refusal of this request's content (a prompt too long, ...), not of a parameter
    if not (unsupported or ranged or named):
        return None
    source = f"the server refused it ({message.strip()[:160]})"
    if param in NEEDED_PARAMS:
        return Unadaptable(param, f"the server refuses '{param}', which every request of this kind needs")
    if param in extra_fields:
        return Unadaptable(param, f"the server refuses '{param}', which the slate's extra_body adds: remove it there")
    if param in adapted:
        return Unadaptable(param, f"the server still refuses '{param}' after it was adapted once")
    asked = sent[param]
    instead = _INSTEAD_RE.search(message)
    if instead and instead.group(1) != param:
        return Adaptation(param, "rename", instead.group(1), source)
    if param in RENAMES and "max_tokens" in message and "max_completion_tokens" in message:
        return Adaptation(param, "rename", RENAMES[param], source)
    default = _DEFAULT_RE.search(message)
    if default:
        try:
            return Adaptation(param, "drop", _as_number(default.group(1)), source)
        except ValueError:
            return Adaptation(param, "drop", default.group(1), source)
    if isinstance(asked, int | float) and not isinstance(asked, bool):
        top = _RANGE_RE.search(message)
        bound = _as_number(top.group(2)) if top else None
        if bound is None and (most := _MAX_RE.search(message)):
            bound = _as_number(most.group(1))
        if bound is not None and asked > bound:
            return Adaptation(param, "clamp", bound, source)
    if param == "reasoning_effort" and isinstance(asked, str):
        allowed = tuple(v for v in _QUOTED_RE.findall(message) if v in EFFORT_ORDER and v != asked)
        if allowed:
            return Adaptation(param, "map", allowed, source)
    return Adaptation(param, "drop", None, source)


NOTE_SEPARATOR = " | "  # between the notes of one call or row (a note itself may hold "; ")


def join_notes(notes: tuple[str, ...] | list[str]) -> str | None:
    """Notes as one text for a ledger row, a cached reply or a table cell; None for none."""
    return NOTE_SEPARATOR.join(notes) or None


def split_notes(text: str | None) -> tuple[str, ...]:
    """The notes of a text join_notes made."""
    return tuple(text.split(NOTE_SEPARATOR)) if text else ()


def changes_condition(note: str) -> bool:
    """Whether a note says a sampling setting was sent with another value than the slate's (a rename's note names
    the parameter and its new name; a changed value's note starts with the parameter and a colon)."""
    return note.split(":", 1)[0] in SAMPLING_PARAMS and ":" in note


def adaptations_warning(role: str, model_id: str, notes: tuple[str, ...]) -> str | None:
    """The run log's line for a role's adapted requests, or None when nothing was changed."""
    if not notes:
        return None
    flagged = (
        " (a sampling setting changed: the leaderboard flags the cell)" if any(map(changes_condition, notes)) else ""
    )
    return (
        f"{role} model '{model_id}': its requests were adapted to its provider{flagged}: {'; '.join(notes)}. "
        "See docs/remote-models.md#providers; set `profile:` in the slate to choose the provider yourself"
    )


def adapt(body: dict[str, Any], adaptations: tuple[Adaptation, ...] | list[Adaptation]) -> list[str]:
    """Apply `adaptations` to `body` in place: the notes of those that changed it (changes_condition says which of
    them sent a sampling setting with another value than the slate's)."""
    notes = [adaptation.apply(body) for adaptation in adaptations]
    return [note for note in notes if note is not None]
