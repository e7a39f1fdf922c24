"""The localhost test server behaving as each provider's public documentation says its OpenAI-compatible endpoint
behaves (docs/remote-models.md, "Providers", names the page behind each): which request parameters it refuses and
with what error body, which it ignores, where a thinking model's reasoning arrives, how usage is reported.

`behave_as(name, inner)` wraps a handler of tests/support/localhost_server.py (`inner` answers the request's question,
as a model would) in one provider's behaviour:

* `openai`: chat models; takes max_tokens and max_completion_tokens; reports reasoning_tokens 0.
* `openai-reasoning`: the gpt-5 family, o3, o4-mini. A request with max_tokens gets HTTP 400 unsupported_parameter
  ("Use 'max_completion_tokens' instead"); a temperature other than 1 gets 400 unsupported_value ("Only the default
  (1) value is supported"); a reasoning_effort it does not take gets 400 unsupported_value. The reasoning stays
  hidden: only its tokens are reported, inside completion_tokens and in completion_tokens_details.reasoning_tokens.
* `anthropic`: ignores response_format, seed and reasoning_effort; caps temperature at 1; refuses n other than 1.
  Asked for JSON without the schema in the prompt, the model answers in prose; told the schema, it answers with
  the JSON object in a ```json fence. No reasoning text, no token details.
* `gemini`: takes reasoning_effort none, minimal, low, medium or high and refuses others with Google's
  list-wrapped error body; with `google.thinking_config.include_thoughts` its thought summary comes inline, inside
  <thought> tags before the answer.
* `vllm`: a reasoning parser puts the reasoning in the message's `reasoning` field (vLLM 0.11 and later).
* `llama.cpp`: llama-server with --reasoning-format deepseek: the reasoning in `reasoning_content`; its error body
  is {"error": {"code": <status>, "message", "type"}}.
* `ollama`: the reasoning in `reasoning`; reasoning_effort high, medium, low or none (others refused);
  max_completion_tokens silently dropped.
* `thinking`: a thinking model served without a reasoning parser (Qwen3, DeepSeek-R1 distills on llama-server with
  --reasoning-format none): a <think> block before every answer, JSON ones too.

Every behaviour that returns reasoning text puts REASONING_MARK in it, so a test can check that no reasoning reached a
reply, a table or a metric.
"""

from __future__ import annotations

from typing import Any

from support.localhost_server import Handler, HandlerResult, StubResponse, _as_response, chat_completion, error_response

REASONING_MARK = "PRIVATE-REASONING-7f3a"
REASONING_TEXT = f"{REASONING_MARK}: first I weigh what the user needs (time < care & cost), then I answer briefly."
HIDDEN_REASONING_TOKENS = 64
SCHEMA_IN_PROMPT = "validates against this JSON schema"
BEHAVIOURS = ("openai", "openai-reasoning", "anthropic", "gemini", "vllm", "llama.cpp", "ollama", "thinking")


def _openai_error(message: str, param: str, code: str) -> StubResponse:
    return error_response(400, message, type_="invalid_request_error", param=param, code=code)


def _google_error(message: str) -> StubResponse:
    return StubResponse(400, [{"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}])  # type: ignore[arg-type]


def _refusal(name: str, body: dict[str, Any]) -> StubResponse | None:
    """The HTTP 400 a provider answers to a parameter it does not take, or None."""
    effort = body.get("reasoning_effort")
    if name == "openai-reasoning":
        if "max_tokens" in body:
            return _openai_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "max_tokens",
                "unsupported_parameter",
            )
        if "temperature" in body and body["temperature"] != 1:
            return _openai_error(
                f"Unsupported value: 'temperature' does not support {body['temperature']} with this model. "
                "Only the default (1) value is supported.",
                "temperature",
                "unsupported_value",
            )
        if effort is not None and effort not in ("minimal", "low", "medium", "high"):
            return _openai_error(
                f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this model. Supported "
                "values are: 'minimal', 'low', 'medium', and 'high'.",
                "reasoning_effort",
                "unsupported_value",
            )
    if name == "anthropic" and body.get("n", 1) != 1:
        return _openai_error("n: only n=1 is supported", "n", "invalid_request_error")
    if name == "gemini" and effort is not None and effort not in ("none", "minimal", "low", "medium", "high"):
        return _google_error(
            f"Invalid reasoning_effort '{effort}': supported values are none, minimal, low, medium, high"
        )
    if name == "ollama" and effort is not None and effort not in ("high", "medium", "low", "none"):
        return _openai_error(
            f"invalid reasoning_effort value: '{effort}' is not supported (use 'high', 'medium', 'low' or 'none')",
            "reasoning_effort",
            "unsupported_value",
        )
    return None


def _content(result: HandlerResult) -> tuple[str, StubResponse | None]:
    """The inner handler's answer text, or its full response when it is not a plain 200 completion."""
    response = _as_response(result)
    if response.status != 200 or not isinstance(response.body, dict):
        return "", response
    message = response.body["choices"][0]["message"]
    return message.get("content") or "", None


def _schema_in_prompt(body: dict[str, Any]) -> bool:
    return any(SCHEMA_IN_PROMPT in str(m.get("content")) for m in body.get("messages", []))


def _anthropic_answer(body: dict[str, Any], answer: str) -> str:
    """Claude through the compatibility layer: response_format never arrives, so JSON comes only when the prompt
    states the schema, fenced as Claude writes it; otherwise a prose answer."""
    if not answer.lstrip().startswith("{"):
        return answer
    if _schema_in_prompt(body):
        return f"Here is the JSON object:\n\n```json\n{answer}\n```"
    return "Happy to help. From what you wrote, the person seems hopeful and wants a concrete plan for the week."


def behave_as(name: str, inner: Handler) -> Handler:
    """`inner` behind the provider `name`'s endpoint (one of BEHAVIOURS)."""
    if name not in BEHAVIOURS:
        raise ValueError(f"no behaviour '{name}'; the behaviours are {BEHAVIOURS}")

    def handler(body: dict[str, Any]) -> HandlerResult:
        refused = _refusal(name, body)
        if refused is not None:
            return refused
        answer, other = _content(inner(body))
        if other is not None:
            return other
        if name == "anthropic":
            answer = _anthropic_answer(body, answer)
        elif name == "gemini" and ((body.get("google") or {}).get("thinking_config") or {}).get("include_thoughts"):
            answer = f"<thought>{REASONING_TEXT}</thought>{answer}"
        elif name == "thinking":
            answer = f"<think>\n{REASONING_TEXT}\n</think>\n\n{answer}"
        reply = chat_completion(answer, completion_tokens=len(answer.split()) + len(REASONING_TEXT.split()))
        message, usage = reply["choices"][0]["message"], reply["usage"]
        if name in ("vllm", "ollama"):
            message["reasoning"] = REASONING_TEXT
        elif name == "llama.cpp":
            message["reasoning_content"] = REASONING_TEXT
        elif name == "openai-reasoning":
            usage["completion_tokens"] = len(answer.split()) + HIDDEN_REASONING_TOKENS
            usage["completion_tokens_details"] = {"reasoning_tokens": HIDDEN_REASONING_TOKENS}
        elif name in ("openai", "anthropic"):
            usage["completion_tokens"] = len(answer.split())
            if name == "openai":
                usage["completion_tokens_details"] = {"reasoning_tokens": 0}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return reply

    return handler


def returns_reasoning(name: str, body: dict[str, Any] | None = None) -> bool:
    """Whether the behaviour hands reasoning text over (Gemini only when the request asks for thoughts)."""
    if name == "gemini":
        return bool(body and ((body.get("google") or {}).get("thinking_config") or {}).get("include_thoughts"))
    return name in ("vllm", "ollama", "llama.cpp", "thinking")
