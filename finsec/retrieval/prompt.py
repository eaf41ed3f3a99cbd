"""`{{key}}` placeholders and `input_character_ranges` of retrieve_information (contract §E.1, steps 4-7)."""

from __future__ import annotations

import re
from typing import Any

from finsec.tool_error import ToolError

__all__ = [
    "character_ranges",
    "missing_key_error",
    "NO_PLACEHOLDER",
    "placeholder_keys",
    "PromptError",
    "substitute",
    "without_placeholders",
]

_PLACEHOLDER = re.compile(r"\{\{([^{}]+)\}\}")

NO_PLACEHOLDER = (
    "ERROR: Your prompt must include at least one key from data storage in the format {{key_name}}. "
    "Please try again with the correct format. You can add documents to the data storage with parse_html_page."
)


class PromptError(ToolError):
    """A tool-level error: its text is the tool's result."""


def placeholder_keys(prompt: str) -> list[str]:
    """Keys in order of first appearance; the inner text is the key, untrimmed (`{{ doc }}` names " doc ")."""
    return list(dict.fromkeys(_PLACEHOLDER.findall(prompt)))


def missing_key_error(key: str, available: list[str]) -> str:
    return (
        f"ERROR: The key '{key}' was not found in the data storage. Available keys are: {', '.join(available)}. "
        "Use the parse_html_page tool to add keys to the data storage."
    )


def character_ranges(ranges: list[Any] | None) -> dict[str, tuple[int | None, int | None]]:
    """key -> (start, end). Entries that are not objects with key/start/end are ignored; later entries win.

    NeMo Gym raises a 500 on a non-integer bound; here it is a tool error the model can read (§E.1 step 6).
    """
    out: dict[str, tuple[int | None, int | None]] = {}
    for entry in ranges or []:
        if not isinstance(entry, dict) or not {"key", "start", "end"} <= entry.keys():
            continue
        bounds = (entry["start"], entry["end"])
        if any(b is not None and (isinstance(b, bool) or not isinstance(b, int)) for b in bounds):
            raise PromptError(
                f"ERROR: input_character_ranges for key '{entry['key']}' needs integer start and end, "
                f"got start={entry['start']!r}, end={entry['end']!r}."
            )
        out[str(entry["key"])] = bounds
    return out


def substitute(prompt: str, contents: dict[str, str]) -> str:
    """Plain replacement, one key at a time in order of appearance: braces inside documents are safe."""
    for key, content in contents.items():
        prompt = prompt.replace("{{" + key + "}}", content)
    return prompt


def without_placeholders(prompt: str) -> str:
    return _PLACEHOLDER.sub(" ", prompt)
