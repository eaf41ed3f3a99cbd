"""What a hosted search provider (sec-api.io, Tavily) answers: a JSON object whose list field holds objects.

A 200 with anything else (an array, a string, a number, null; the field not a list; an item not an object)
is an AnswerShapeError that says what came instead, rather than an AttributeError further on (a 500).
`asked` makes one attempt of a provider call for the retry policy (finsec/net/retry.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from finsec.net.retry import TryAgain
from finsec.net.safe_fetch import retry_after

__all__ = ["AnswerShapeError", "asked", "listed_objects"]

_KINDS = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


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


async def asked(
    client: httpx.AsyncClient,
    url: str,
    body: dict,
    *,
    who: str,
    field: str,
    retried: Callable[[int], bool],
    refused: Callable[[str], Exception],
) -> list[dict]:
    """One POST of `body` to a provider: the objects its answer lists under `field`. A dropped connection, an
    unreadable answer or a status `retried` accepts raise TryAgain (with the provider's Retry-After); any other
    error status raises `refused(message)`, final."""
    try:
        response = await client.post(url, json=body)
    except httpx.HTTPError as failure:
        raise TryAgain("transport", f"{who} failed: {failure}") from None
    if response.is_error:
        message = f"{who} failed: HTTP {response.status_code}"
        if not retried(response.status_code):
            raise refused(message)
        raise TryAgain(response.status_code, message, retry_after(response.headers))
    try:
        return listed_objects(response.json(), field)
    except ValueError as failure:  # not JSON, or JSON of another shape
        raise TryAgain("unreadable", f"{who} failed: {failure}") from None


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), type(value).__name__)
