"""The LLM policy hands the model only the tools it offered: a model under training that names a session route
(seed, verify, close) or a path gets a tool error and the server sees nothing of it."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from finsec_client.policies.llm import LlmPolicy, ModelSpec
from finsec_client.tasks import Task
from finsec_client.toolbox import ToolReply, Trajectory
from harness.aiohttp_app import start


def _call(name: str, arguments: dict, n: int) -> dict:
    return {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


class RecordingTools:
    """The toolbox's side the policy sees; records what would have been POSTed."""

    def __init__(self) -> None:
        self.trajectory = Trajectory(input=[])
        self.posted: list[str] = []

    async def call(self, name, arguments, call_id=None) -> ToolReply:
        self.posted.append(name)
        return ToolReply(200, "ok")

    def say(self, text: str) -> None:
        pass


def test_a_model_cannot_reach_routes_that_are_not_offered_tools():
    hostile = ["seed_session", "verify", "close_session", "aggregate_metrics", "..", "admin/retire_session_state"]
    replies = [
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [_call(name, {}, n) for n, name in enumerate(hostile)],
                    }
                }
            ]
        },
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [_call("submit_final_result", {"final_result": "42"}, 99)],
                    }
                }
            ]
        },
    ]
    seen: list[dict] = []

    async def completions(request: web.Request) -> web.Response:
        seen.append(await request.json())
        return web.json_response(replies[len(seen) - 1])

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", completions)
        runner, url = await start(app)
        policy = LlmPolicy(ModelSpec(base_url=f"{url}/v1", model="stub"))
        tools = RecordingTools()
        try:
            await policy.play(Task(0, "t", "1", "What?", "42"), tools)
        finally:
            await policy.aclose()
            await runner.cleanup()
        assert tools.posted == ["submit_final_result"]
        answers = [m["content"] for m in seen[1]["messages"] if m["role"] == "tool"]
        assert len(answers) == len(hostile) and all("no tool named" in a for a in answers)

    asyncio.run(main())
