"""Each call of a rollout route, as the replica's telemetry counts it (deployments/observability/telemetry.py): its
route, status, time from arrival to the reply's end (a wait for admission included) and the session it named."""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deployments.http.identity import SESSION_ID
from deployments.http.prefixes import route_path
from deployments.observability.telemetry import ReplicaTelemetry

__all__ = ["TelemetryMiddleware"]


class TelemetryMiddleware:
    """Inside the identity middleware (the session the call named is known once the route has run: a seed binds
    it), outside admission (a call's time includes its wait for a place)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        telemetry: ReplicaTelemetry,
        counted: Callable[[str], bool],
    ):
        self.app = app
        self._telemetry = telemetry
        self._counted = counted  # the routes counted; any other path is not (the page's own, health checks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = route_path(scope) if scope["type"] == "http" else ""
        if not self._counted(path):
            await self.app(scope, receive, send)
            return
        began, status = time.perf_counter(), 500  # no reply started: the app failed

        async def noting(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noting)
        finally:
            ms = (time.perf_counter() - began) * 1000
            sid = (scope.get("session") or {}).get(SESSION_ID)
            self._telemetry.called(path, status, ms, sid if isinstance(sid, str) else None)
