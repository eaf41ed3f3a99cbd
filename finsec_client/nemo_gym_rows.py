"""Task rows as NeMo Gym's datasets hold them: what NeMo Gym's rollout collection and verifiers' NeMo Gym taskset
read (docs/recipes/nemo-gym.md, docs/recipes/verifiers.md).

- A **flat** row is the task row with `responses_create_params` added: the model's input (the instructions, then
  the question as the user message) and the tools as Responses-API function tools. finance_agent's `/run`,
  `single_agent_turn_legacy` and verifiers seed, play and verify with it; `question` and `expected_answer` stay
  top-level keys, which /verify grades by.
- An **episode** row is what NeMo Gym's `single_agent_turn` Environment Server plays:
  `{"task_id": {"taskset", "task_id"}, "task_input": {"responses_create_params", "task_data"}}`, the task row
  becoming the episode seed's `task_data`.
A row that already has `responses_create_params` (a NeMo Gym dataset row) keeps its own."""

from __future__ import annotations

from typing import Any

from finsec.tools.catalog import DEFAULT_TOOLS, INSTRUCTIONS, TOOLS, parameters
from finsec_client.tasks import Task

__all__ = ["episode_row", "flat_row", "PARAMS", "responses_create_params"]

PARAMS = "responses_create_params"


def responses_create_params(question: str, tools: tuple[str, ...] = DEFAULT_TOOLS) -> dict[str, Any]:
    return {
        "input": [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": question}],
        "tools": [
            {
                "type": "function",
                "name": name,
                "description": TOOLS[name][1],
                "parameters": parameters(name),
                "strict": False,
            }
            for name in tools
        ],
    }


def flat_row(task: Task) -> dict[str, Any]:
    row = {**task.data, "question": task.question, "expected_answer": task.expected_answer}
    row.setdefault(PARAMS, responses_create_params(task.question))
    return row


def episode_row(task: Task) -> dict[str, Any]:
    data = flat_row(task)
    params = data.pop(PARAMS)
    return {
        "task_id": {"taskset": task.taskset, "task_id": task.task_id},
        "task_input": {PARAMS: params, "task_data": data},
    }
