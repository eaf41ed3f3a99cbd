"""A real HTTP server on loopback serving a folder in the sec.gov URL layout, with scriptable faults.

It stands in for www.sec.gov and data.sec.gov in the live-EDGAR tests: it records every request (time, path,
User-Agent), can answer a path with a scripted sequence of statuses (429, 503, ..., with headers such as
Retry-After), can hang a path so a client's timeout fires, can redirect a path, can serve a path with
another Content-Type or other bytes, and can drop the connection in the middle of a body. It binds
127.0.0.1 by default; another loopback address (127.0.0.2, ...) gives a second, distinct "host", e.g. a
secret internal server that a redirect must never reach.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from finsec_client.threaded_server import ThreadedServer


@dataclass(frozen=True)
class Seen:
    at: float  # time.monotonic() in this process
    path: str
    user_agent: str


class SecServer:
    def __init__(self, root: Path, host: str = "127.0.0.1"):
        self.root = Path(root).resolve()
        self.seen: list[Seen] = []
        self._scripts: dict[str, deque[tuple[int, dict[str, str]]]] = defaultdict(deque)
        self._hangs: dict[str, float] = {}
        self._generation = 0
        self._redirects: dict[str, str] = {}
        self._types: dict[str, str] = {}
        self._bodies: dict[str, bytes] = {}
        self._cuts: dict[str, int] = {}
        self._server = ThreadedServer(Starlette(routes=[Route("/{path:path}", self._serve, methods=["GET"])]), host)
        self.port, self.url = self._server.port, self._server.url

    def __enter__(self) -> SecServer:
        self._server.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._server.__exit__(*exc)

    def reset(self) -> None:
        """Forget requests seen and every scripted behaviour (for a server shared by several tests)."""
        self.seen.clear()
        for table in (self._scripts, self._hangs, self._redirects, self._types, self._bodies, self._cuts):
            table.clear()
        self._generation += 1  # a request still hanging from before must not take the next test's script

    def script(self, path: str, statuses: list[int], headers: dict[str, str] | None = None) -> None:
        """The next requests for `path` get these statuses (with `headers`), in order; then it is served normally."""
        self._scripts[path.lstrip("/")].extend((status, dict(headers or {})) for status in statuses)

    def hang(self, path: str, seconds: float) -> None:
        self._hangs[path.lstrip("/")] = seconds

    def redirect(self, path: str, location: str) -> None:
        """Answer `path` with a 302 to `location` (sent as given)."""
        self._redirects[path.lstrip("/")] = location

    def serve_as(self, path: str, content_type: str) -> None:
        """Serve `path` with this Content-Type; "" sends none at all."""
        self._types[path.lstrip("/")] = content_type

    def serve_bytes(self, path: str, body: bytes, content_type: str = "text/html") -> None:
        """Answer `path` with `body` (a path that need not exist in the folder)."""
        self._bodies[path.lstrip("/")] = body
        self._types[path.lstrip("/")] = content_type

    def cut(self, path: str, after_bytes: int) -> None:
        """Declare the whole body's length, send its first `after_bytes`, then drop the connection."""
        self._cuts[path.lstrip("/")] = after_bytes

    def requests_for(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path.lstrip("/")]

    async def _serve(self, request: Request) -> Response:
        path = request.path_params["path"]
        self.seen.append(Seen(time.monotonic(), path, request.headers.get("user-agent", "")))
        generation = self._generation
        if path in self._hangs:
            await asyncio.sleep(self._hangs[path])
            if generation != self._generation:
                return PlainTextResponse("reset while hanging", status_code=599)
        if self._scripts[path]:
            status, headers = self._scripts[path].popleft()
            return PlainTextResponse("scripted failure", status_code=status, headers=headers)
        if path in self._redirects:
            return Response(b"", status_code=302, headers={"Location": self._redirects[path]})
        target = (self.root / path).resolve()
        if path in self._bodies:
            body = self._bodies[path]
        elif not target.is_relative_to(self.root) or not target.is_file():
            return PlainTextResponse("not found", status_code=404)
        else:
            body = target.read_bytes()
        media = self._types.get(path, "application/json" if target.suffix == ".json" else "text/html")
        headers = {"Content-Type": media} if media else {}
        if path in self._cuts:
            return _cut_short(body, self._cuts[path], headers)
        return Response(body, headers=headers)


class _Dropped(Exception):
    """Raised inside a streamed body: uvicorn then closes the connection before the declared length."""


def _cut_short(body: bytes, after: int, headers: dict[str, str]) -> Response:
    async def chunks():
        yield body[:after]
        await asyncio.sleep(0.01)
        raise _Dropped("connection dropped mid-body (scripted)")

    return StreamingResponse(chunks(), headers={**headers, "Content-Length": str(len(body))})


def most_in_any_window(times: list[float], window: float = 1.0) -> int:
    """The largest number of request arrivals inside any window of `window` seconds."""
    times = sorted(times)
    best, first = 0, 0
    for last, t in enumerate(times):
        while t - times[first] >= window:
            first += 1
        best = max(best, last - first + 1)
    return best
