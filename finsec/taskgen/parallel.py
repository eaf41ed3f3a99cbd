"""Building many filings' tasks at once: each filing a Ray task over a cluster, the results taken in the order the
filings were read, so a build's output is the same on one core or a hundred.

The driver reads the filings and keeps at most a window of them in flight (twice the workers), so a corpus of any
size holds a bounded number of documents in the object store. Each task reads one filing's inline XBRL and checks
its facts (`build_tasks`): CPU work with no shared state, one core each. Across-filing kinds (comparisons) are
built by the driver afterwards, from the results.

Without an address a build runs in this process, one filing at a time, as it always has."""

from __future__ import annotations

import asyncio
import os
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from finsec.taskgen.build import Built, Source, build_tasks

__all__ = ["Builds", "in_order", "local_builds", "ray_builds"]

_Build = Callable[[Source, str], Awaitable[Built]]


class Builds:
    """Where filings are built: `build(source, document)`, and how many may be in flight at once."""

    def __init__(self, build: _Build, window: int, close: Callable[[], None] = lambda: None):
        self.build, self.window, self.close = build, window, close


def local_builds() -> Builds:
    """In this process, one filing at a time (off the event loop, which reads the next filing meanwhile)."""
    return Builds(lambda source, document: asyncio.to_thread(build_tasks, source, document), window=1)


def ray_builds(address: str, workers: int | None = None) -> Builds:
    """On a Ray cluster: `address` as `ray.init` takes it ("auto", "ray://host:10001", "host:6379"), or "local"
    for a new cluster on this machine of `workers` CPUs. Twice `workers` filings are in flight at once (default
    `workers`: the cluster's CPUs), so each worker has the next filing at hand when it finishes one. The cluster's
    nodes must have finsec-serve installed, as they do for `finsec serve`."""
    import ray

    _check_reachable(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    options: dict[str, Any] = {"address": address, "include_dashboard": False, "logging_level": "warning"}
    if address == "local" and workers:
        options["num_cpus"] = workers
    ray.init(**options)
    workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    remote = ray.remote(num_cpus=1, max_retries=3)(build_tasks)  # a filing is built again if its worker dies

    async def build(source: Source, document: str) -> Built:
        return await remote.remote(source, document)

    return Builds(build, window=2 * workers, close=ray.shutdown)


def _check_reachable(address: str) -> None:
    """A HOST:PORT that nothing answers at is a ConnectionError now: `ray.init` would wait minutes for it."""
    if address in ("auto", "local") or "://" in address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as error:
        raise ConnectionError(f"nothing answers at {address} ({error})") from None


async def in_order(
    filings: AsyncIterator[tuple[Source, str | None]], builds: Builds
) -> AsyncIterator[tuple[Source, str | None, Built | None]]:
    """Each filing with its build (None for a filing with no document), in the order read, with at most
    `builds.window` filings in flight."""
    pending: deque[tuple[Source, str | None, asyncio.Future[Built] | None]] = deque()

    async def oldest() -> tuple[Source, str | None, Built | None]:
        source, document, future = pending.popleft()
        return source, document, await future if future is not None else None

    try:
        async for source, document in filings:
            future: asyncio.Future[Built] | None = (
                asyncio.ensure_future(builds.build(source, document)) if document is not None else None
            )
            pending.append((source, document, future))
            while len(pending) > builds.window:
                yield await oldest()
        while pending:
            yield await oldest()
    finally:
        for _, _, future in pending:
            if future is not None:
                future.cancel()
