"""A real `redis-server` (Debian's `redis-server` package) on a free loopback port, for the tests and benches
of the Redis mark store. No fakeredis: expiry, pipelining and persistence are what is tested."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from deployments.net.ports import free_port

MISSING = "redis-server not found: install Debian's redis-server package (`make test` installs it where it can)"


@dataclass
class RedisServer:
    port: int
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@contextmanager
def running_redis(*, persist: bool = False) -> Iterator[RedisServer]:
    """A private redis-server; with `persist`, an append-only file, as a deployment that outlives restarts has."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError(MISSING)
    folder = Path(tempfile.mkdtemp(prefix="finsec-redis-"))
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "",
            "--appendonly", "yes" if persist else "no", "--daemonize", "no", "--loglevel", "warning"]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {port}") from None
                time.sleep(0.05)
        yield RedisServer(port, process)
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(folder, ignore_errors=True)
