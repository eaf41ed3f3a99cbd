"""EDGAR's request-rate limit (contract §F.2): the schedule that spaces requests, and who shares it.

SEC allows about 10 requests a second per client. A per-process limiter (NeMo Gym's) lets N replicas send N
times that; the Serve app shares one schedule among its replicas (deployments/rate_limiter.py). Inside one process
(the one-process app, the Ray-free tests and tools) `LocalRateLimiter` keeps it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["LocalRateLimiter", "PacedSchedule", "Sharers"]


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


class Sharers:
    """Who has asked for slots within the last `horizon_seconds`: the replicas that share the rate."""

    def __init__(self, horizon_seconds: float = 120.0, clock: Callable[[], float] = time.monotonic):
        self._seen: dict[str, float] = {}
        self._horizon, self._clock = horizon_seconds, clock

    def note(self, caller: str) -> int:
        now = self._clock()
        self._seen[caller] = now
        if len(self._seen) > 1 and min(self._seen.values()) < now - self._horizon:
            self._seen = {c: at for c, at in self._seen.items() if at >= now - self._horizon}
        return len(self._seen)


class LocalRateLimiter:
    """The same schedule inside one process (the Ray-free tests and tools)."""

    def __init__(self, limit: int, window_seconds: float):
        self._schedule = PacedSchedule(limit, window_seconds)

    async def acquire(self) -> None:
        delay = self._schedule.reserve()
        if delay > 0:
            await asyncio.sleep(delay)
