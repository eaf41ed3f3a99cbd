"""A real HTTP server on 127.0.0.1 serving a folder in the sec.gov URL layout, with scriptable faults.

It stands in for www.sec.gov and data.sec.gov in the live-EDGAR tests: it records every request (time, path,
User-Agent), can answer a path with a scripted sequence of statuses (429, 503, ...), and can hang a path so
a client's timeout fires.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route


@dataclass(frozen=True)
class Seen:
    at: float  # time.monotonic() in this process
    path: str
    user_agent: str


class SecServer:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.seen: list[Seen] = []
        self._scripts: dict[str, deque[int]] = defaultdict(deque)
        self._hangs: dict[str, float] = {}
        app = Starlette(routes=[Route("/{path:path}", self._serve, methods=["GET"])])
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> "SecServer":
        self._thread.start()
        while not self._server.started:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def script(self, path: str, statuses: list[int]) -> None:
        """The next requests for `path` get these statuses, in order; then it is served normally."""
        self._scripts[path.lstrip("/")].extend(statuses)

    def hang(self, path: str, seconds: float) -> None:
        self._hangs[path.lstrip("/")] = seconds

    def requests_for(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path.lstrip("/")]

    async def _serve(self, request: Request) -> Response:
        path = request.path_params["path"]
        self.seen.append(Seen(time.monotonic(), path, request.headers.get("user-agent", "")))
        if path in self._hangs:
            await asyncio.sleep(self._hangs[path])
        if self._scripts[path]:
            return PlainTextResponse("scripted failure", status_code=self._scripts[path].popleft())
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root) or not target.is_file():
            return PlainTextResponse("not found", status_code=404)
        media = "application/json" if target.suffix == ".json" else "text/html"
        return Response(target.read_bytes(), media_type=media)


def most_in_any_window(times: list[float], window: float = 1.0) -> int:
    """The largest number of request arrivals inside any window of `window` seconds."""
    times = sorted(times)
    best, first = 0, 0
    for last, t in enumerate(times):
        while t - times[first] >= window:
            first += 1
        best = max(best, last - first + 1)
    return best
