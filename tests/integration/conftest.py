"""Each module deploys the app it needs on the test session's one Ray cluster and Serve proxy (`serve_url`,
tests/conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from deployments.ingress import app_actors, session_actors_spec
from deployments.local import (
    QUIET_LOGS,
    deploy_application,
    undeploy,
)
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from harness.bodies import close_body, cookie_claims, episode_seed, new_session_id, verify_body  # noqa: F401 (shared)
from session_store.ray_store import RaySessionStore, SessionActors


@dataclass
class App:
    """A deployed app, plus a view of its session store for assertions about state, not only status codes."""

    base_url: str
    settings: Settings
    store: RaySessionStore
    actors: SessionActors

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=60, **kwargs)

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=64)
        return httpx.AsyncClient(base_url=self.base_url, timeout=120, limits=limits, **kwargs)

    def named_actor(self, kind: str):
        """The deployment's actor of this kind ("reaper", "documents", "shard-0-of-4", ...)."""
        import ray

        namespace = app_actors(self.settings).namespace
        names = [
            a["name"]
            for a in ray.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == namespace and a["name"].split(".")[0] == kind
        ]
        assert len(names) == 1, (kind, names)
        return ray.get_actor(names[0], namespace=namespace)

    def sigkill(self, kind: str) -> int:
        """SIGKILL the process of the deployment's actor of this kind (not ray.kill: a real crash)."""
        import os
        import signal

        import ray

        pid = ray.get(self.named_actor(kind).pid.remote(), timeout=30)
        os.kill(pid, signal.SIGKILL)
        return pid

    def describe(self, sid: str) -> dict[str, Any]:
        return asyncio.run(self.store.describe(sid))

    def stats(self) -> dict[str, Any]:
        return asyncio.run(self.store.stats())


def deployed_app(
    serve_url: str,
    name: str,
    replicas: int = 2,
    route_prefix: str = "/",
    logging_config: dict | None = None,
    **settings: Any,
) -> Iterator[App]:
    """The app deployed as a serve config would, at `route_prefix` (its clients' relative URLs go under it)."""
    options = dict(app_name=name, num_shards=4, corpus_dir=embedded_corpus_dir(), reaper_interval_seconds=1.0)
    app_settings = Settings(**{**options, **settings})
    url = deploy_application(
        app_settings,
        serve_url,
        name=name,
        route_prefix=route_prefix,
        options={
            "num_replicas": replicas,
            "ray_actor_options": {"num_cpus": 0},
            "logging_config": logging_config or QUIET_LOGS,
        },
    )
    try:
        yield App(url, app_settings, *store_of(app_settings))
    finally:
        undeploy(app_settings, purge=True)


def store_of(settings: Settings) -> tuple[RaySessionStore, SessionActors]:
    """A view of the deployed app's session store, from the test process (the same named actors)."""
    actors = SessionActors(app_actors(settings), session_actors_spec(settings))
    return RaySessionStore(actors, settings.shard_transport), actors
