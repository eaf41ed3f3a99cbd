"""An agent model for the recipes' tests: a loopback OpenAI-compatible server (harness/llm_stub.py) whose replies play
each task as a capable agent would, whichever trainer asks: find the filing, store it, ask it, submit, then say the
answer in text. It serves chat completions (streamed when asked) and the Responses API, and reads where an episode
stands from the tool results already in the conversation, so any number of episodes can run at once. The tasks in
`wrong` are answered wrongly, so a test can tell a reward from a constant."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from finsec_client.tasks import Task
from harness.llm_stub import chat_reply, tool_calls_reply

WRONG_ANSWER = "$1 thousand"


class AgentModel:
    def __init__(self, tasks: list[Task], wrong: set[str] = frozenset()):
        self._tasks = tasks
        self._wrong = wrong  # questions to answer with WRONG_ANSWER

    def answer(self, task: Task) -> str:
        return WRONG_ANSWER if task.question in self._wrong else task.expected_answer

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if "messages" in body:  # chat completions
            messages = body["messages"]
            step = self._step(_user_texts(messages), sum(m.get("role") == "tool" for m in messages))
            return tool_calls_reply(step) if isinstance(step, tuple) else chat_reply(step)
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items or []
        step = self._step(_user_texts(items), sum(i.get("type") == "function_call_output" for i in items))
        return _response(body, step)

    def _step(self, said: str, done: int) -> tuple[str, dict[str, Any]] | str:
        task = next((t for t in self._tasks if t.question in said), None)
        if task is None:
            return "I was not asked one of my questions."
        plan = [
            ("sec_filing_search", {"ticker": task.hint("ticker"), "form_types": [task.hint("form")]}),
            ("parse_html_page", {"url": task.data["url"], "key": "filing"}),
            ("retrieve_information", {"prompt": task.question + " {{filing}}"}),
            ("submit_final_result", {"final_result": self.answer(task)}),
        ]
        return plan[done] if done < len(plan) else f"The answer is {self.answer(task)}."


def _user_texts(items: list[dict[str, Any]]) -> str:
    texts = []
    for item in items:
        content = item.get("content") if item.get("role") == "user" else None
        if isinstance(content, list):  # content parts
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        if isinstance(content, str):
            texts.append(content)
    return "\n".join(texts)


def _response(request: dict[str, Any], step: tuple[str, dict[str, Any]] | str) -> dict[str, Any]:
    """A Responses-API object whose output calls the step's tool, or says its text."""
    if isinstance(step, tuple):
        call = uuid.uuid4().hex[:12]
        output = {
            "type": "function_call",
            "id": f"fc_{call}",
            "call_id": f"call_{call}",
            "name": step[0],
            "arguments": json.dumps(step[1]),
            "status": "completed",
        }
    else:
        output = {
            "type": "message",
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": step, "annotations": []}],
        }
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "created_at": time.time(),
        "model": request.get("model", "stub"),
        "status": "completed",
        "output": [output],
        "tools": request.get("tools", []),
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "incomplete_details": None,
        "error": None,
        "metadata": {},
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
