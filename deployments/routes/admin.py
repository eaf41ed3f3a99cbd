"""Internal routes for operators: retire_session_state (contract §C.8, Decision 8), the session counters and
the deployment's status.

The retire route exists only when `admin_token` is configured (`retire_router`, included by asgi.py only then),
and answers only to `Authorization: Bearer <admin_token>`: it releases another session's state, so the agent must
never reach it."""

from __future__ import annotations

import asyncio
import hmac

from fastapi import APIRouter, Depends, HTTPException, Request

from deployments import about
from deployments.http.strict_json import StrictJsonRoute
from deployments.services import services
from finsec.contract import RetireRequest
from session_store.timings import TIMING_FIELDS

__all__ = ["retire_router", "retire_session_state", "router", "session_counters", "status"]

router = APIRouter(route_class=StrictJsonRoute)
retire_router = APIRouter(route_class=StrictJsonRoute)


def _operator(request: Request) -> None:
    """A dependency, so a caller without the token is refused before the body is validated."""
    token = services(request).settings.admin_token
    assert token is not None  # the route is only registered with a token
    offered = request.headers.get("authorization", "")
    if not hmac.compare_digest(offered.encode(), f"Bearer {token.get_secret_value()}".encode()):
        raise HTTPException(401, "retire_session_state needs Authorization: Bearer <admin_token>.")


@retire_router.post("/admin/retire_session_state", dependencies=[Depends(_operator)])
async def retire_session_state(request: Request, body: RetireRequest) -> dict[str, str]:
    await services(request).store.retire(body.session_id)
    return {"session_id": body.session_id, "retired": "ok"}


_SHARD_FIELDS = ("incarnation", "settled", "reads_marks_per_id", "sessions", "fences", "clock_step")


@router.get("/status")
async def status(request: Request) -> dict:
    """What this deployment is and holds: version, shape (no secrets), its actors, and each shard's state."""
    app = services(request)
    stats = await app.store.stats()
    version = await asyncio.to_thread(about.version)  # hashes the sources once per process: off the loop
    return {
        "app": app.settings.app_name,
        "version": version,
        "settings": about.shape(app.settings, app.marks_kept_in),
        "held": {k: stats[k] for k in ("sessions", "documents", "fences", "expired_marks")},
        # ok unless a shard decides nothing from absent marks: the store forgot records, or may forget them
        "mark_store": {"ok": stats["store_problem"] is None, "problem": stats["store_problem"]},
        "admission": request.app.state.admission.report(),  # this replica's places
        "shards": [
            {"shard": k, **{f: row.get(f) for f in _SHARD_FIELDS}} for k, row in enumerate(stats.get("shards", []))
        ],
        "actors": await asyncio.to_thread(about.actors, app.settings),
    }


@router.get("/session_counters")
async def session_counters(request: Request) -> dict:
    """What the shards decided since they started, summed over shards: seeds, 409s, closes, verifies, losses."""
    stats = await services(request).store.stats()
    return {
        "counters": stats["counters"],
        "held": {k: stats[k] for k in ("sessions", "documents", "document_chars", "fences", "expired_marks")},
        # Operations per call say how well calls coalesce; the times, where a request's shard time goes.
        "shard_calls": {k: stats[k] for k in ("batches", "operations", *TIMING_FIELDS)},
    }
