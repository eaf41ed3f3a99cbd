"""The session routes: /seed_session, /close_session, /verify, /aggregate_metrics (contract §A.1-A.5, §C)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Body, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import ValidationError

from deployments.http import identity
from deployments.http.strict_json import StrictJsonRoute
from deployments.services import services
from finsec import offload
from finsec.aggregate_metrics import aggregate_metrics
from finsec.contract import (
    AggregateMetricsRequest,
    CloseSessionRequest,
    CloseSessionResponse,
    EpisodeSeedRequest,
    EpisodeSeedResponse,
    VerifyRequest,
)
from finsec.verify import masked_row
from session_store import NO_CLAIMS, EpisodeSeed, canonical_digest

__all__ = [
    "aggregate",
    "close_session",
    "json_response",
    "reverify_mode",
    "router",
    "seed_session",
    "UNREADABLE_COOKIE",
    "verify",
]

router = APIRouter(route_class=StrictJsonRoute)
UNREADABLE_COOKIE = (
    "The session cookie could not be read: it was signed with another secret (the app was "
    "redeployed with a new cookie_secret), altered, or is older than cookie_max_age_seconds. "
    "Its session cannot be known, so this verify is not scored."
)


async def _episode_seed(seed: EpisodeSeedRequest, size: int) -> EpisodeSeed:
    digest = await offload.run(size, canonical_digest, seed.task_data)  # task_data can be a whole dataset row
    return EpisodeSeed(seed.episode_id.model_dump(), seed.task_id.model_dump(), digest)


@router.post("/seed_session")
async def seed_session(request: Request, body: dict[str, Any] = Body(...)) -> Any:
    store = services(request).store
    if "resources_session_id" not in body:  # an agent-run seed: any other object (§A.1, Decision 5)
        sid = identity.session_id(request)
        seeded = await store.seed_agent_run(sid, identity.claims(request))
        identity.bind(request, sid, seeded, "agent_run")
        return {}
    try:  # a seed's task_data may be megabytes: validated off the event loop then
        seed = await offload.run(_body_size(request), EpisodeSeedRequest.model_validate, body)
    except ValidationError as error:  # never falls back to an agent-run seed (Decision 5)
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in error.errors(include_url=False, include_context=False)]
        ) from None
    sid = seed.resources_session_id
    claims = identity.claims(request) if identity.session_id(request) == sid else NO_CLAIMS
    seeded = await store.seed_episode(sid, await _episode_seed(seed, _body_size(request)), claims)
    identity.bind(request, sid, seeded, "episode")  # only now: a refused seed never carries this cookie (§C.2)
    return EpisodeSeedResponse(resources_session_id=sid)


@router.post("/close_session")
async def close_session(request: Request, body: CloseSessionRequest) -> CloseSessionResponse:
    # By body ID, with or without the cookie: a lost seed reply must not hide the session (§C.4).
    await services(request).store.close(body.resources_session_id, body.episode_id.model_dump())
    identity.released(request, body.resources_session_id)
    return CloseSessionResponse(resources_session_id=body.resources_session_id)


@router.post("/verify")
async def verify(request: Request, body: VerifyRequest) -> Response:
    sid = identity.session_id(request)
    size = _body_size(request)
    app = services(request)
    if identity.cookie_unreadable(request):
        row, released = await offload.run(size, masked_row, body, "session_lost", UNREADABLE_COOKIE), False
    else:
        row, released = await app.verifier.verify(sid, identity.claims(request), body, size)
    app.metrics.verify("masked" if row.get("mask_sample") else "scored", row.get("failure_kind"), row.get("reward"))
    reward = row.get("reward")
    request.app.state.telemetry.verified(
        reward if isinstance(reward, int | float) else 0.0, bool(row.get("mask_sample"))
    )
    if released:
        identity.released(request, sid)
    return await json_response(row, size)


@router.post("/aggregate_metrics")
async def aggregate(request: Request, body: AggregateMetricsRequest) -> Response:
    size = _body_size(request)
    return await json_response(await offload.run(size, aggregate_metrics, body.verify_responses), size)


@router.get("/reverify_mode")
async def reverify_mode() -> str:
    return "unknown"


async def json_response(content: Any, size: int) -> Response:
    """A verify row echoes the whole trajectory, which can be megabytes: rendered off the loop when it is."""
    rendered = await offload.run(size, _render, content)
    return Response(rendered, media_type="application/json")


def _render(content: Any) -> bytes:
    return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()


def _body_size(request: Request) -> int:
    """The request body's declared size; a body of unknown size counts as big."""
    declared = request.headers.get("content-length", "")
    return int(declared) if declared.isdigit() else offload.INLINE_BYTES
