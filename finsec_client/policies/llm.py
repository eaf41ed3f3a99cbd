"""The LLM policy: an OpenAI-compatible chat-completions endpoint with tool calling plays the episode.

Each turn sends the conversation and the tool schemas (tool_schemas.py); every tool call the model makes is
sent to the server and its result goes back as a `tool` message. The episode ends at the model's
submit_final_result call, or after `max_turns` model turns (then verify's hard gate scores it 0). An endpoint
that fails or answers nonsense raises ModelFailure: the episode failed, it was not scored."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiohttp

from finsec.net.retry import RetryPolicy, TryAgain, with_retries
from finsec.net.safe_fetch import retry_after
from finsec.tools.catalog import INSTRUCTIONS
from finsec_client.tasks import Task
from finsec_client.tool_schemas import DEFAULT_TOOLS, tool_schemas
from finsec_client.toolbox import Toolbox

__all__ = ["LlmPolicy", "MODEL_RETRIES", "ModelFailure", "ModelSpec", "NUDGE"]

NUDGE = "Call submit_final_result with your final answer."


class ModelFailure(Exception):
    """The model endpoint could not be used for a turn."""


# A model endpoint that is busy (429) or failing (5xx), or a dropped connection, is asked again: the one retry
# policy of the project (finsec/net/retry.py), with a short deadline so a dead endpoint fails the episode.
MODEL_RETRIES = RetryPolicy(attempts=3, first_wait=0.5, longest_wait=5.0, jitter=0.5, deadline=30.0)


@dataclass(frozen=True)
class ModelSpec:
    base_url: str  # e.g. http://host:8000/v1
    model: str
    api_key: str | None = None
    max_turns: int = 12
    timeout: float = 120.0
    temperature: float | None = None
    max_tokens: int | None = None  # per model turn
    tools: tuple[str, ...] = DEFAULT_TOOLS


class LlmPolicy:
    name = "llm"

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self._schemas = tool_schemas(spec.tools)
        self._session: aiohttp.ClientSession | None = None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def play(self, task: Task, tools: Toolbox) -> None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": task.question},
        ]
        usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        for _ in range(self.spec.max_turns):
            reply = await self._complete(messages)
            for ours, theirs in (
                ("input_tokens", "prompt_tokens"),
                ("output_tokens", "completion_tokens"),
                ("total_tokens", "total_tokens"),
            ):
                usage[ours] += int((reply.get("usage") or {}).get(theirs) or 0)
            tools.trajectory.usage = usage
            message = _message(reply)
            messages.append({k: v for k, v in message.items() if k in ("role", "content", "tool_calls")})
            if isinstance(message.get("content"), str) and message["content"]:
                tools.say(message["content"])
            calls = message.get("tool_calls") or []
            if not calls:
                messages.append({"role": "user", "content": NUDGE})
                continue
            submitted = False
            for call in calls:
                name, arguments, call_id = _tool_call(call)
                if name not in self.spec.tools:  # only the tools offered: never seed, verify or close routes
                    result = f"ERROR: there is no tool named {name[:80]!r}."
                elif arguments is None:
                    result = "ERROR: the arguments were not a JSON object."
                else:
                    result = (await tools.call(name, arguments, call_id)).text
                    submitted = submitted or name == "submit_final_result"
                messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
            if submitted:
                return

    async def _complete(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.spec.timeout))
        session = self._session  # once made, never unset
        body: dict[str, Any] = {
            "model": self.spec.model,
            "messages": messages,
            "tools": self._schemas,
            "tool_choice": "auto",
        }
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        if self.spec.max_tokens is not None:
            body["max_tokens"] = self.spec.max_tokens
        headers = {"Authorization": f"Bearer {self.spec.api_key}"} if self.spec.api_key else {}
        url = self.spec.base_url.rstrip("/") + "/chat/completions"

        async def attempt() -> str:
            try:
                async with session.post(url, json=body, headers=headers) as response:
                    text = await response.text(errors="replace")
                    if response.status == 429 or response.status >= 500:  # busy or failing: worth another try
                        raise TryAgain(
                            response.status,
                            f"model endpoint answered {response.status}: {text[:200]}",
                            retry_after(response.headers),
                        )
                    if response.status != 200:
                        raise ModelFailure(f"model endpoint answered {response.status}: {text[:200]}")
                    return text
            except (TimeoutError, aiohttp.ClientError, OSError) as error:
                raise TryAgain(
                    "transport", f"model endpoint unreachable: {type(error).__name__}: {error}"[:300]
                ) from None

        try:
            text = await with_retries(MODEL_RETRIES, "policy_model", attempt)
        except TryAgain as spent:
            raise ModelFailure(spent.detail) from None
        try:
            reply = json.loads(text)
        except ValueError:
            raise ModelFailure(f"model endpoint sent no JSON: {text[:200]}") from None
        if not isinstance(reply, dict):
            raise ModelFailure("model endpoint sent no chat completion object")
        return reply


def _message(reply: dict[str, Any]) -> dict[str, Any]:
    try:
        message = reply["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelFailure(f"a chat completion without a message: {json.dumps(reply)[:200]}") from None
    if not isinstance(message, dict):
        raise ModelFailure("a chat completion whose message is not an object")
    return {"role": "assistant", **message}


def _tool_call(call: Any) -> tuple[str, dict[str, Any] | None, str]:
    function = call.get("function", {}) if isinstance(call, dict) else {}
    name = str(function.get("name") or "")
    call_id = str(call.get("id") or f"call_{id(call)}") if isinstance(call, dict) else f"call_{id(call)}"
    raw = function.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        arguments = None
    return name, arguments if isinstance(arguments, dict) else None, call_id
