"""CPU work on request data runs off the event loop when the data is big, and inline when it is small.

A thread hop on a loaded machine costs more than digesting, grading or rendering a typical request takes, and
thousands of them a second contend for the GIL. Big inputs (a whole trajectory, a long answer, several large
filings) go to a worker thread, so no request can stall the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

__all__ = ["INLINE_BYTES", "run", "T"]

T = TypeVar("T")

INLINE_BYTES = 64 * 1024  # below this, request-sized work takes well under a millisecond


async def run(size: int, work: Callable[..., T], *args, limit: int = INLINE_BYTES) -> T:
    if size < limit:
        return work(*args)
    return await asyncio.to_thread(work, *args)
