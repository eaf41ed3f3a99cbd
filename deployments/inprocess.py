"""The whole application in one process, no Ray: shards, document store and reaper as plain objects.

`finsec serve --in-process` serves it with uvicorn (`serve_in_process`); the in-process contract tests drive it
through `httpx.ASGITransport`, and the benchmarks use it as their single-process baseline. It runs the same
routes, core, batching and document store as the Serve app; only the hops differ. Its marks are in memory, where
a restart of the process forgets every fence, or in the Redis that `mark_store_url` names, begun and checked as a
deploy of the Serve app does: fences, episode seeds and the cookie secret then outlive the process.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import secrets
import signal
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import FastAPI

from deployments.asgi import create_api
from deployments.http.admission import Admission
from deployments.mark_store import begin_mark_store, durable_records
from deployments.mark_store import cookie_secret as kept_cookie_secret
from deployments.services import build_services
from deployments.settings import Settings
from finsec.edgar.limiter import LocalRateLimiter
from finsec.metrics import Metrics
from session_store import (
    DocumentStore,
    DocumentStoreService,
    LocalSessionStore,
    MemoryMarkStore,
    Reaper,
    ShardService,
)
from session_store.marks import MarkStore

__all__ = ["in_process_app", "InProcessApp", "serve_in_process"]

log = logging.getLogger(__name__)


@dataclass
class InProcessApp:
    api: FastAPI
    store: LocalSessionStore
    documents: DocumentStore
    marks: MarkStore
    reaper: Reaper
    settings: Settings


def in_process_app(
    settings: Settings, cookie_secret: str | None = None, marks: MarkStore | None = None, clock=None
) -> InProcessApp:
    """The app; its marks are `marks`, else the Redis the settings name, else in memory. Its cookie secret is the
    settings', else `cookie_secret`, else the one kept in that Redis, else one generated for this process."""
    if marks is None and settings.mark_store():
        begin_mark_store(settings)  # refuses a Redis that may forget, as a deploy does
        marks = durable_records(settings)
        cookie_secret = cookie_secret or kept_cookie_secret(settings)
    if settings.cookie_secret is not None:
        cookie_secret = settings.cookie_secret.get_secret_value()
    cookie_secret = cookie_secret or secrets.token_urlsafe(32)
    marks = marks if marks is not None else MemoryMarkStore()
    config = settings.shard_config()
    store = LocalSessionStore(
        [ShardService(config, marks, clock) for _ in range(settings.num_shards)],
        **({"monotonic": clock} if clock else {}),
    )
    documents = DocumentStore(
        max_bytes=settings.document_store_bytes,
        grace_seconds=settings.document_grace_seconds,
        **({"clock": clock} if clock else {}),
    )
    limiter = LocalRateLimiter(settings.requests_per_second, settings.rate_limit_window_seconds)
    metrics = Metrics(settings.app_name)  # this process's own, even beside a Ray cluster
    kept_in = "memory" if isinstance(marks, MemoryMarkStore) else None
    api = create_api(
        settings,
        lambda: build_services(
            settings,
            store,
            limiter,
            DocumentStoreService(documents),
            **({"clock": clock} if clock else {}),
            metrics=metrics,
            marks_kept_in=kept_in,
        ),
        cookie_secret,
    )
    reaper = Reaper(
        store.shards,
        DocumentStoreService(documents),
        marks=marks,
        stalled_after_seconds=settings.stalled_after_seconds,
    )
    return InProcessApp(api, store, documents, marks, reaper, settings)


def serve_in_process(
    settings: Settings, host: str, port: int, *, on_ready: Callable[[str], None] | None = None
) -> None:
    """Serve the app from this process until SIGINT or SIGTERM, the reaper ticking every reaper_interval_seconds."""
    import uvicorn

    app = in_process_app(settings)
    # Admission, not the kernel, decides who waits: the listen queue holds as many connections as admission may
    # (the kernel caps it at net.core.somaxconn).
    backlog = Admission.from_settings(settings).most_held()
    server = uvicorn.Server(
        uvicorn.Config(app.api, host=host, port=port, log_level="warning", access_log=False, backlog=backlog)
    )

    async def reap() -> None:
        while True:
            await asyncio.sleep(settings.reaper_interval_seconds)
            try:
                await app.reaper.tick()
            except Exception:  # the next tick tries again; a tick never stops the server
                log.exception("reaper tick failed")

    async def main() -> None:
        reaper = asyncio.create_task(reap())
        serving = asyncio.create_task(server.serve())
        while not server.started and not serving.done():
            await asyncio.sleep(0.05)
        # A full collection walks every tracked object and holds the event loop while it does, health checks
        # included. What exists once serving (modules, the app, its settings) lasts as long as the process: leave
        # it out of every collection (docs/benchmarks.md, "Why the serving defaults").
        gc.collect()
        gc.freeze()
        if server.started and on_ready is not None:
            on_ready(f"http://{host}:{port}")
        try:
            await serving
        finally:
            reaper.cancel()

    # uvicorn stops on SIGINT or SIGTERM, then raises the signal again for the handler it found: a stop, not a crash.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    asyncio.run(main())
