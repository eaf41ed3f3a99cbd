"""Liveness routes (contract §A.13)."""

from fastapi import APIRouter

from deployments.http.strict_json import StrictJsonRoute

__all__ = ["health", "HEALTH_PATHS", "router"]

router = APIRouter(route_class=StrictJsonRoute)

HEALTH_PATHS = frozenset({"/", "/health", "/healthz", "/livez", "/readyz"})


async def health() -> dict[str, str]:
    return {"status": "ok"}


for _path in sorted(HEALTH_PATHS):
    router.add_api_route(_path, health, methods=["GET"])
