"""Liveness routes (contract §A.13)."""

from fastapi import APIRouter

router = APIRouter()


@router.get("/")
@router.get("/health")
@router.get("/healthz")
@router.get("/livez")
@router.get("/readyz")
async def health() -> dict[str, str]:
    return {"status": "ok"}
