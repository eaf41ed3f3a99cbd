"""Responses API <-> Chat Completions, for OpenAI-compatible servers that only offer the latter (contract §E.3).

Callers build Responses create bodies and read Responses-shaped replies; this module is the only place that knows
the Chat Completions shapes. Only what the judge and retrieval use is translated: text messages, the token cap,
sampling parameters and reasoning effort. Tools and structured-output formats are not.
"""

from __future__ import annotations

from typing import Any

__all__ = ["chat_request", "responses_reply"]

# Create-params that mean the same thing in both APIs. Anything else (tools, text.format, truncation, include,
# previous_response_id, stream, ...) has no faithful chat equivalent here and is dropped.
_SHARED_PARAMS = frozenset(
    {
        "model",
        "temperature",
        "top_p",
        "user",
        "metadata",
        "store",
        "service_tier",
        "seed",
        "stop",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
    }
)

# finish_reason -> Responses incomplete_details.reason; a finish reason not listed means the reply is complete.
_INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


def chat_request(body: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions body equivalent to a Responses create body."""
    request = {key: value for key, value in body.items() if key in _SHARED_PARAMS}
    messages = [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
    request["messages"] = messages + _messages(body.get("input", []))
    if body.get("max_output_tokens") is not None:  # null means uncapped: leave the server's default
        request["max_tokens"] = body["max_output_tokens"]
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort"):
        request["reasoning_effort"] = reasoning["effort"]
    return request


def _messages(items: str | list[Any]) -> list[dict[str, str]]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    # Items without a role (function calls and their outputs) have no plain chat form; the callers never send them.
    return [
        {"role": item["role"], "content": _text(item.get("content"))}
        for item in items
        if isinstance(item, dict) and "role" in item
    ]


def _text(content: Any) -> str:
    """A Responses message content (a string or a list of text parts) as one string."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


def responses_reply(chat: dict[str, Any]) -> dict[str, Any]:
    """A Responses-shaped object equivalent to a Chat Completions reply (its first choice)."""
    choices = chat.get("choices")
    choice: dict[str, Any] = (
        choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    )
    raw_message = choice.get("message")
    message: dict[str, Any] = raw_message if isinstance(raw_message, dict) else {}
    output: list[dict[str, Any]] = []
    # vLLM and SGLang put a reasoning model's thinking beside the answer; keep it as the reasoning item it would be.
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        output.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": reasoning}]})
    finish = choice.get("finish_reason")
    # a string only: a list here (a malformed reply) made the lookup raise TypeError
    incomplete = _INCOMPLETE_REASONS.get(finish) if isinstance(finish, str) else None
    status = "incomplete" if incomplete else "completed"
    if isinstance(message.get("content"), str):
        output.append(
            {
                "type": "message",
                "role": "assistant",
                "status": status,
                "content": [{"type": "output_text", "text": message["content"], "annotations": []}],
            }
        )
    reply: dict[str, Any] = {
        "id": chat.get("id"),
        "object": "response",
        "model": chat.get("model"),
        "status": status,
        "output": output,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "usage": _usage(chat.get("usage")),
    }
    if chat.get("error") is not None:
        reply["error"] = chat["error"]
    return reply


def _usage(usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return None
    return {
        "input_tokens": usage.get("prompt_tokens"),
        "output_tokens": usage.get("completion_tokens"),
        "total_tokens": usage.get("total_tokens"),
    }
