"""The session routes: /seed_session, /close_session, /verify, /aggregate_metrics (contract §A.1-A.5, §C)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from session_store.core import EpisodeSeed, canonical_digest

from .. import identity
from ..contract import (
    AggregateMetricsRequest,
    CloseSessionRequest,
    CloseSessionResponse,
    EpisodeSeedRequest,
    EpisodeSeedResponse,
    VerifyRequest,
)
from ..metrics import aggregate_metrics
from ..services import services
from ..verify import masked_row, scored_row

router = APIRouter()


def _episode_seed(seed: EpisodeSeedRequest) -> EpisodeSeed:
    return EpisodeSeed(
        seed.episode_id.model_dump(), seed.task_id.model_dump(), canonical_digest(seed.task_data)
    )


@router.post("/seed_session")
async def seed_session(request: Request, body: dict[str, Any] = Body(...)) -> Any:
    store = services(request).store
    if "resources_session_id" not in body:  # an agent-run seed: any other object (§A.1, Decision 5)
        sid = identity.session_id(request)
        result = await store.seed_agent_run(sid)
        identity.bind(request, sid, result.incarnation)
        return {}
    try:
        seed = EpisodeSeedRequest.model_validate(body)
    except ValidationError as error:  # never falls back to an agent-run seed (Decision 5)
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in error.errors(include_url=False, include_context=False)]
        ) from None
    sid = seed.resources_session_id
    claimed = identity.claimed_incarnation(request) if identity.session_id(request) == sid else None
    result = await store.seed_episode(sid, _episode_seed(seed), claimed)
    identity.bind(request, sid, result.incarnation)  # only now: a refused seed never carries this cookie (§C.2)
    return EpisodeSeedResponse(resources_session_id=sid)


@router.post("/close_session")
async def close_session(request: Request, body: CloseSessionRequest) -> CloseSessionResponse:
    # By body ID, with or without the cookie: a lost seed reply must not hide the session (§C.4).
    await services(request).store.close(body.resources_session_id, body.episode_id.model_dump())
    return CloseSessionResponse(resources_session_id=body.resources_session_id)


@router.post("/verify")
async def verify(request: Request, body: VerifyRequest) -> JSONResponse:
    svc = services(request)
    sid = identity.session_id(request)
    digest = canonical_digest(body.model_dump(mode="json"))
    plan = await svc.store.begin_verify(sid, digest, identity.claimed_incarnation(request))
    if plan.action == "masked":
        return JSONResponse(masked_row(body, plan.failure_kind, plan.reason))
    if plan.action == "cached":
        return JSONResponse(plan.verdict)
    row = await scored_row(body, svc.grader)
    if plan.cache_verdict and not row.get("mask_sample"):
        await svc.store.record_verdict(sid, digest, row)
    return JSONResponse(row)


@router.post("/aggregate_metrics")
async def aggregate(body: AggregateMetricsRequest) -> dict[str, Any]:
    return aggregate_metrics(body.verify_responses)


@router.get("/reverify_mode")
async def reverify_mode() -> str:
    return "unknown"
