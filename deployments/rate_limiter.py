"""EDGAR's request-rate limit for the whole application however many replicas run (contract §F.2).

One named actor hands out start times; callers sleep until theirs, so nothing waits inside the actor and a slot
costs one small actor call. While the actor is slow or restarting, each replica paces its own requests at its
share of the rate (the actor tells it how many replicas share it): never a burst.
"""

from __future__ import annotations

import asyncio
import logging

import ray

from finsec.edgar.limiter import PacedSchedule, Sharers
from session_store import StoreUnavailable
from session_store.app_actors import call
from session_store.ray_actors import ActorProcess

__all__ = ["ClusterRateLimiter", "RateLimiterActor"]

log = logging.getLogger(__name__)


@ray.remote
class RateLimiterActor(ActorProcess):
    def __init__(self, limit: int, window_seconds: float):
        self._schedule = PacedSchedule(limit, window_seconds)
        self._sharers = Sharers()

    async def reserve(self, caller: str = "") -> tuple[float, int]:
        """The caller's wait before its start, and how many callers share the rate now."""
        return self._schedule.reserve(), self._sharers.note(caller)


class ClusterRateLimiter:
    """The client side: `await limiter.acquire()` before each request attempt, against the app's one limiter
    actor (named and created by session_store.app_actors, like every actor of the app)."""

    def __init__(self, actor, limit: int, window_seconds: float, timeout_seconds: float = 5.0, caller: str = ""):
        self._actor, self._caller = actor, caller
        self._limit, self._window = limit, window_seconds
        self._timeout = timeout_seconds
        self._own = PacedSchedule(limit, window_seconds)  # this replica's share, paced: see `_fallback`

    async def acquire(self) -> None:
        try:
            delay, sharers = await call(
                self._actor.reserve.remote(self._caller), timeout=self._timeout, what="EDGAR rate limiter"
            )
            self._own.interval = self._window * max(1, sharers) / self._limit
        except StoreUnavailable:
            log.warning("EDGAR rate limiter unavailable; pacing this replica at its share of the rate")
            delay = self._own.reserve()
        if delay > 0:
            await asyncio.sleep(delay)
