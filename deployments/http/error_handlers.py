"""Errors to HTTP, in one place (design principle 5).

- SessionConflict -> 409 `{"detail": ...}`; SessionLost -> 404 with `failure_kind: session_lost` (Decision 1);
- StoreUnavailable (a shard restarting, a timeout, a record that could not be made durable, a full store)
  -> 503 with Retry-After: the request may be retried as it is;
- request validation -> 422 in FastAPI's shape, but never echoing more than a short, renderable excerpt of
  the input: a 422 must not be the way a huge or strange body comes back.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from session_store import SessionConflict, SessionLost, StoreUnavailable

__all__ = ["install_error_handlers", "RETRY_AFTER_SECONDS"]

RETRY_AFTER_SECONDS = "2"
_ECHO_CHARS = 200


async def _conflict(request: Request, error: SessionConflict) -> JSONResponse:
    return JSONResponse({"detail": str(error)}, status_code=409)


async def _lost(request: Request, error: SessionLost) -> JSONResponse:
    return JSONResponse({"detail": str(error), "failure_kind": "session_lost"}, status_code=404)


async def _unavailable(request: Request, error: StoreUnavailable) -> JSONResponse:
    services = getattr(request.app.state, "services", None)
    if services is not None:
        services.metrics.unavailable(error.cause)
    return JSONResponse({"detail": str(error)}, status_code=503, headers={"Retry-After": RETRY_AFTER_SECONDS})


async def _invalid(request: Request, error: RequestValidationError) -> JSONResponse:
    return JSONResponse({"detail": [_short_error(e) for e in error.errors()[:20]]}, status_code=422)


def _short_error(error: dict[str, Any]) -> dict[str, Any]:
    out = {
        "type": error.get("type"),
        "loc": [str(p) if not isinstance(p, int) else p for p in error.get("loc", ())],
        "msg": str(error.get("msg", ""))[: _ECHO_CHARS * 2],
        "input": _excerpt(error.get("input")),
    }
    if isinstance(error.get("ctx"), dict):
        out["ctx"] = {
            str(k): _excerpt(v if isinstance(v, (str, int, float, bool)) else str(v)) for k, v in error["ctx"].items()
        }
    return out


def _excerpt(value: Any) -> Any:
    """The input as FastAPI would echo it when that is short; a summary otherwise."""
    if isinstance(value, (bytes, bytearray)):  # a body FastAPI did not parse (not sent as application/json)
        value = bytes(value).decode("utf-8", "replace")
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        short = value if len(value) <= _ECHO_CHARS else value[:_ECHO_CHARS] + f"... ({len(value):,} characters)"
        return short.encode("utf-8", "replace").decode("utf-8")  # renderable whatever it holds
    try:
        text = json.dumps(value, ensure_ascii=True, allow_nan=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return f"<{type(value).__name__}>"
    if len(text) <= _ECHO_CHARS:
        return value
    size = f"{len(value):,} items" if isinstance(value, (list, dict)) else f"{len(text):,} characters"
    return f"<{type(value).__name__} of {size}>"


def install_error_handlers(app: FastAPI) -> None:
    # The ignores: Starlette types every handler as taking any Exception, though it calls each with its own class.
    app.add_exception_handler(SessionConflict, _conflict)  # type: ignore[arg-type]
    app.add_exception_handler(SessionLost, _lost)  # type: ignore[arg-type]
    app.add_exception_handler(StoreUnavailable, _unavailable)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
