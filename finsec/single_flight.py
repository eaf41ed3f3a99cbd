"""One task in flight per key: concurrent callers for the same key share it instead of repeating the work.

Each caller awaits the shared task through `asyncio.shield`, so a caller that goes away (its client hung up)
does not cancel the work the others are waiting for. The task is forgotten when it finishes: what to keep of its
result is the caller's business (a cache, a verdict record).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["K", "SingleFlight", "V"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SingleFlight(Generic[K, V]):
    def __init__(self) -> None:
        self._tasks: dict[K, asyncio.Task[V]] = {}

    async def run(self, key: K, work: Callable[[], Awaitable[V]]) -> V:
        task = self._tasks.get(key)
        if task is None:
            task = self._tasks[key] = asyncio.ensure_future(work())
            task.add_done_callback(lambda _: self._tasks.pop(key, None))
        return await asyncio.shield(task)
