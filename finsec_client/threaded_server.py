"""An ASGI app served by uvicorn from a background thread, on a socket bound before it starts (so its port is
known and nothing else can take it). For `finsec corpus serve` and for the tests' loopback servers."""

from __future__ import annotations

import socket
import threading
import time
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

__all__ = ["ThreadedServer"]


class ThreadedServer:
    """`with ThreadedServer(app, host="127.0.0.1") as server:` serves `app` at `server.url` until the block ends."""

    def __init__(
        self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0, *, lifespan: Literal["auto", "on", "off"] = "off"
    ):
        self.host = host
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{self.port}"
        config = uvicorn.Config(app, log_level="warning", lifespan=lifespan, timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def __enter__(self) -> ThreadedServer:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start on {self.url}")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
