"""Run the application on a private local Ray cluster: for the demo, the tests and the benchmarks."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import httpx

from session_store.actors import destroy_session_actors

from .app import ingress_application
from .ingress import actors_spec
from .settings import Settings

# A private loopback cluster needs no token auth, usage reporting or uv runtime envs (ray-notes: traps).
LOCAL_RAY_ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    "RAY_SERVE_LOG_TO_STDERR": "0",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ray_and_serve(port: int | None = None, **ray_init: Any) -> str:
    """Start a local Ray cluster and Serve's HTTP proxy on 127.0.0.1; returns the base URL."""
    for name, value in LOCAL_RAY_ENV.items():
        os.environ.setdefault(name, value)
    import ray
    from ray import serve

    ray.init(include_dashboard=False, logging_level="warning", **ray_init)
    port = port or free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    return f"http://127.0.0.1:{port}"


def deploy(settings: Settings, base_url: str, *, replicas: int = 1, timeout: float = 120.0) -> None:
    """Deploy the app at route prefix "/" and wait until a real route answers (ray-notes: "Path not found")."""
    from ray import serve

    application = ingress_application(
        settings, num_replicas=replicas, ray_actor_options={"num_cpus": 0}
    )
    serve.run(application, name=settings.app_name, route_prefix="/", blocking=False)
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(base_url + "/healthz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"the Serve app did not answer at {base_url} within {timeout:.0f}s")
        time.sleep(0.2)


def undeploy(settings: Settings) -> None:
    """Delete the app and its detached session actors (they outlive `serve delete` otherwise)."""
    from ray import serve

    serve.delete(settings.app_name)
    destroy_session_actors(actors_spec(settings))
