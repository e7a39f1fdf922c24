"""A thinking model's reasoning, kept apart from its answer. Servers hand it over in one of three ways:

* in a field of the message beside `content`: `reasoning_content` (llama-server with a reasoning format, vLLM before
  0.11, SGLang, DeepSeek's API) or `reasoning` (vLLM from 0.11, Ollama, OpenRouter);
* inline at the start of `content`, between <think> and </think> (a server without a reasoning parser: Qwen3 or
  DeepSeek-R1 on llama-server with `--reasoning-format none`), or between <thought> and </thought> (Gemini's thought
  summaries); a chat template that opens the block itself leaves only the closing tag in the reply;
* not at all (OpenAI's and Anthropic's chat endpoints keep it hidden and report only its token count).

The answer alone goes to the simulator, a judge, a metric or `response_text`; the reasoning is kept in the call cache
and shown on the explorer's call page. Pure.
"""

from __future__ import annotations

import re
from typing import Any

REASONING_FIELDS = ("reasoning_content", "reasoning")
_OPEN_RE = re.compile(r"^\s*<(think|thought|thinking)>(.*?)(?:</\1>|\Z)\s*", re.DOTALL)
_CLOSE_ONLY_RE = re.compile(r"^(.*?)</(think|thought|thinking)>\s*", re.DOTALL)


def split_inline(text: str) -> tuple[str, str]:
    """(reasoning, answer) of a reply whose content may start with reasoning blocks: every leading
    <think>…</think> (or <thought>, <thinking>) block, a block left open (the reply was cut while reasoning: no
    answer), or text before a lone closing tag (the template opened the block). A reply without one is all answer."""
    if "</" not in text and "<" not in text[:64]:
        return "", text  # the common case, decided without a regular expression
    parts: list[str] = []
    rest = text
    if not rest.lstrip().startswith("<"):
        lone = _CLOSE_ONLY_RE.match(rest)
        if lone is None or f"<{lone.group(2)}>" in lone.group(1):
            return "", text
        parts.append(lone.group(1).strip())
        rest = rest[lone.end() :]
    while (block := _OPEN_RE.match(rest)) is not None:
        parts.append(block.group(2).strip())
        rest = rest[block.end() :]
    return "\n\n".join(p for p in parts if p), rest


def field_reasoning(message: Any) -> str:
    """The reasoning a server put in a field of the message (an SDK message object or a dict), or ''."""
    found: list[str] = []
    extra = getattr(message, "model_extra", None) or {}
    for name in REASONING_FIELDS:
        value = message.get(name) if isinstance(message, dict) else getattr(message, name, None) or extra.get(name)
        if isinstance(value, str) and value.strip() and value.strip() not in found:
            found.append(value.strip())
    return "\n\n".join(found)


def split_reply(content: str, message: Any = None) -> tuple[str, str]:
    """(reasoning, answer) of one reply: the reasoning fields of `message` and any leading reasoning blocks of
    `content`, joined; the answer is what remains of `content`."""
    inline, answer = split_inline(content)
    fields = field_reasoning(message) if message is not None else ""
    return "\n\n".join(p for p in (fields, inline) if p), answer


def reasoning_tokens(reported: int, completion_tokens: int, reasoning: str, answer: str) -> int:
    """The reasoning tokens of a reply: the provider's own count where it reports one
    (usage.completion_tokens_details.reasoning_tokens), else the reasoning's share of the completion tokens by
    characters (servers count reasoning inside completion_tokens). 0 without reasoning."""
    if reported > 0:
        return reported
    if not reasoning or completion_tokens <= 0:
        return 0
    return round(completion_tokens * len(reasoning) / (len(reasoning) + len(answer)))
