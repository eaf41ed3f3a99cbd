"""The FastAPI application every ingress replica serves; also runs in-process over a LocalSessionStore."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator, Awaitable, Callable

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import install_error_handlers
from .identity import SessionIdentityMiddleware
from .rollout_prefix import RolloutPrefixMiddleware
from .routes import health, sessions, tools
from .services import Services
from .settings import Settings


def create_api(
    settings: Settings,
    build_services: Callable[[], Awaitable[Services]],
    cookie_secret: str,
    served_by: str | None = None,
) -> FastAPI:
    """The app; its services are built at startup (loading the ticker registry), so a replica that cannot
    build them never starts serving."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.services = await build_services()
        yield

    app = FastAPI(title="finsec-serve", summary="NeMo Gym finance_sec_search resources server", lifespan=lifespan)
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(sessions.router)
    app.include_router(tools.router)
    app.include_router(tools.unknown_tool_router)  # last: named routes win (§A.0)
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
