"""`finsec serve CONFIG --address ADDR` joins a running cluster (the test session's), deploys the app from the
config, serves it, and on SIGTERM removes its application and actors while the cluster stays up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from deployments.cpu_policy import policy_of
from deployments.ingress import app_actors
from deployments.settings import Settings
from harness.bodies import close_body, episode_seed, new_session_id
from harness.serve_configs import one_replica

APP = "it-serve-cli"


def named_actors(settings: Settings) -> list[str]:
    import ray

    namespace = app_actors(settings).namespace
    return [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == namespace]


def durable(sid: str) -> tuple[set[str], bytes | None]:
    """The IDs among `sid` with a durable mark, and the app's kept cookie secret, read from the cluster's GCS."""
    import asyncio

    from ray.experimental import internal_kv

    from session_store.marks import StoreForgot
    from session_store.marks.gcs_store import GcsMarkStore

    namespace = app_actors(Settings(app_name=APP)).kv_namespace
    try:
        marks = asyncio.run(GcsMarkStore(namespace).read([sid]))
    except StoreForgot as purged:  # a purge takes the marker too
        marks = purged.found
    return set(marks), internal_kv._internal_kv_get(b"cookie-secret", namespace=namespace)


@pytest.mark.timeout(300)
def test_serve_joins_a_cluster_and_stops_without_taking_it_down(serve_url, tmp_path):
    import ray
    from ray import serve

    port = int(serve_url.rsplit(":", 1)[1])
    address = ray.get_runtime_context().gcs_address
    sid = new_session_id()
    serve_and_stop(
        tmp_path,
        port,
        address,
        lambda client: (
            client.post("/seed_session", json=episode_seed(sid)),
            client.post("/close_session", json=close_body(sid)),
        ),
    )
    assert APP not in serve.status().applications
    assert named_actors(Settings(app_name=APP)) == []
    assert ray.is_initialized() and ray.cluster_resources()  # the cluster is still up
    marks, secret = durable(sid)
    assert marks == {sid} and secret  # a stop keeps the fence and the cookie secret

    output = serve_and_stop(tmp_path, port, address, lambda client: None, "--purge")
    assert "purged" in output and durable(sid) == (set(), None), output


def serve_and_stop(tmp_path, port: int, address: str, traffic, *flags: str) -> str:
    command = [
        str(Path(sys.executable).parent / "finsec"),
        "serve",
        str(one_replica(tmp_path, APP, port)),
        "--address",
        address,
        *flags,
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while not any("is up at" in line for line in seen):
            line = process.stdout.readline()
            assert line or process.poll() is None, "".join(seen)
            seen.append(line)
            assert time.monotonic() < deadline, "".join(seen)
        assert any("corpus: the embedded corpus" in process.stdout.readline() for _ in range(3))
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            assert client.post("/seed_session", json={}).status_code == 200
            traffic(client)
        assert named_actors(Settings(app_name=APP))  # shards and friends exist while it serves
        process.send_signal(signal.SIGTERM)
        assert process.wait(120) == 0, "".join(seen)
        return "".join(seen) + process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def policies_of(pids: set[int]) -> dict[int, tuple[str, str]]:
    """Each live process's name and scheduling policy."""
    found = {}
    for pid in pids:
        try:
            found[pid] = (command_name(pid), policy_of(pid))
        except ProcessLookupError:  # it exited meanwhile
            pass
    return found


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@pytest.mark.timeout(240)
def test_serve_on_its_own_cluster_stops_it_and_its_haproxy(tmp_path):
    from deployments.local import free_port

    port = free_port()
    command = [
        str(Path(sys.executable).parent / "finsec"),
        "serve",
        str(one_replica(tmp_path, APP, 8000)),
        "--port",
        str(port),
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen: list[str] = []
    try:
        while not any("is up at" in line for line in seen):  # --port overrides the config's 8000
            line = process.stdout.readline()
            assert line or process.poll() is None, "".join(seen)
            seen.append(line)
        assert f"http://127.0.0.1:{port}" in seen[-1]
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code == 200
        haproxy = {p for p in descendants(process.pid) if command_name(p) == "haproxy"}
        assert haproxy  # the default ingress
        cluster = descendants(process.pid)
        # The cluster runs under SCHED_BATCH (deployments/cpu_policy.py), the command itself as it started.
        assert policy_of(process.pid) == "SCHED_OTHER"
        policies = policies_of(cluster)
        assert {"haproxy", "raylet", "gcs_server"} <= {name for name, _ in policies.values()}, policies
        assert any(name.startswith("ray::ServeRepl") for name, _ in policies.values()), policies
        assert {policy for _, policy in policies.values()} == {"SCHED_BATCH"}, policies
        process.send_signal(signal.SIGTERM)
        assert process.wait(120) == 0, process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
    alive = {
        p for p in cluster if Path(f"/proc/{p}").exists() and command_name(p) in ("haproxy", "raylet", "gcs_server")
    }
    assert not alive
