"""A build that runs in the background once and, when it fails, is retried after a backoff: edgar_search's
index of the local corpus (contract §A.7, local mode).

A failure is never the answer for good: the first call after the backoff starts the build again. Calls within
the backoff fail at once (BuildFailed), rather than each waiting on a rebuild of what just failed; the backoff
doubles with each failure in a row, up to a ceiling, so a corpus that cannot be read is not rebuilt in a loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["BuildFailed", "RetriedBuild", "T"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class BuildFailed(Exception):
    def __init__(self, retry_in: float):
        super().__init__(f"the build failed; it is retried in {retry_in:.0f} s")
        self.retry_in = retry_in


class RetriedBuild(Generic[T]):
    def __init__(
        self,
        name: str,
        build: Callable[[], Awaitable[T]],
        *,
        first_backoff: float = 5.0,
        max_backoff: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._name = name
        self._build = build
        self._first_backoff = first_backoff
        self._max_backoff = max_backoff
        self._clock = clock
        self._task: asyncio.Task[T] | None = None
        self._failures = 0  # in a row
        self._retry_at = 0.0

    def start(self) -> None:
        """Start the build unless it runs, is done, or failed within its backoff."""
        task = self._task
        if task is not None and not task.cancelled():
            if not task.done() or task.exception() is None:
                return  # building, or built
            if self._clock() < self._retry_at:
                return  # failed, and its backoff has not passed
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._task.add_done_callback(lambda done: done.cancelled() or done.exception())  # retrieved: not "never"

    async def result(self) -> T:
        """The build's result, waiting for it if it runs; BuildFailed when it failed (the cause is logged)."""
        self.start()
        task = self._task
        assert task is not None  # start() leaves a task
        try:
            return await asyncio.shield(task)
        except Exception:
            raise BuildFailed(max(0.0, self._retry_at - self._clock())) from None

    async def _run(self) -> T:
        """The build, keeping count of failures in a row; the backoff is set before the task is done."""
        try:
            built = await self._build()
        except Exception:
            self._failures += 1
            backoff = min(self._first_backoff * 2 ** (self._failures - 1), self._max_backoff)
            self._retry_at = self._clock() + backoff
            log.exception("%s failed (%d in a row); retried after %.0f s", self._name, self._failures, backoff)
            raise
        self._failures = 0
        return built
