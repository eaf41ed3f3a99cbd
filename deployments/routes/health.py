"""Liveness routes (contract §A.13)."""

from fastapi import APIRouter

from deployments.http.strict_json import StrictJsonRoute

router = APIRouter(route_class=StrictJsonRoute)


@router.get("/")
@router.get("/health")
@router.get("/healthz")
@router.get("/livez")
@router.get("/readyz")
async def health() -> dict[str, str]:
    return {"status": "ok"}
