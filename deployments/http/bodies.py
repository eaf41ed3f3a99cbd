"""A request body read once by a middleware and handed on to the app as if it were still arriving."""

from __future__ import annotations

from starlette.types import Message, Receive, Scope

__all__ = ["declared_over", "replay", "too_large"]


def replay(body: bytes, receive: Receive) -> Receive:
    """The body once, then whatever the connection says next (its disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def too_large(max_bytes: int) -> str:
    """What a 413 says."""
    return f"The request body is larger than {max_bytes:,} bytes (max_request_bytes)."


def declared_over(scope: Scope, max_bytes: int) -> bool:
    """Whether the request's Content-Length says more than `max_bytes`. Compared as digits, never converted: a
    header of thousands of digits is past Python's int conversion limit, and would raise."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            digits = value.strip().lstrip(b"0")
            limit = str(max_bytes).encode()
            return digits.isdigit() and (len(digits), digits) > (len(limit), limit)
    return False
