"""The per-session tool time budget, `max_rollout_time_seconds` (contract §A.15)."""

from __future__ import annotations

import json


def budget_exhausted(age_seconds: float | None, budget_seconds: float | None) -> str | None:
    """The tool result to answer with when the session's budget is spent; None when the call may go on."""
    if not budget_seconds or age_seconds is None or age_seconds <= budget_seconds:
        return None
    return json.dumps(
        {
            "error": f"Time budget exhausted ({age_seconds:.0f}s / {budget_seconds:.0f}s). No further tool calls "
            "will be executed. Call submit_final_result immediately with your best answer."
        }
    )
