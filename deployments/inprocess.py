"""The whole application in one process, no Ray: shards, document store and reaper as plain objects.

For the in-process contract tests (through `httpx.ASGITransport`) and the single-process baseline of the
benchmarks. It runs the same routes, core, batching and document store as the Serve app; only the hops differ.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from fastapi import FastAPI

from deployments.asgi import create_api
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
    ShardConfig,
    ShardService,
)


@dataclass
class InProcessApp:
    api: FastAPI
    store: LocalSessionStore
    documents: DocumentStore
    marks: MemoryMarkStore
    reaper: Reaper
    settings: Settings


def in_process_app(settings: Settings, cookie_secret: str | None = None,
                   marks: MemoryMarkStore | None = None, clock=None) -> InProcessApp:
    """The app; its cookie secret is the settings', else `cookie_secret`, else one generated for this process."""
    if settings.cookie_secret is not None:
        cookie_secret = settings.cookie_secret.get_secret_value()
    cookie_secret = cookie_secret or secrets.token_urlsafe(32)
    marks = marks if marks is not None else MemoryMarkStore()
    config = ShardConfig(settings.session_ttl_seconds, settings.fence_ttl_seconds, settings.limits())
    store = LocalSessionStore([ShardService(config, marks, clock) for _ in range(settings.num_shards)],
                              **({"monotonic": clock} if clock else {}))
    documents = DocumentStore(max_bytes=settings.document_store_bytes, grace_seconds=settings.document_grace_seconds,
                              **({"clock": clock} if clock else {}))
    limiter = LocalRateLimiter(settings.requests_per_second, settings.rate_limit_window_seconds)
    metrics = Metrics(settings.app_name)  # this process's own, even beside a Ray cluster
    api = create_api(settings, lambda: build_services(settings, store, limiter, DocumentStoreService(documents),
                                                      **({"clock": clock} if clock else {}), metrics=metrics),
                     cookie_secret)
    reaper = Reaper(store.shards, DocumentStoreService(documents), marks=marks)
    return InProcessApp(api, store, documents, marks, reaper, settings)
