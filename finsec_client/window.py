"""How many requests one client keeps in flight: its share of a busy server, found as TCP finds a link's.

A server past its capacity answers 503 or 429 with Retry-After (backpressure). One refused request backing off
is not enough when a process runs thousands of sessions: the others keep sending, and the server spends its time
refusing them. So the client's window halves on backpressure, once for every window of requests that were sent
before the cut (later refusals of those requests say nothing new), and grows by one each time a window's worth of
requests is answered. Requests past the window wait here, in order, instead of at the server.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["SendWindow"]


class SendWindow:
    def __init__(self, most: int):
        self.most = most
        self.size = float(most)  # opens fully: an idle server owes no caution
        self.in_flight = 0
        self.cuts = 0  # how many times it halved; a request remembers the count it was sent under
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def enter(self) -> int:
        """Wait for room, then take it; returns the cut count to hand back to `leave`."""
        if self.in_flight < int(self.size) and not self._waiting:
            self.in_flight += 1
            return self.cuts
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn  # `_wake_next` took the room for it
        except BaseException:
            if turn.done() and not turn.cancelled():  # woken, then cancelled: pass the room on
                self.in_flight -= 1
                self._wake_next()
            elif turn in self._waiting:  # `_wake_next` drops a cancelled turn it meets
                self._waiting.remove(turn)
            raise
        return self.cuts

    def leave(self, sent_under: int, *, busy: bool) -> None:
        self.in_flight -= 1
        if busy:
            if sent_under == self.cuts:
                self.size = max(1.0, self.size / 2)
                self.cuts += 1
        else:
            self.size = min(float(self.most), self.size + 1 / self.size)
        self._wake_next()

    def _wake_next(self) -> None:
        while self.in_flight < int(self.size) and self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                self.in_flight += 1
                turn.set_result(None)
