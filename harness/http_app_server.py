"""The whole app in one process (deployments/inprocess.py) behind a real uvicorn server on loopback: a finsec
server with no Ray, for driving rollouts over real HTTP in seconds.

Run as a subprocess to make it fail on cue: `python -m harness.http_app_server --port P --fail-after N --failure
exit` answers N requests and then dies at once (os._exit: connections reset, nothing more is answered);
`--failure hang` stops answering but keeps its connections open, so only a client's timeout ends a request."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from deployments.inprocess import in_process_app
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from finsec.net.ports import free_port

ROOT = Path(__file__).resolve().parents[1]


class FailAfter:
    """Answers `n` HTTP requests, then fails every later one (and the process, for "exit")."""

    def __init__(self, app: ASGIApp, n: int, failure: str):
        self.app, self.left, self.failure = app, n, failure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if self.left <= 0:
                if self.failure == "exit":
                    os._exit(1)
                await asyncio.sleep(3600)
            self.left -= 1
        await self.app(scope, receive, send)


def build(fail_after: int | None, failure: str) -> ASGIApp:
    settings = Settings(app_name="http-app", num_shards=2, corpus_dir=embedded_corpus_dir())
    api = in_process_app(settings).api
    return FailAfter(api, fail_after, failure) if fail_after is not None else api


def start(fail_after: int | None = None, failure: str = "exit") -> tuple[subprocess.Popen, str]:
    """The server as a subprocess; returns it and its base URL once it answers."""
    port = free_port()
    args = [sys.executable, "-m", "harness.http_app_server", "--port", str(port), "--failure", failure]
    if fail_after is not None:
        args += ["--fail-after", str(fail_after)]
    process = subprocess.Popen(args, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test server exited with {process.returncode}")
        try:
            # the health probe is a request too; a server meant to fail after N answers gets N + 1
            httpx.get(url + "/healthz", timeout=2)
            return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the test server did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--fail-after", type=int)
    parser.add_argument("--failure", choices=("exit", "hang"), default="exit")
    options = parser.parse_args()
    app = build(options.fail_after + 1 if options.fail_after is not None else None, options.failure)
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning", timeout_graceful_shutdown=1)


if __name__ == "__main__":
    main()
