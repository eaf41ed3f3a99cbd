"""What a policy calls the server's tools through. Each call is an HTTP request with the episode's cookies, and
becomes a `function_call` and a `function_call_output` item of the Responses-API trajectory that /verify reads
(contract §D.2: the final answer is the last submit_final_result call)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from finsec_client.client import Call, Cookies, ServerClient

__all__ = ["Toolbox", "ToolReply", "Trajectory"]


@dataclass
class ToolReply:
    status: int
    text: str  # the `results` string of a 200, else the body as the model would see it

    @property
    def ok(self) -> bool:
        return self.status == 200


@dataclass
class Trajectory:
    """The rollout as /verify receives it: `responses_create_params.input` and `response.output`."""

    input: list[dict[str, Any]]
    output: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] | None = None

    @property
    def final_answer(self) -> str | None:
        for item in reversed(self.output):
            if item.get("type") == "function_call" and item.get("name") == "submit_final_result":
                try:
                    answer = json.loads(item["arguments"]).get("final_result")
                except (ValueError, AttributeError):
                    return None
                return answer if isinstance(answer, str) else None
        return None

    def response(self) -> dict[str, Any]:
        return {"output": self.output, **({"usage": self.usage} if self.usage else {})}

    def called(self, name: str, arguments: dict[str, Any], call_id: str) -> None:
        self.output.append(
            {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}
        )

    def answered(self, call_id: str, text: str) -> None:
        self.output.append({"type": "function_call_output", "call_id": call_id, "output": text})


class Toolbox:
    def __init__(self, client: ServerClient, cookies: Cookies, calls: list[Call], trajectory: Trajectory):
        self._client = client
        self._cookies = cookies
        self._calls = calls
        self.trajectory = trajectory
        self.tools_called: list[str] = []
        self._next_id = 0

    async def call(self, name: str, arguments: dict[str, Any], call_id: str | None = None) -> ToolReply:
        """POST /<name>; a transport failure propagates (the episode is over), any reply is the tool's answer."""
        if call_id is None:
            self._next_id += 1
            call_id = f"call_{self._next_id}"
        self.trajectory.called(name, arguments, call_id)
        self.tools_called.append(name)
        reply = await self._client.post(name, arguments, self._cookies, self._calls)
        body = reply.json_or_none()
        if reply.status == 200 and isinstance(body, dict) and isinstance(body.get("results"), str):
            text = body["results"]
        else:
            text = reply.text  # a 404 session_lost body, say: the legacy agent shows it to the model unchanged
        self.trajectory.answered(call_id, text)
        return ToolReply(reply.status, text)

    def say(self, text: str) -> None:
        """An assistant message in the trajectory (the LLM policy's text between tool calls)."""
        self.trajectory.output.append(
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        )
