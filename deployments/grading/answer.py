"""What /verify grades: the question and the submitted answer, read from the trajectory (contract §D.2)."""

from __future__ import annotations

import json
from typing import Any

SUBMIT_TOOL = "submit_final_result"
HARD_GATE_TEXT = (
    "Hard gate: submit_final_result tool call missing or empty. "
    "The agent must submit its final answer via submit_final_result to be graded."
)


def question_of(responses_input: Any) -> str:
    """The content of the last user message whose content is a string; "" when input is a plain string."""
    if not isinstance(responses_input, list):
        return ""
    for item in reversed(responses_input):
        if isinstance(item, dict) and item.get("role") == "user" and isinstance(item.get("content"), str):
            return item["content"]
    return ""


def submitted_answer(response: dict[str, Any]) -> str:
    """`final_result` of the last submit_final_result call, or "" (a malformed call counts as empty)."""
    output = response.get("output")
    if not isinstance(output, list):
        return ""
    for item in reversed(output):
        if isinstance(item, dict) and item.get("type") == "function_call" and item.get("name") == SUBMIT_TOOL:
            try:
                arguments = json.loads(item.get("arguments") or "")
            except (TypeError, ValueError):
                return ""
            if not isinstance(arguments, dict):
                return ""
            answer = arguments.get("final_result", "")
            return answer if isinstance(answer, str) else json.dumps(answer)
    return ""
