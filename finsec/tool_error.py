"""Tool-level failures and how their messages quote what they were sent.

A tool error's message is the tool's result, which the agent reads (contract §A.0, "soft tool errors": HTTP 200
with the message in `results`). A message quotes what an agent or an upstream server sent printable and bounded,
so an error never echoes a 16 MB argument, a NUL or a terminal escape back to the agent or into a log."""

from __future__ import annotations

__all__ = ["shown", "ToolError"]


class ToolError(ValueError):
    """A failure the agent can act on; `str(error)` is what the tool answers. A ValueError, as most of them are
    argument problems."""


def shown(value: object, limit: int = 120) -> str:
    """`value` (its repr when not a string) with non-printable characters escaped, cut at `limit` characters."""
    text = value if isinstance(value, str) else repr(value)
    quoted = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[: limit + 1])
    return quoted if len(quoted) <= limit else f"{quoted[:limit]}... ({len(text):,} characters)"
