"""A request body read once by a middleware and handed on to the app as if it were still arriving."""

from __future__ import annotations

from starlette.types import Message, Receive

__all__ = ["replay", "too_large"]


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
