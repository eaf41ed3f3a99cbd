"""The EDGAR rate limit while its actor is slow or restarting (contract §F.2): each replica paces itself at its
share of the cluster's rate, the share the actor last reported; never a burst."""

from __future__ import annotations

import asyncio
import time

from deployments.rate_limiter import ClusterRateLimiter
from finsec.edgar.limiter import PacedSchedule, Sharers


class Limiter:
    """Stands in for the limiter actor's handle: `reserve.remote()` answers from a real schedule, or hangs."""

    def __init__(self, limit: int, window: float):
        self.schedule, self.sharers, self.down = PacedSchedule(limit, window), Sharers(), False
        self.reserve = self

    def remote(self, caller: str):
        async def answer():
            if self.down:
                await asyncio.sleep(3600)  # a restarting actor: the call times out
            return self.schedule.reserve(), self.sharers.note(caller)

        return answer()


def test_replicas_keep_their_share_and_never_burst_when_the_limiter_is_down() -> None:
    limit, window = 10, 1.0
    actor = Limiter(limit, window)
    replicas = [ClusterRateLimiter(actor, limit, window, timeout_seconds=0.02, caller=f"r{n}") for n in range(2)]

    async def go() -> list[float]:
        for _ in range(2):  # both learn that two replicas share the rate (every answer says it anew)
            for replica in replicas:
                await replica.acquire()
        actor.down = True
        starts: list[float] = []

        async def one(replica):
            await replica.acquire()
            starts.append(time.monotonic())

        await asyncio.gather(*(one(r) for r in replicas for _ in range(6)))
        return sorted(starts)

    starts = asyncio.run(go())
    span = starts[-1] - starts[0]
    # 12 starts at each replica's share (5/s each, 10/s together): at least ~1 s, where the old fallback
    # (every waiter sleeps one slot, then all go) started all 12 within a few milliseconds.
    assert span >= 0.9 * (6 - 1) * window * 2 / limit
    near_window = 0.95 * window  # timer jitter can put an 11th start a hair inside a window's end
    assert max(sum(1 for t in starts if s <= t < s + near_window) for s in starts) <= limit


def test_sharers_forget_a_replica_gone_quiet() -> None:
    now = [0.0]
    sharers = Sharers(horizon_seconds=60, clock=lambda: now[0])
    assert sharers.note("a") == 1 and sharers.note("b") == 2
    now[0] = 100.0
    assert sharers.note("a") == 1
