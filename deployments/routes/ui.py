"""The live page (`GET /ui`): the application's health now, and any session's story.

The page itself holds no data: a static HTML page, its script and style sheet, each served by the app (no build
step, nothing from elsewhere; the Content-Security-Policy allows only the app's own). It reads
- `GET /ui/state`: open sessions by kind, seeds, closes and verifies per second, each route's p50 and p99, each
  replica's admission and event-loop lag, the shards and the mark store, rewards over 1, 5 and 15 minutes, and the
  stalled sessions (the telemetry hub, deployments/observability/hub.py, and the shards);
- `GET /ui/session/{id}`: a session's kind, age, time left, documents, verdicts and last calls.

With `admin_token` set, both answer only to `Authorization: Bearer <admin_token>` (the page asks for it). Without
one, the state answers as `/status` does, but names no session (a stalled session is counted, not listed), and the
inspector is off: a session's documents are its own, never another caller's to read.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from importlib.resources import files
from typing import Any

from fastapi import APIRouter, HTTPException, Path, Request, Response

from deployments import about
from deployments.services import services
from finsec.contract import MAX_ID_CHARS

__all__ = ["inspect", "router", "state", "UI_PATHS"]

log = logging.getLogger(__name__)

router = APIRouter()

UI_PATHS = ("/ui", "/ui/")  # the page, and every path under it (admission lets their GETs through)
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_ASSETS = {  # path -> (package, file, media type)
    "/ui": ("deployments", "ui/index.html", "text/html; charset=utf-8"),
    "/ui/dom.js": ("finsec_client", "ui/dom.js", "text/javascript; charset=utf-8"),  # the run viewer's, shared
    "/ui/app.js": ("deployments", "ui/app.js", "text/javascript; charset=utf-8"),
    "/ui/style.css": ("finsec_client", "ui/view.css", "text/css; charset=utf-8"),  # the run viewer's, shared
}


def _asset(path: str):
    package, name, media_type = _ASSETS[path]
    body = (files(package) / name).read_bytes()

    async def asset(request: Request) -> Response:
        return Response(body, media_type=media_type, headers=_HEADERS)

    return asset


# Plain routes, outside the OpenAPI schema: the page is not JSON (contract §A.0 names it), and no rollout calls it
for _path in _ASSETS:
    router.add_route(_path, _asset(_path), methods=["GET"], include_in_schema=False)


def _reader(request: Request, *, inspector: bool = False) -> bool:
    """Whether the caller may see sessions by ID (a token is set and it gave it); refuses a caller without the token
    where one is set, and the inspector where none is."""
    token = services(request).settings.admin_token
    if token is None:
        if inspector:
            raise HTTPException(403, "The session inspector is off: it needs admin_token in the app's settings.")
        return False
    offered = request.headers.get("authorization", "")
    if not hmac.compare_digest(offered.encode(), f"Bearer {token.get_secret_value()}".encode()):
        raise HTTPException(401, "The live page's data needs Authorization: Bearer <admin_token>.")
    return True


@router.get("/ui/state")
async def state(request: Request) -> dict[str, Any]:
    names_sessions = _reader(request)
    app, hub = services(request), request.app.state.hub
    settings = app.settings
    stats, stalled, live = await asyncio.gather(
        app.store.stats(),
        app.store.stalled(settings.stalled_after_seconds, 20 if names_sessions else 0),
        _hub_state(hub),
    )
    agent_run = stats.get("agent_run_sessions", 0)
    return {
        "app": settings.app_name,
        "version": await asyncio.to_thread(about.version),
        "sessions": {"open": stats["sessions"], "episode": stats["sessions"] - agent_run, "agent_run": agent_run},
        "held": {k: stats[k] for k in ("documents", "fences", "expired_marks")},
        "mark_store": {"ok": stats["store_problem"] is None, "problem": stats["store_problem"]},
        "shards": [
            {
                "shard": k,
                "settled": row.get("settled"),
                "sessions": row.get("sessions"),
                "clock_step": row.get("clock_step"),
            }
            for k, row in enumerate(stats.get("shards", []))
        ],
        "stalled": {"after_seconds": settings.stalled_after_seconds, **stalled},
        "telemetry": live,
    }


async def _hub_state(hub) -> dict[str, Any]:
    """The replicas' telemetry, or why there is none now (a hub that restarts: its next snapshots arrive soon)."""
    try:
        return {"ok": True, **await hub.state()}
    except Exception as error:
        log.warning("the live page's telemetry hub did not answer: %r", error)
        return {"ok": False, "problem": f"the telemetry hub did not answer ({type(error).__name__})"}


@router.get("/ui/session/{sid}")
async def inspect(request: Request, sid: str = Path(min_length=1, max_length=MAX_ID_CHARS)) -> dict[str, Any]:
    _reader(request, inspector=True)
    app = services(request)
    shown = await app.store.inspect(sid)
    budget = app.settings.max_rollout_time_seconds
    if shown["open"] and budget:  # the tools' time budget (contract §A.15), by the shard's clock as they judge it
        shown["budget_left_seconds"] = budget - shown["age_seconds"]
    try:
        calls = await request.app.state.hub.trail(sid)
    except Exception as error:
        log.warning("the live page's telemetry hub did not answer: %r", error)
        calls = None
    return {**shown, "calls": calls}
