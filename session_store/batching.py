"""Coalescing calls to one shard: one call in flight; what arrives meanwhile goes out together as the next.

At low load a request's operation is sent at once, with no wait to gather a batch. Under load, every operation
that arrives while the shard is answering rides the next call, so the cost of a hop (Ray's overhead on each
side, docs/benchmarks.md) is shared by the whole batch instead of paid per request. The same spirit as
`@serve.batch`, without its fixed wait. Ray-free: the caller supplies `send`.

Guarantees:
- operations are sent in arrival order, and a batch is sent only after the previous one answered, so two
  operations on one ID from this replica are applied in the order they arrived;
- each operation gets its own outcome back (`send` returns one per operation, in order);
- when `send` itself fails (the shard died, a timeout), every operation of that batch gets that error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["Coalescer", "R", "T"]

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    def __init__(self, send: Callable[[list[T]], Awaitable[list[R]]], max_batch: int = 512):
        self._send = send
        self._max_batch = max_batch
        self._queue: list[tuple[T, asyncio.Future[R]]] = []
        self._draining: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if self._draining is None:
            self._draining = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
                try:
                    results = await self._send([item for item, _ in batch])
                    if len(results) != len(batch):
                        raise RuntimeError(f"{len(results)} results for a batch of {len(batch)}")
                except BaseException as error:  # the whole call failed: so did each of its operations
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(error)
                    if isinstance(error, asyncio.CancelledError):
                        raise
                    continue
                for (_, future), result in zip(batch, results, strict=False):
                    if not future.done():  # the request may have been cancelled (its client went away)
                        future.set_result(result)
        finally:
            self._draining = None
