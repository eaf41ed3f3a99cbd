"""The FastAPI application every ingress replica serves; it also runs in one process over a LocalSessionStore
(the in-process tests and the single-process baseline of the benchmarks)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deployments.http.admission import Admission, AdmissionMiddleware, AdmissionState
from deployments.http.error_handlers import install_error_handlers
from deployments.http.identity import SessionIdentityMiddleware
from deployments.http.prefixes import RolloutPrefixMiddleware
from deployments.http.strict_json import StrictJsonMiddleware
from deployments.http.telemetry import TelemetryMiddleware
from deployments.observability.hub import LocalHub, TelemetryHub
from deployments.observability.telemetry import ReplicaTelemetry
from deployments.routes import admin, health, sessions, tools, ui
from deployments.services import Services
from deployments.settings import MIN_SECRET_CHARS, Settings

__all__ = ["create_api", "MCP_PATH", "ROLLOUT_ROUTES", "ServedByMiddleware"]


def create_api(
    settings: Settings,
    build_services: Callable[[], Awaitable[Services]],
    cookie_secret: str,
    served_by: str | None = None,
    hub: Any = None,
) -> FastAPI:
    """The app; its services are built at startup (loading the ticker registry), so a replica that cannot
    build them never starts serving, and their clients are closed when it stops. `hub`: the application's
    telemetry hub, whose methods are awaited (the actor's client); None: one of this process's own."""
    if len(cookie_secret) < MIN_SECRET_CHARS:  # the settings refuse these; a caller that bypasses them must not sign
        raise ValueError(f"the cookie secret needs at least {MIN_SECRET_CHARS} characters")

    mcp_route, mcp_running = _mcp(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = await build_services()
        app.state.admission.metrics = app.state.telemetry.metrics = app.state.services.metrics
        telemetry = app.state.telemetry
        running = [
            asyncio.create_task(telemetry.loop.run()),
            asyncio.create_task(
                telemetry.publish(app.state.hub, served_by or "in-process", app.state.admission.report)
            ),
        ]
        try:
            async with mcp_running():  # inside the services: ending MCP sessions releases what they seeded
                yield
        finally:
            for task in running:
                task.cancel()
            await app.state.services.aclose()

    # No slash redirects: Starlette answers a path with (or, under a route prefix, without) a trailing slash with a
    # bodiless 307, where every reply must be JSON (contract §A.0); such a path is a JSON 404 instead.
    app = FastAPI(
        title="finsec-serve",
        summary="NeMo Gym finance_sec_search resources server",
        lifespan=lifespan,
        redirect_slashes=False,
    )
    install_error_handlers(app)
    # Without an admin token the retire route is not registered at all: a 404 whatever the body.
    named_routers = (
        health.router,
        sessions.router,
        tools.router,
        admin.router,
        ui.router,
        *((admin.retire_router,) if settings.admin_token is not None else ()),
    )
    named_routes = [route for router in named_routers for route in router.routes]
    # One flat list, not include_router: FastAPI matches an included router's routes through a wrapper per route
    # and per request, and Serve's replica matches each request once more to label its metrics, so the list is
    # walked twice a request. A rollout's routes come first; FastAPI's docs after them; the catch-all last, so named
    # routes win (§A.12).
    app.router.routes[:] = [
        *sorted(named_routes, key=_rollout_rank),
        *app.router.routes,
        mcp_route,
        *tools.unknown_tool_router.routes,
    ]
    named = {route.path for route in named_routes} | {MCP_PATH}
    app.add_middleware(
        StrictJsonMiddleware,
        max_bytes=settings.max_request_bytes,
        max_depth=settings.max_body_depth,
        checks=named.__contains__,
        repairs={"/verify", "/aggregate_metrics"}.__contains__,
    )
    # Inside the identity middleware, so a refusal carries the session's cookie as every reply does (§A.0).
    app.state.admission = AdmissionState(Admission.from_settings(settings))
    app.add_middleware(
        AdmissionMiddleware,
        state=app.state.admission,
        event_streams=frozenset({MCP_PATH}),
        unadmitted=lambda path: path == ui.UI_PATHS[0] or path.startswith(ui.UI_PATHS[1]),  # the live page: GETs
    )
    # Inside the identity middleware (a call's session is known once its route ran), outside admission (a call's
    # time includes its wait for a place).
    app.state.telemetry = ReplicaTelemetry()
    app.state.hub = hub if hub is not None else LocalHub(TelemetryHub())
    app.add_middleware(TelemetryMiddleware, telemetry=app.state.telemetry, counted=_COUNTED.__contains__)
    app.add_middleware(
        SessionIdentityMiddleware,
        cookie_name=settings.cookie_name,
        secret=cookie_secret,
        max_age=settings.cookie_max_age_seconds,
    )
    app.add_middleware(RolloutPrefixMiddleware)  # added last, so it runs first
    if served_by:
        app.add_middleware(ServedByMiddleware, replica=served_by)
    return app


MCP_PATH = "/mcp"
_MCP_METHODS = ["GET", "POST", "DELETE"]


def _mcp(settings: Settings) -> tuple[Route, Callable[[], AbstractAsyncContextManager[None]]]:
    """The /mcp route and what runs it for the app's life; without the mcp extra's SDK, a 501 naming the fix."""
    try:
        from deployments.routes.mcp import McpEndpoint
    except ImportError as error:  # no mcp, or another major version than the extra pins (nemo-gym brings 1.x)
        return Route(MCP_PATH, _McpUnavailable(error), methods=_MCP_METHODS), nullcontext
    endpoint = McpEndpoint(settings)
    return Route(MCP_PATH, endpoint, methods=_MCP_METHODS), endpoint.run


class _McpUnavailable:
    def __init__(self, error: ImportError):
        self._detail = (
            "The MCP endpoint needs the mcp SDK that finsec-serve[mcp] pins, where this server runs "
            f"({type(error).__name__}: {error}). Install finsec-serve[mcp] there, or call the tools "
            "over REST (POST /<tool>)."
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await JSONResponse({"detail": self._detail}, status_code=501)(scope, receive, send)


# The routes a rollout calls, in the order it first calls them (contract §A): the first a request's match tries.
ROLLOUT_ROUTES = (
    "/seed_session",
    "/sec_filing_search",
    "/parse_html_page",
    "/retrieve_information",
    "/submit_final_result",
    "/verify",
    "/close_session",
)
_COUNTED = frozenset({*ROLLOUT_ROUTES, "/web_search", "/aggregate_metrics"})  # the calls the telemetry times


def _rollout_rank(route: BaseRoute) -> int:
    path = getattr(route, "path", "")
    return ROLLOUT_ROUTES.index(path) if path in ROLLOUT_ROUTES else len(ROLLOUT_ROUTES)


class ServedByMiddleware:
    """Names the replica that answered (`x-finsec-replica`): for operators tracing a session across replicas."""

    def __init__(self, app: ASGIApp, *, replica: str):
        self.app = app
        self.header = (b"x-finsec-replica", replica.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), self.header]
            await send(message)

        await self.app(scope, receive, send_with_header if scope["type"] == "http" else send)
