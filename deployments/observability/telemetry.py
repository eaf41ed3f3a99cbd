"""What one replica saw in the last minutes, for the live page (`/ui`): each route's calls and latency, the verdicts
and their rewards, its event loop's lag, and a trail of the calls each session made.

Counts are kept per minute, for the last `MINUTES`, in fixed latency buckets (so replicas' counts add up: the page
shows the whole application's p50 and p99, to a bucket's width). A replica sends its snapshot to the telemetry hub
(`hub.py`) every few seconds; the hub keeps the latest of each replica and each session's last calls.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from finsec.metrics import NO_METRICS, Metrics

__all__ = ["BUCKETS_MS", "LoopLag", "MINUTES", "ReplicaTelemetry", "TrailEntry", "quantile_ms"]

MINUTES = 16  # the longest window the page shows, and the minute under way
# Upper edges of the latency buckets: 0.25 ms doubling every half step to 5 minutes (a bucket is ~41% wide)
BUCKETS_MS = [0.25 * 2 ** (k / 2) for k in range(41)]
_TRAIL_BUFFER = 20_000  # calls a replica keeps for the hub between two snapshots (the oldest dropped)
_PUBLISH_EVERY_SECONDS = 2.0

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrailEntry:
    """One call of a session, as the inspector lists it."""

    sid: str
    route: str
    status: int
    ms: float
    at: float  # wall-clock seconds


@dataclass
class _Minute:
    routes: dict[str, list[int]] = field(default_factory=dict)  # route -> calls per latency bucket
    failed: dict[str, int] = field(default_factory=dict)  # route -> answers of 500 or more
    scored: int = 0
    rewards: float = 0.0
    masked: int = 0


def quantile_ms(buckets: list[int], q: float) -> float | None:
    """The upper edge of the bucket the q-quantile falls in (the last bucket has no edge: its lower one)."""
    total = sum(buckets)
    if not total:
        return None
    rank, seen = q * total, 0
    for k, n in enumerate(buckets):
        seen += n
        if seen >= rank and n:
            return BUCKETS_MS[min(k, len(BUCKETS_MS) - 1)]
    return BUCKETS_MS[-1]


class ReplicaTelemetry:
    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self._minutes: dict[int, _Minute] = {}
        self.trail: deque[TrailEntry] = deque(maxlen=_TRAIL_BUFFER)
        self.metrics: Metrics = NO_METRICS  # the replica's, once its services are built
        self.loop = LoopLag(observe=lambda seconds: self.metrics.loop_lag(seconds))

    def _now_minute(self) -> _Minute:
        minute = int(self._clock() // 60)
        if minute not in self._minutes:
            self._minutes[minute] = _Minute()
            for old in [m for m in self._minutes if m <= minute - MINUTES]:
                del self._minutes[old]
        return self._minutes[minute]

    def called(self, route: str, status: int, ms: float, sid: str | None) -> None:
        self.metrics.request(route, ms / 1000)
        minute = self._now_minute()
        buckets = minute.routes.setdefault(route, [0] * (len(BUCKETS_MS) + 1))
        buckets[bisect.bisect_left(BUCKETS_MS, ms)] += 1
        if status >= 500:
            minute.failed[route] = minute.failed.get(route, 0) + 1
        if sid is not None:
            self.trail.append(TrailEntry(sid, route, status, ms, self._clock()))

    def verified(self, reward: float, masked: bool) -> None:
        minute = self._now_minute()
        if masked:
            minute.masked += 1
        elif math.isfinite(reward):
            minute.scored += 1
            minute.rewards += reward

    def snapshot(self, admission: dict[str, Any] | None = None) -> dict[str, Any]:
        """What the hub keeps of this replica: its minutes, its loop's lag and its admission now."""
        self._now_minute()  # drops the minutes past the window
        return {
            "at": self._clock(),
            "minutes": {
                str(m): {
                    "routes": v.routes,
                    "failed": v.failed,
                    "scored": v.scored,
                    "rewards": v.rewards,
                    "masked": v.masked,
                }
                for m, v in self._minutes.items()
            },
            "loop_lag_ms": self.loop.report(),
            "admission": admission or {},
        }

    def take_trail(self) -> list[tuple[str, str, int, float, float]]:
        """The calls since the last take, as tuples (cheap to send)."""
        taken = [(e.sid, e.route, e.status, round(e.ms, 3), e.at) for e in self.trail]
        self.trail.clear()
        return taken

    async def publish(
        self, hub: Any, replica: str, admission: Callable[[], dict[str, Any]], every: float = _PUBLISH_EVERY_SECONDS
    ) -> None:
        """Send the hub this replica's snapshot and trail every `every` seconds, for the replica's life."""
        while True:
            await asyncio.sleep(every)
            try:
                await hub.push(replica, self.snapshot(admission()), self.take_trail())
            except Exception as error:  # a hub that restarts gets the next snapshot; this trail is lost
                log.debug("the telemetry hub did not take this replica's snapshot: %r", error)


class LoopLag:
    """How late the event loop wakes a task that sleeps `interval`: the time every request waits behind work that
    holds the loop. `run` samples it for the replica's life; `report` gives the last and the worst of the minute."""

    def __init__(self, interval: float = 0.5, observe: Callable[[float], None] | None = None):
        self.interval = interval
        self._observe = observe  # each lag, in seconds (the Prometheus histogram)
        self._samples: deque[tuple[float, float]] = deque()  # (monotonic time, lag ms) of the last minute
        self.last_ms = 0.0

    async def run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.interval)
            now = time.monotonic()
            self.note(max(0.0, now - before - self.interval) * 1000, now)

    def note(self, lag_ms: float, now: float) -> None:
        self.last_ms = lag_ms
        self._samples.append((now, lag_ms))
        while self._samples and self._samples[0][0] < now - 60:
            self._samples.popleft()
        if self._observe is not None:
            self._observe(lag_ms / 1000)

    def report(self) -> dict[str, float]:
        return {"last": round(self.last_ms, 3), "max_1m": round(max((ms for _, ms in self._samples), default=0.0), 3)}
