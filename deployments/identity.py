"""Session identity: which session a request speaks for (contract §B.1, Decision 14).

The cookie is Starlette's signed session cookie. Its claims are `session_id` (NeMo Gym's claim: a random
UUID until an episode seed binds it to `resources_session_id`) and `shard_incarnation`, the life of the
shard that seeded it, so a restarted shard can report the session as lost instead of unknown.
"""

from __future__ import annotations

import uuid

from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

SESSION_ID = "session_id"
INCARNATION = "shard_incarnation"


class SessionIdentityMiddleware:
    """Gives every request a session ID and makes every response carry the cookie, errors included (§A.0)."""

    def __init__(self, app: ASGIApp, *, cookie_name: str, secret: str, max_age: int):
        self.app = SessionMiddleware(
            _AssignSessionId(app), secret_key=secret, session_cookie=cookie_name, max_age=max_age
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class _AssignSessionId:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            session = scope["session"]
            # Re-assigning marks the session modified, so Set-Cookie goes out on every response.
            session[SESSION_ID] = session.get(SESSION_ID) or str(uuid.uuid4())
        await self.app(scope, receive, send)


def session_id(request: Request) -> str:
    return request.session[SESSION_ID]


def claimed_incarnation(request: Request) -> str | None:
    return request.session.get(INCARNATION)


def bind(request: Request, sid: str, incarnation: str) -> None:
    """Point the cookie at `sid`. Call only once the seed's checks passed (§C.2 step 5)."""
    request.session[SESSION_ID] = sid
    request.session[INCARNATION] = incarnation
