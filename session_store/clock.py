"""The clock sessions and marks are timed by: wall time that never steps.

Session ages, budgets and fences are wall-clock times, since marks outlive the process that wrote them and are
read by other processes. But a wall clock can step (an NTP correction, an operator's `date -s`): forward by the
session TTL, it would evict every open session at once and lapse every fence. A `SessionClock` follows the
wall clock at the rate of the monotonic clock, and absorbs a step at `SLEW` of real time (1%: a 6 h TTL is never
cut by more than 3.6 minutes, and a 60 s correction is absorbed in 100 minutes), as NTP slews. `step()` says how
far the wall clock is from it, for the reaper's alarm.
"""

from __future__ import annotations

import time
from collections.abc import Callable

SLEW = 0.01


class SessionClock:
    def __init__(self, wall: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic):
        self._wall, self._monotonic = wall, monotonic
        self._last = monotonic()
        self._offset = wall() - self._last  # this clock is the monotonic clock plus an offset that only slews

    def __call__(self) -> float:
        at = self._monotonic()
        gap = self._wall() - (at + self._offset)
        if gap:
            limit = SLEW * (at - self._last)
            self._offset += max(-limit, min(limit, gap))
        self._last = at
        return at + self._offset

    def step(self) -> float:
        """How far the wall clock is ahead of this clock (negative: behind): a step not yet absorbed."""
        return self._wall() - self()


__all__ = ["SLEW", "SessionClock"]
