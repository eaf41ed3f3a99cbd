"""Admission by waiting time: a request waits for a place as long as a trainer would accept, and only then is
turned away.

Each replica (and the one process of `finsec serve --in-process`) works on at most `admission_running` requests at
once; the others wait for a place, first come first served. A request that has waited `admission_wait_seconds`
gets 503 with Retry-After; so does one that arrives when the waiting requests already hold `admission_waiting_bytes`
of memory (their bodies, and a fixed share each for the rest). Most trainers' clients never retry a 503, so a
refusal is a lost rollout to them: the bound is in seconds and bytes, never a small count of places.

What holds no place:
- a request still sending its body: the body is read first, so a slow upload costs memory, not a place, and one
  slower than `admission_wait_seconds` gets 408;
- an event stream (the MCP SDK's GET on /mcp), which does no work until it has an event to send;
- health checks: a busy process is alive, and a probe that read a 503 as death would restart it;
- a request made from inside an admitted one (the MCP endpoint calls the app's own routes): its caller holds the
  place already, and taking a second could wait on itself.

On Serve, the replica must hand every request to the app at once, where the wait can be timed: the ingress
deployment's `max_ongoing_requests` defaults to `Admission.most_held()` and Serve's own queue bound is left off.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from deployments.http.bodies import declared_over, replay, too_large
from deployments.http.prefixes import route_path
from deployments.routes.health import HEALTH_PATHS
from finsec.metrics import NO_METRICS, Metrics

if TYPE_CHECKING:
    from deployments.settings import Settings

__all__ = ["Admission", "AdmissionMiddleware", "AdmissionState", "ADMITTED", "Places", "REQUEST_OVERHEAD_BYTES"]

ADMITTED = "finsec.admitted"  # a scope key: set on requests made from inside an admitted request
# What a waiting request holds besides its body (its connection's buffers, its task, its scope): a round figure above
# what one costs a replica, so that the byte bound is also a bound on how many wait.
REQUEST_OVERHEAD_BYTES = 32_768


@dataclass(frozen=True)
class Admission:
    running: int
    wait_seconds: float
    waiting_bytes: int
    retry_after_seconds: int
    max_body_bytes: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Admission:
        return cls(
            settings.admission_running,
            settings.admission_wait_seconds,
            settings.admission_waiting_bytes,
            settings.admission_retry_after_seconds,
            settings.max_request_bytes,
        )

    def most_held(self) -> int:
        """The most requests one replica may hold, running and waiting: what Serve must hand it at once."""
        return self.running + self.waiting_bytes // REQUEST_OVERHEAD_BYTES


class Places:
    """`running` places, taken first come first served; a waiter that reaches its deadline gives up its turn."""

    def __init__(self, running: int):
        self.size = running
        self._free = running
        self._waiters: deque[asyncio.Future[bool]] = deque()
        self._expired = 0  # waiters in the queue that can no longer take a place

    @property
    def running(self) -> int:
        return self.size - self._free

    @property
    def waiting(self) -> int:
        return len(self._waiters) - self._expired

    def free(self) -> bool:
        """Whether `take` would take a place at once."""
        return bool(self._free) and not self.waiting

    async def take(self, deadline: float) -> bool:
        """Take a place, waiting until `deadline` (the loop's clock) at most; False when none came."""
        if self.free():
            self._free -= 1
            return True
        loop = asyncio.get_running_loop()
        place = loop.create_future()
        self._waiters.append(place)
        timer = loop.call_at(deadline, self._expire, place)
        try:
            return await place
        except asyncio.CancelledError:
            if place.cancelled() or not place.done():  # cancelled while it waited
                self._forget_one()
            elif place.result():  # handed a place, then cancelled before it ran: the place goes on to the next
                self.give_back()
            # else it had expired (`_expire` forgot it already) and was cancelled before it ran
            raise
        finally:
            timer.cancel()

    def give_back(self) -> None:
        while self._waiters:
            place = self._waiters.popleft()
            if not place.done():
                place.set_result(True)
                return
            self._expired -= 1
        self._free += 1

    def _expire(self, place: asyncio.Future[bool]) -> None:
        if not place.done():
            place.set_result(False)
            self._forget_one()

    def _forget_one(self) -> None:
        """A waiter left before its turn; the dead are dropped once they are half the queue (O(1) amortized)."""
        self._expired += 1
        if self._expired > len(self._waiters) // 2:
            self._waiters = deque(p for p in self._waiters if not p.done())
            self._expired = 0


@dataclass
class AdmissionState:
    """A replica's places and what waits for them, as `/status` reports them."""

    admission: Admission
    metrics: Metrics = NO_METRICS  # the replica's, once its services are built
    places: Places = field(init=False)
    held_bytes: int = 0  # what the requests not yet admitted hold
    refused: dict[str, int] = field(default_factory=lambda: {"waited": 0, "memory": 0, "slow_body": 0})

    def __post_init__(self) -> None:
        self.places = Places(self.admission.running)

    def report(self) -> dict:
        return {
            "running": self.places.running,
            "waiting": self.places.waiting,
            "places": self.places.size,
            "waiting_bytes": self.held_bytes,
            "refused": dict(self.refused),
        }


class AdmissionMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        state: AdmissionState,
        event_streams: frozenset[str] = frozenset(),
        unadmitted: Callable[[str], bool] = lambda path: False,
    ):
        self.app = app
        self.state = state
        self._event_streams = event_streams  # paths whose GET is an event stream
        self._unadmitted = unadmitted  # paths whose GET an operator reads (the live page): never kept waiting

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or ADMITTED in scope or self._exempt(scope):
            await self.app(scope, receive, send)
            return
        state, admission = self.state, self.state.admission
        deadline = asyncio.get_running_loop().time() + admission.wait_seconds
        held = REQUEST_OVERHEAD_BYTES
        state.held_bytes += held
        try:
            if state.held_bytes > admission.waiting_bytes:
                await self._refuse(send, "memory")
                return
            if declared_over(scope, admission.max_body_bytes):
                await self._too_large(send)
                return
            chunks, size = [], 0
            try:
                async with asyncio.timeout_at(deadline):
                    more = True
                    while more:
                        message = await receive()
                        if message["type"] != "http.request":
                            return  # the client went away
                        chunk = message.get("body", b"")
                        size += len(chunk)
                        held += len(chunk)
                        state.held_bytes += len(chunk)
                        if size > admission.max_body_bytes:
                            await self._too_large(send)
                            return
                        if state.held_bytes > admission.waiting_bytes:
                            await self._refuse(send, "memory")
                            return
                        chunks.append(chunk)
                        more = message.get("more_body", False)
            except TimeoutError:
                state.refused["slow_body"] += 1
                await _reply(
                    send,
                    408,
                    f"The request body did not arrive within {admission.wait_seconds:g} s (admission_wait_seconds).",
                    [(b"connection", b"close")],
                )
                return
            if not await self._enter(deadline):
                await self._refuse(send, "waited")
                return
        finally:
            state.held_bytes -= held
        try:
            await self.app(scope, replay(b"".join(chunks), receive), send)
        finally:
            state.places.give_back()

    async def _enter(self, deadline: float) -> bool:
        places = self.state.places
        if places.free():
            return await places.take(deadline)  # at once
        began = time.monotonic()
        admitted = await places.take(deadline)
        self.state.metrics.admission_wait(time.monotonic() - began, admitted)
        return admitted

    def _exempt(self, scope: Scope) -> bool:
        path = route_path(scope)
        return path in HEALTH_PATHS or (
            scope["method"] == "GET" and (path in self._event_streams or self._unadmitted(path))
        )

    async def _refuse(self, send: Send, why: str) -> None:
        self.state.refused[why] += 1
        self.state.metrics.unavailable(f"admission_{why}")
        admission = self.state.admission
        if why == "waited":
            detail = (
                f"The server is busy: this request waited {admission.wait_seconds:g} s for a place "
                "(admission_wait_seconds) and was not started."
            )
        else:
            detail = (
                "The server is busy: the requests waiting for a place hold all the memory they are given "
                "(admission_waiting_bytes), so this one was not started."
            )
        seconds = str(admission.retry_after_seconds)
        await _reply(send, 503, f"{detail} Send it again after {seconds} s.", [(b"retry-after", seconds.encode())])

    async def _too_large(self, send: Send) -> None:
        await _reply(send, 413, too_large(self.state.admission.max_body_bytes), [(b"connection", b"close")])


async def _reply(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})
