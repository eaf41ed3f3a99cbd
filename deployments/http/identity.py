"""Session identity: which session a request speaks for (contract §B.1, Decision 14).

The cookie is Starlette's signed session cookie. Its claims:
- `session_id`: NeMo Gym's claim, a random UUID until a seed binds it (an episode seed to `resources_session_id`);
- `shard_incarnation` and `seed_kind`: the life of the shard that seeded the session and how it was seeded, so a
  restarted shard reports the session as lost instead of unknown, for every kind of seed;
- `started_at`: when the session was seeded, by the seeding shard's session clock, so the time budget of the search
  tools (§A.15) is judged against that clock (`SessionStore.shard_now`) with no shard call per request. It is
  dropped when verify or close releases the session, as §A.15 releases the budget.
The cookie is signed, so none of this can be forged by the agent; an old cookie only makes its budget stricter.
Its Path is where the app is mounted (`/` at route prefix "/", `/finsec` at "/finsec"), so two apps behind one
Serve proxy keep their sessions apart even when they share a cookie name.
"""

from __future__ import annotations

import re
import uuid

from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from deployments.http.prefixes import mount_path
from session_store import Claims, Seeded

__all__ = [
    "bind",
    "claims",
    "cookie_unreadable",
    "INCARNATION",
    "released",
    "SEED_KIND",
    "SESSION_ID",
    "session_id",
    "SessionIdentityMiddleware",
    "STARTED_AT",
    "started_at",
]

SESSION_ID = "session_id"
INCARNATION = "shard_incarnation"
SEED_KIND = "seed_kind"
STARTED_AT = "started_at"
_UNREADABLE = "finsec.unreadable_cookie"  # a scope key
_COOKIE_PATH = re.compile(r"/[A-Za-z0-9._~!$&'()*+,=:@/-]*")  # what a Set-Cookie Path can carry unquoted


class SessionIdentityMiddleware:
    """Gives every request a session ID and makes every response carry the cookie, errors included (§A.0)."""

    def __init__(self, app: ASGIApp, *, cookie_name: str, secret: str, max_age: int):
        self._inner = _AssignSessionId(app, cookie_name)
        self._secret, self._cookie_name, self._max_age = secret, cookie_name, max_age
        # One per mount: mounts come from the server's root_path, never from the client, so there are few.
        self._by_mount: dict[str, ASGIApp] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        mount = mount_path(scope) if scope["type"] in ("http", "websocket") else "/"  # a lifespan has no path
        if not _COOKIE_PATH.fullmatch(mount):
            mount = "/"
        if mount not in self._by_mount:
            self._by_mount[mount] = SessionMiddleware(
                self._inner,
                path=mount,
                secret_key=self._secret,
                session_cookie=self._cookie_name,
                max_age=self._max_age,
            )
        await self._by_mount[mount](scope, receive, send)


class _AssignSessionId:
    def __init__(self, app: ASGIApp, cookie_name: str):
        self.app = app
        self._cookie_name = cookie_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            session = scope["session"]
            sid = session.get(SESSION_ID)
            # A cookie signed by us carries a string; anything else gets a fresh session. When our cookie came
            # and said nothing (another secret, tampered, past its max age), that session may be one we lost.
            if not (isinstance(sid, str) and sid):
                sid = str(uuid.uuid4())
                scope[_UNREADABLE] = self._cookie_name in HTTPConnection(scope).cookies
            session[SESSION_ID] = sid  # re-assigning marks the session modified: Set-Cookie on every response
        await self.app(scope, receive, send)


def cookie_unreadable(request: Request) -> bool:
    """The request carried our cookie, but not one this app signed: a verify for it is masked, never scored,
    since the session it stood for cannot be known (the secret changed with a redeploy, say)."""
    return request.scope.get(_UNREADABLE, False)


def session_id(request: Request) -> str:
    return request.session[SESSION_ID]


def claims(request: Request) -> Claims:
    incarnation, kind = request.session.get(INCARNATION), request.session.get(SEED_KIND)
    return Claims(
        incarnation if isinstance(incarnation, str) else None, kind if kind in ("episode", "agent_run") else None
    )


def started_at(request: Request) -> float | None:
    started = request.session.get(STARTED_AT)
    return float(started) if isinstance(started, (int, float)) and not isinstance(started, bool) else None


def bind(request: Request, sid: str, seeded: Seeded, kind: str) -> None:
    """Point the cookie at `sid`. Call only once the seed's checks passed (§C.2 step 5)."""
    request.session.update(
        {SESSION_ID: sid, INCARNATION: seeded.incarnation, SEED_KIND: kind, STARTED_AT: seeded.started_at}
    )


def released(request: Request, sid: str) -> None:
    """The cookie's session was released (verify of an agent-run session, or close): it has no state to lose and
    no time budget any more (§A.15)."""
    if request.session.get(SESSION_ID) == sid:
        for claim in (INCARNATION, SEED_KIND, STARTED_AT):
            request.session.pop(claim, None)
