"""Request bodies, read and parsed strictly before FastAPI sees them: the agent under training is hostile.

- A body over `max_bytes` is refused with 413 before it is read into memory.
- JSON that Python's parser would accept but no JSON renderer can give back is refused with 422 in FastAPI's
  shape, saying what is wrong: non-finite numbers (`NaN`, `Infinity`, `1e999`), integers of more than 400
  digits, unpaired UTF-16 surrogates (in keys too), nesting deeper than `max_depth`, and more than
  MAX_CONTAINERS arrays and objects (a body of tiny containers costs seconds to parse). Such input used to
  reach FastAPI's 422 handler, which echoes it, and rendering the echo failed with a 500.
- Except on the routes that carry trajectories (`repairs`: /verify, /aggregate_metrics): there an unpaired
  surrogate in a string value is model output (a broken emoji), not an attack, so it becomes U+FFFD, as any
  UTF-8 encoder downstream would make it, and the rollout is graded instead of refused.
- Parsing and checking a large body runs in a worker thread, so a 16 MB body never stalls the event loop;
  `StrictJsonRoute` hands the parsed value to FastAPI, so nothing is parsed twice.
Only the named JSON routes are checked: the catch-all tool route never reads its body (§A.12). Routes are
matched on the path relative to the app's mount (deployments/http/prefixes.py), as the router matches them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from deployments.http.bodies import declared_over, replay, too_large
from deployments.http.prefixes import route_path
from finsec import offload

__all__ = ["BadJson", "MAX_CONTAINERS", "parse_strict", "PARSED", "StrictJsonMiddleware", "StrictJsonRoute"]

PARSED = "finsec.json"  # the scope key that carries the parsed body
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MAX_INT_DIGITS = 400
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # runs of plain bytes at once
# Arrays and objects a body may open: each costs the parser and the check here CPU, and a 16 MB body of "[[[1]]]"
# opens eight million (a long stall, the GIL held by one parse throughout; tests/unit/deployments/test_hostile_bodies.py).
MAX_CONTAINERS = 500_000


class BadJson(ValueError):
    """The body is not JSON this server can take; the message says why, without echoing the input."""


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise BadJson(f"the number {text[:40]} is too large to represent (non-finite numbers are not accepted)")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise BadJson(f"an integer has {len(text)} digits; at most {_MAX_INT_DIGITS} are accepted")
    return int(text)


def _no_constant(name: str) -> Any:
    raise BadJson(f"{name} is not valid JSON (non-finite numbers are not accepted)")


def parse_strict(body: bytes, max_depth: int, repair: bool = False) -> Any:
    if (opened := _containers(body)) > MAX_CONTAINERS:
        raise BadJson(
            f"the body opens {opened:,} arrays and objects; at most {MAX_CONTAINERS:,} are accepted "
            "(send fewer, larger items)"
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadJson(f"the body is not UTF-8 (byte {error.start})") from None
    try:
        value = json.loads(text, parse_float=_finite, parse_int=_bounded_int, parse_constant=_no_constant)
    except RecursionError:
        raise BadJson(f"the body nests deeper than {max_depth} levels") from None
    except json.JSONDecodeError as error:
        raise BadJson(f"the body is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    if isinstance(value, str):
        return _checked_string(value, repair)
    if isinstance(value, (dict, list)):
        _check_tree(value, max_depth, repair)
    return value


def _containers(body: bytes) -> int:
    """How many arrays and objects the body opens, or more (a malformed body is refused by the parse anyway).
    Counting brackets is enough for almost every body; only when that passes the limit are the brackets inside
    strings (a prompt's "{{doc}}") left out."""
    opened = body.count(b"[") + body.count(b"{")
    if opened <= MAX_CONTAINERS:
        return opened
    structure = _JSON_STRING.sub(b'""', body)
    return structure.count(b"[") + structure.count(b"{")


def _checked_string(text: str, repair: bool) -> str:
    if not _SURROGATE.search(text):
        return text
    if not repair:
        raise BadJson("a string contains an unpaired UTF-16 surrogate; send valid Unicode text")
    return _SURROGATE.sub("\ufffd", text)


def _check_tree(value: Any, max_depth: int, repair: bool) -> None:
    """Depth and strings of a parsed body, without recursion; repaired strings are replaced in place."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise BadJson(f"the body nests deeper than {max_depth} levels")
        if isinstance(node, dict):
            for key, child in node.items():
                if _SURROGATE.search(key):
                    raise BadJson("a key contains an unpaired UTF-16 surrogate; send valid Unicode text")
                if isinstance(child, str):
                    node[key] = _checked_string(child, repair)
                elif isinstance(child, (dict, list)):
                    stack.append((child, depth + 1))
        else:
            for i, child in enumerate(node):
                if isinstance(child, str):
                    node[i] = _checked_string(child, repair)
                elif isinstance(child, (dict, list)):
                    stack.append((child, depth + 1))


class StrictJsonMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        max_depth: int,
        checks: Callable[[str], bool],
        repairs: Callable[[str], bool] = lambda path: False,
    ):
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.checks = checks
        self.repairs = repairs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not self.checks(route_path(scope)):
            await self.app(scope, receive, send)
            return
        if declared_over(scope, self.max_bytes):
            await self._too_large(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if body:
            repair = self.repairs(route_path(scope))
            try:
                parsed = await offload.run(len(body), parse_strict, body, self.max_depth, repair)
            except BadJson as error:
                response = JSONResponse(
                    {"detail": [{"type": "json_invalid", "loc": ["body"], "msg": str(error), "input": None}]},
                    status_code=422,
                )
                await response(scope, receive, send)
                return
            scope = {**scope, PARSED: parsed}
        await self.app(scope, replay(body, receive), send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse({"detail": too_large(self.max_bytes)}, status_code=413, headers={"Connection": "close"})
        await response(scope, receive, send)


class StrictJsonRoute(APIRoute):
    """FastAPI route that takes the body StrictJsonMiddleware parsed, instead of parsing it again."""

    def get_route_handler(self):
        handler = super().get_route_handler()

        async def route(request: Request):
            if PARSED in request.scope:
                request._json = request.scope[PARSED]
            return await handler(request)

        return route
