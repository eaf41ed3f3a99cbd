"""A real `redis-server` (Debian's `redis-server` package) on a free loopback port, for the tests and benches
of the Redis mark store. No fakeredis: expiry, pipelining and persistence are what is tested."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from finsec.net.ports import free_port

MISSING = "redis-server not found: install Debian's redis-server package (`make test` installs it where it can)"


@dataclass
class RedisServer:
    port: int
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@contextmanager
def running_redis(
    *, persist: bool = True, port: int | None = None, folder: Path | None = None, options: tuple[str, ...] = ()
) -> Iterator[RedisServer]:
    """A private redis-server. `persist`: an append-only file fsynced every second, as the app requires of a
    Redis that keeps its marks (without it, a restart forgets them). `port` and `folder`: a restart of an earlier
    one. `options`: more redis-server arguments ("--maxmemory", "2mb")."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError(MISSING)
    owned = folder is None
    folder = Path(tempfile.mkdtemp(prefix="finsec-redis-")) if folder is None else folder
    port = free_port() if port is None else port
    args = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(folder),
        "--save",
        "",
        "--appendonly",
        "yes" if persist else "no",
        "--appendfsync",
        "everysec",
        "--daemonize",
        "no",
        "--loglevel",
        "warning",
        *options,
    ]
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
        if owned:
            shutil.rmtree(folder, ignore_errors=True)
