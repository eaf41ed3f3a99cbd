"""Length and character rules for what agents name: keys and URLs. Each breach is a tool error that says
what to fix; nothing oversized reaches a shard, a cookie, a file name or a reply."""

from __future__ import annotations

import re

from ..net.hosts import MAX_URL_CHARS

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
