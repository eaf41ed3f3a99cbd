"""Session errors to HTTP, in one place (design principle 5)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from session_store.errors import SessionConflict, SessionLost, StoreUnavailable


async def _conflict(request: Request, error: SessionConflict) -> JSONResponse:
    return JSONResponse({"detail": str(error)}, status_code=409)


async def _lost(request: Request, error: SessionLost) -> JSONResponse:
    return JSONResponse({"detail": str(error), "failure_kind": "session_lost"}, status_code=404)  # Decision 1


async def _unavailable(request: Request, error: StoreUnavailable) -> JSONResponse:
    return JSONResponse({"detail": str(error)}, status_code=503, headers={"Retry-After": "2"})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(SessionConflict, _conflict)
    app.add_exception_handler(SessionLost, _lost)
    app.add_exception_handler(StoreUnavailable, _unavailable)
