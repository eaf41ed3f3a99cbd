"""A folder in the sec.gov URL layout served over HTTP on loopback: a stand-in for www.sec.gov and data.sec.gov.

With `edgar_source: live`, `sec_www_base_url` and `sec_data_base_url` set to its URL and `fetch_trusted_networks:
["127.0.0.1/32"]`, the server's live-EDGAR path (rate limit, retries, content types, the fetch guard) runs
against real HTTP with no internet. It serves GET and HEAD for the files under the folder and nothing else:
no listings, no dotfiles, no path that leaves the folder (symlinks included)."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Route

CONTENT_TYPES = {".json": "application/json", ".htm": "text/html", ".html": "text/html", ".txt": "text/plain",
                 ".xml": "application/xml", ".xsd": "application/xml", ".css": "text/css", ".js": "text/javascript",
                 ".jpg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".pdf": "application/pdf"}
LAYOUT_MARKER = Path("files/company_tickers.json")


class NotAMirror(ValueError):
    pass


class NotLoopback(ValueError):
    pass


def mirror_app(root: Path) -> Starlette:
    root = Path(root).resolve()

    async def serve(request: Request) -> Response:
        path = request.path_params["path"]
        parts = path.split("/")
        if any(not p or p.startswith(".") for p in parts):
            return PlainTextResponse("Not Found", status_code=404)
        target = (root / path).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            return PlainTextResponse("Not Found", status_code=404)
        return FileResponse(target, media_type=CONTENT_TYPES.get(target.suffix.lower(), "application/octet-stream"))

    return Starlette(routes=[Route("/{path:path}", serve, methods=["GET", "HEAD"])])


def check_mirror(root: Path) -> Path:
    root = Path(root)
    if not root.is_dir():
        raise NotAMirror(f"{root} is not a folder")
    if not (root / LAYOUT_MARKER).is_file():
        raise NotAMirror(f"{root} is not in the sec.gov layout: it has no {LAYOUT_MARKER} "
                         "(`finsec corpus write DIR` writes one)")
    return root.resolve()


def check_loopback(host: str) -> str:
    try:
        loopback = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise NotLoopback(f"{host} is not a loopback address: the mirror serves 127.0.0.0/8 or ::1 only")
    return "127.0.0.1" if host == "localhost" else host


class MirrorServer:
    """`with MirrorServer(folder) as server:` serves it at `server.url` from a background thread."""

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0):
        self.root = check_mirror(root)
        self.host = check_loopback(host)
        self._sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((self.host, port))
        self.port = self._sock.getsockname()[1]
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{shown}:{self.port}"
        config = uvicorn.Config(mirror_app(self.root), log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def __enter__(self) -> "MirrorServer":
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the mirror server did not start on {self.url}")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
