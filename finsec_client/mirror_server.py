"""A folder in the sec.gov URL layout served over HTTP on loopback: a stand-in for www.sec.gov and data.sec.gov.

With `edgar_source: live`, `sec_www_base_url` and `sec_data_base_url` set to its URL and `fetch_trusted_networks:
["127.0.0.1/32"]`, the server's live-EDGAR path (rate limit, retries, content types, the fetch guard) runs
against real HTTP with no internet. It serves GET and HEAD for the files under the folder and nothing else:
no listings, no dotfiles, no path that leaves the folder (symlinks included)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Route

from finsec_client.threaded_server import ThreadedServer

__all__ = [
    "check_loopback",
    "check_mirror",
    "CONTENT_TYPES",
    "LAYOUT_MARKER",
    "mirror_app",
    "MirrorServer",
    "NotAMirror",
    "NotLoopback",
]

CONTENT_TYPES = {
    ".json": "application/json",
    ".htm": "text/html",
    ".html": "text/html",
    ".txt": "text/plain",
    ".xml": "application/xml",
    ".xsd": "application/xml",
    ".css": "text/css",
    ".js": "text/javascript",
    ".jpg": "image/jpeg",
    ".png": "image/png",
    ".gif": "image/gif",
    ".pdf": "application/pdf",
}
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
        raise NotAMirror(
            f"{root} is not in the sec.gov layout: it has no {LAYOUT_MARKER} (`finsec corpus write DIR` writes one)"
        )
    return root.resolve()


def check_loopback(host: str) -> str:
    try:
        loopback = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise NotLoopback(f"{host} is not a loopback address: the mirror serves 127.0.0.0/8 or ::1 only")
    return "127.0.0.1" if host == "localhost" else host


class MirrorServer(ThreadedServer):
    """`with MirrorServer(folder) as server:` serves it at `server.url` from a background thread."""

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0):
        self.root = check_mirror(root)
        super().__init__(mirror_app(self.root), check_loopback(host), port)
