"""What /verify grades: the question and the submitted answer, read from the trajectory (contract §D.2)."""

from __future__ import annotations

import json
import re
from typing import Any

from finsec.grading.grader import Grade

__all__ = ["hard_gate", "HARD_GATE_TEXT", "question_of", "SUBMIT_TOOL", "submitted_answer"]

SUBMIT_TOOL = "submit_final_result"
HARD_GATE_TEXT = (
    "Hard gate: submit_final_result tool call missing or empty. "
    "The agent must submit its final answer via submit_final_result to be graded."
)
# The arguments are JSON inside a JSON string, so the body's repair (strict_json) never saw their escapes: a
# broken emoji there ("\\ud83d") decodes to an unpaired surrogate, which no UTF-8 encoder (the judge's HTTP
# client, a log line) can write. It becomes U+FFFD, as the body's own surrogates do.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def hard_gate(answer: str) -> Grade | None:
    """The grade of an empty answer (§D.2: no fallback to the assistant's text), or None when it is graded."""
    return Grade(0.0, 0, HARD_GATE_TEXT) if not answer.strip() else None


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
            try:  # RecursionError: arguments nested thousands deep (the body's depth check never saw inside them)
                arguments = json.loads(item.get("arguments") or "")
                if not isinstance(arguments, dict):
                    return ""
                answer = arguments.get("final_result", "")
                answer = answer if isinstance(answer, str) else json.dumps(answer)
            except (TypeError, ValueError, RecursionError):
                return ""
            return _SURROGATE.sub("\ufffd", answer)
    return ""
