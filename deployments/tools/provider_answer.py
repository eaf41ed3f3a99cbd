"""What a hosted search provider (sec-api.io, Tavily) answers: a JSON object whose list field holds objects.

A 200 with anything else (an array, a string, a number, null; the field not a list; an item not an object)
is an AnswerShapeError that says what came instead, rather than an AttributeError further on (a 500).
"""

from __future__ import annotations

from typing import Any

_KINDS = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
          float: "a number", type(None): "null"}


class AnswerShapeError(ValueError):
    """The provider's JSON is not of the documented shape; a ValueError, as unparseable JSON is."""


def listed_objects(answer: Any, field: str) -> list[dict]:
    """`answer[field]`, checked; an absent or null field is an empty list (no hits)."""
    if not isinstance(answer, dict):
        raise AnswerShapeError(f"the answer is {_kind(answer)}, not a JSON object")
    items = answer.get(field)
    if items is None:
        return []
    if not isinstance(items, list):
        raise AnswerShapeError(f"the answer's {field!r} is {_kind(items)}, not a list")
    for number, item in enumerate(items):
        if not isinstance(item, dict):
            raise AnswerShapeError(f"item {number} of the answer's {field!r} is {_kind(item)}, not an object")
    return items


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), type(value).__name__)
