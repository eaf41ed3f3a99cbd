"""The application's live view, gathered from its replicas: each replica sends its telemetry (`telemetry.py`) here
every few seconds; the live page reads the sum, and the last calls of any session.

One hub per application: a Ray actor under Serve (`hub_actor.py`), a plain object in the one process. It keeps only
what it was sent last, so a hub that restarts shows the next snapshots, and the trails of the sessions that call
again. The trails are bounded: the `sessions` most recently called, `calls` calls each.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from deployments.observability.telemetry import BUCKETS_MS, quantile_ms

__all__ = ["LocalHub", "TelemetryHub", "WINDOWS"]

WINDOWS = (1, 5, 15)  # minutes the page shows rewards over: each the minute under way and as many before it
_ROUTE_MINUTES = 5  # and latency over
_RATES = {"seeds": "/seed_session", "closes": "/close_session", "verifies": "/verify"}


class TelemetryHub:
    def __init__(
        self,
        sessions: int = 10_000,
        calls: int = 20,
        forget_after_seconds: float = 30.0,
        clock: Callable[[], float] = time.time,
    ):
        self._snapshots: dict[str, dict[str, Any]] = {}  # replica -> its latest snapshot
        self._trails: OrderedDict[str, deque[tuple[str, int, float, float]]] = OrderedDict()
        self._sessions, self._calls = sessions, calls
        self._forget_after = forget_after_seconds
        self._clock = clock

    def push(self, replica: str, snapshot: dict[str, Any], trail: list[tuple[str, str, int, float, float]]) -> None:
        self._snapshots[replica] = {**snapshot, "received": self._clock()}
        for sid, route, status, ms, at in trail:
            calls = self._trails.get(sid)
            if calls is None:
                calls = self._trails[sid] = deque(maxlen=self._calls)
            else:
                self._trails.move_to_end(sid)
            calls.append((route, status, ms, at))
        while len(self._trails) > self._sessions:
            self._trails.popitem(last=False)

    def trail(self, sid: str) -> list[dict[str, Any]]:
        """The session's last calls, oldest first (none when it made none lately)."""
        return [
            {"route": route, "status": status, "ms": ms, "at": at}
            for route, status, ms, at in self._trails.get(sid, ())
        ]

    def state(self) -> dict[str, Any]:
        """Every live replica's latest, summed: calls per second and latency by route, rates of seeds, closes and
        verifies, rewards over each window; and each replica's event-loop lag and admission."""
        now = self._clock()
        for replica in [r for r, s in self._snapshots.items() if now - s["received"] > self._forget_after]:
            del self._snapshots[replica]
        minute, into = divmod(now, 60)
        minute = int(minute)
        routes: dict[str, dict[str, Any]] = {}
        rewards = {w: {"scored": 0, "rewards": 0.0, "masked": 0} for w in WINDOWS}
        for snapshot in self._snapshots.values():
            for key, m in snapshot["minutes"].items():
                age = minute - int(key)
                if not 0 <= age <= max(WINDOWS):
                    continue
                for w in WINDOWS:
                    if age <= w:  # a window never empties at a minute's turn
                        for field in ("scored", "rewards", "masked"):
                            rewards[w][field] += m[field]
                if age >= _ROUTE_MINUTES:
                    continue
                for route, buckets in m["routes"].items():
                    row = routes.setdefault(
                        route, {"last_minute": 0, "buckets": [0] * (len(BUCKETS_MS) + 1), "failed": 0}
                    )
                    if age <= 1:  # the minute under way and the one before: the rate's window
                        row["last_minute"] += sum(buckets)
                    row["buckets"] = [a + b for a, b in zip(row["buckets"], buckets, strict=True)]
                    row["failed"] += m["failed"].get(route, 0)
        window = 60 + into  # seconds the rate counts over
        return {
            "at": now,
            "replicas": [
                {
                    "replica": replica,
                    "seconds_since": round(now - s["received"], 1),
                    "loop_lag_ms": s["loop_lag_ms"],
                    "admission": s["admission"],
                }
                for replica, s in sorted(self._snapshots.items())
            ],
            "routes": {
                route: {
                    "per_second": round(row["last_minute"] / window, 3),
                    "calls_5m": sum(row["buckets"]),
                    "p50_ms_5m": quantile_ms(row["buckets"], 0.5),
                    "p99_ms_5m": quantile_ms(row["buckets"], 0.99),
                    "failed_5m": row["failed"],
                }
                for route, row in sorted(routes.items())
            },
            "rates": {
                name: round(routes.get(route, {}).get("last_minute", 0) / window, 3) for name, route in _RATES.items()
            },
            "rewards": {
                f"{w}m": {
                    "scored": r["scored"],
                    "mean": r["rewards"] / r["scored"] if r["scored"] else None,
                    "masked": r["masked"],
                    "masked_share": r["masked"] / (r["scored"] + r["masked"]) if r["scored"] + r["masked"] else None,
                }
                for w, r in rewards.items()
            },
        }


class LocalHub:
    """The hub in this process, called as the actor is: every method awaited."""

    def __init__(self, hub: TelemetryHub):
        self._hub = hub

    async def push(self, replica: str, snapshot: dict[str, Any], trail: list) -> None:
        self._hub.push(replica, snapshot, trail)

    async def state(self) -> dict[str, Any]:
        return self._hub.state()

    async def trail(self, sid: str) -> list[dict[str, Any]]:
        return self._hub.trail(sid)
