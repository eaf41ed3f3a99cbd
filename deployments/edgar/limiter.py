"""EDGAR's request-rate limit, for the whole application however many replicas run (contract §F.2).

SEC allows about 10 requests a second per client. A per-process limiter (NeMo Gym's) lets N replicas send N
times that. Here one named actor hands out start times; callers sleep until theirs, so nothing waits inside
the actor and a slot costs one small actor call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

import ray

from session_store import StoreUnavailable
from session_store.app_actors import call
from session_store.ray_actors import ActorProcess

log = logging.getLogger(__name__)


class PacedSchedule:
    """`limit` starts per `window_seconds`, evenly spaced: each start is at least window/limit after the one
    before it. Spacing (rather than bursts of `limit`) keeps requests from queueing behind each other on their
    way out, which is what makes their arrival times at SEC jitter. Pure, with an injected clock."""

    def __init__(self, limit: int, window_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.interval = window_seconds / limit
        self.clock = clock
        self._last = float("-inf")

    def reserve(self) -> float:
        """Reserve the next start; returns how long the caller must wait before starting."""
        now = self.clock()
        self._last = max(now, self._last + self.interval)
        return self._last - now


@ray.remote
class RateLimiterActor(ActorProcess):
    def __init__(self, limit: int, window_seconds: float):
        self._schedule = PacedSchedule(limit, window_seconds)

    async def reserve(self) -> float:
        return self._schedule.reserve()


class ClusterRateLimiter:
    """The client side: `await limiter.acquire()` before each request attempt, against the app's one limiter
    actor (named and created by session_store.app_actors, like every actor of the app)."""

    def __init__(self, actor, limit: int, window_seconds: float, timeout_seconds: float = 5.0):
        self._actor = actor
        self._fallback_delay = window_seconds / limit
        self._timeout = timeout_seconds

    async def acquire(self) -> None:
        try:
            delay = await call(self._actor.reserve.remote(), timeout=self._timeout, what="EDGAR rate limiter")
        except StoreUnavailable:
            # The limiter is restarting: wait one whole slot, which keeps this replica alone under the limit.
            log.warning("EDGAR rate limiter unavailable; pacing this request locally")
            delay = self._fallback_delay
        if delay > 0:
            await asyncio.sleep(delay)


class LocalRateLimiter:
    """The same schedule inside one process (the Ray-free tests and tools)."""

    def __init__(self, limit: int, window_seconds: float):
        self._schedule = PacedSchedule(limit, window_seconds)

    async def acquire(self) -> None:
        delay = self._schedule.reserve()
        if delay > 0:
            await asyncio.sleep(delay)
