"""What a tool call may ask: length and character rules for what agents name (keys and URLs), each breach a tool
error that says what to fix, so nothing oversized reaches a shard, a cookie, a file name or a reply; and the
per-session tool time budget, `max_rollout_time_seconds` (contract §A.15)."""

from __future__ import annotations

import json
import re

from finsec.net.hosts import MAX_URL_CHARS

__all__ = [
    "budget_exhausted",
    "key_problem",
    "MAX_FINAL_RESULT_CHARS",
    "MAX_KEY_CHARS",
    "MAX_PROMPT_CHARS",
    "MAX_QUERY_CHARS",
    "too_long",
    "url_problem",
]

MAX_KEY_CHARS = 256
MAX_PROMPT_CHARS = 50_000
MAX_FINAL_RESULT_CHARS = 100_000
MAX_QUERY_CHARS = 2_000
# C0 and C1 controls and Unicode's line and paragraph separators: a parse reply lists keys one per line (§A.8
# step 5), and str.splitlines() breaks at \x85, \u2028 and \u2029 too, so such a key would read as two.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def key_problem(key: str) -> str | None:
    if len(key) > MAX_KEY_CHARS:
        return f"ERROR: key is {len(key)} characters long; use a key of at most {MAX_KEY_CHARS} characters."
    if "{" in key or "}" in key:
        return "ERROR: key must not contain '{' or '}': retrieve_information names keys as {{key}}."
    if _CONTROL.search(key):
        return "ERROR: key must not contain control characters (newlines, line separators, tabs, NUL)."
    return None


def url_problem(url: str) -> str | None:
    if len(url) > MAX_URL_CHARS:
        return f"ERROR: url is {len(url)} characters long; a URL may have at most {MAX_URL_CHARS}."
    return None


def too_long(what: str, value: str, limit: int) -> str | None:
    if len(value) > limit:
        return f"ERROR: {what} is {len(value):,} characters long; the limit is {limit:,}."
    return None


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
