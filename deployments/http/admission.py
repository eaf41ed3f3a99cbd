"""Backpressure for the app served from one process (`finsec serve --in-process`), as Serve gives each replica:
at most `max_ongoing` requests run at once and `max_queued` more wait; a request past both is answered at once
with 503 and Retry-After, before its body is read, so a saturated process turns work away instead of queueing it
without bound. The numbers are the serve config's own (FinsecIngress `max_ongoing_requests`,
`max_queued_requests`, `backpressure_config.retry_after_s`), so one config bounds both ways of serving.

Only HTTP requests the process receives are counted: the MCP endpoint's calls to the app's own routes are already
inside an admitted request. Health checks are never turned away: a busy process is alive, and a probe that read
its 503 as death would restart it and lose every session it holds.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from deployments.http.prefixes import route_path
from deployments.routes.health import HEALTH_PATHS

__all__ = ["Admission", "AdmissionMiddleware"]

# Serve's replica says the same (ray/serve/_private/replica.py), so a client tells backpressure the same way.
REFUSAL = b"Request dropped due to backpressure"


@dataclass(frozen=True)
class Admission:
    """Serve's defaults where the config says nothing: 5 running, no bound on those waiting, no Retry-After."""

    max_ongoing: int = 5
    max_queued: int = -1  # -1: no bound, as in Serve
    retry_after_s: float | None = None
    status_code: int = 503

    @classmethod
    def from_deployment_options(cls, options: dict[str, Any]) -> Admission:
        backpressure = options.get("backpressure_config") or {}
        return cls(max_ongoing=options.get("max_ongoing_requests", cls.max_ongoing),
                   max_queued=options.get("max_queued_requests", cls.max_queued),
                   retry_after_s=backpressure.get("retry_after_s"),
                   status_code=backpressure.get("status_code") or cls.status_code)


class AdmissionMiddleware:
    def __init__(self, app: ASGIApp, admission: Admission):
        self.app = app
        self.admission = admission
        self._running = asyncio.Semaphore(admission.max_ongoing)
        self._held = 0  # running and waiting
        limit = admission.max_queued
        self._most = math.inf if limit < 0 else admission.max_ongoing + limit
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(REFUSAL)).encode())]
        if admission.retry_after_s is not None:
            headers.append((b"retry-after", str(max(0, math.ceil(admission.retry_after_s))).encode()))
        self._refusal = {"type": "http.response.start", "status": admission.status_code, "headers": headers}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or route_path(scope) in HEALTH_PATHS:
            await self.app(scope, receive, send)
            return
        if self._held >= self._most:
            await send(self._refusal)
            await send({"type": "http.response.body", "body": REFUSAL})
            return
        self._held += 1
        try:
            async with self._running:
                await self.app(scope, receive, send)
        finally:
            self._held -= 1
