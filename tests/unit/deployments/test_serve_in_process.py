"""`finsec serve --in-process`: the same app and contract from one uvicorn process, no Ray. Run as a user runs it
(the command in a subprocess), driven over real HTTP by the project's rollout client with both drivers, and
stopped by SIGTERM."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from deployments.http.admission import Admission
from deployments.settings import Settings
from finsec.net.ports import free_port
from harness.bodies import close_body, episode_seed, new_session_id, verify_body
from harness.episodes import burst
from harness.held_place import admission_settings, assert_waits_then_refuses
from harness.redis_server import running_redis
from harness.serve_process import serving, stopped
from harness.stalling_edgar import stalling_edgar

ROOT = Path(__file__).resolve().parents[3]


def test_serve_in_process_plays_episodes_and_stops_on_sigterm(tmp_path):
    port = free_port()
    server = serving(port, config=ROOT / "configs/serve.yaml")
    try:
        url = f"http://127.0.0.1:{port}"
        loaded = httpx.get(url + "/status", timeout=10).json()
        assert loaded["settings"]["num_shards"] == 2  # the config's settings apply
        assert loaded["settings"]["mark_store"] == "memory"  # where its marks are, not the settings' default
        assert listen_queue(port) == min(most_held(), somaxconn()), listen_queue(port)  # admission decides, not it

        out = tmp_path / "runs.jsonl"
        played = subprocess.run(
            [
                sys.executable,
                "-m",
                "deployments.cli",
                "rollouts",
                "--url",
                url,
                "-n",
                "6",
                "-c",
                "3",
                "--driver",
                "environment-server",
                "--driver",
                "legacy-agent",
                "--out",
                str(out),
                "--fail-on-masked",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert played.returncode == 0, played.stdout[-2000:] + played.stderr[-2000:]
        run, *rows = [json.loads(line) for line in out.read_text().splitlines()]  # the run's options, then episodes
        assert len(rows) == 6 and all(row["reward"] is not None for row in rows), rows

        with httpx.Client(base_url=url, timeout=10) as client:  # a fence after close, as on the Serve path
            sid = new_session_id()
            assert client.post("/seed_session", json=episode_seed(sid)).status_code == 200
            assert client.post("/close_session", json=close_body(sid)).status_code == 200
            again = client.post("/seed_session", json=episode_seed(sid))
            assert again.status_code == 409, again.text
    finally:
        stopped(server)


def listen_queue(port: int) -> int:
    """The listening socket's backlog as the kernel holds it (`ss` shows it as Send-Q)."""
    shown = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    return int(shown.split()[2])


def somaxconn() -> int:
    return int(Path("/proc/sys/net/core/somaxconn").read_text())


def most_held() -> int:
    config = yaml.safe_load((ROOT / "configs/serve.yaml").read_text())
    return Admission.from_settings(Settings(**config["applications"][0]["args"])).most_held()


@pytest.mark.parametrize("durable", [True, False])
def test_over_redis_fences_and_sessions_outlive_the_process(durable):
    """With mark_store_url, a restart of the one process keeps its fences and the cookie secret, as a Serve deploy
    over Redis does; the sessions it held are restored (durable_sessions, the default), or reported lost (masked,
    never scored) without it."""
    port = free_port()
    with running_redis() as redis:
        env = {"FINSEC_MARK_STORE_URL": redis.url, "FINSEC_DURABLE_SESSIONS": str(durable).lower()}
        closed, held = new_session_id(), new_session_id()
        server = serving(port, env)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
                assert client.post("/seed_session", json=episode_seed(closed)).status_code == 200
                assert client.post("/close_session", json=close_body(closed)).status_code == 200
                assert client.post("/seed_session", json=episode_seed(held)).status_code == 200
                cookies = dict(client.cookies)
        finally:
            stopped(server)
        server = serving(port, env)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
                where = client.get("/status").json()["settings"]["mark_store"]
                assert where == f"redis://127.0.0.1:{redis.port}/0", where
                late = client.post("/seed_session", json=episode_seed(closed))
                assert late.status_code == 409, late.text  # the fence outlived the process
                client.cookies.update(cookies)
                verify = client.post("/verify", json=verify_body("42"))
                assert verify.status_code == 200, verify.text
                row = verify.json()
                if durable:
                    assert (row["mask_sample"], row["reward"]) == (False, 1.0), row  # restored, and scored
                else:
                    assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost"), row  # lost
        finally:
            stopped(server)


def test_admission_holds_the_one_process_as_it_holds_a_replica(tmp_path):
    """The config's admission settings bound the one process by waiting time, as on Serve
    (tests/integration/test_admission_http.py): requests wait for the held place and are served; past the bound they
    get 503 with Retry-After, unstarted; health checks are never made to wait."""
    with stalling_edgar() as edgar:
        config = yaml.safe_load((ROOT / "configs/serve.yaml").read_text())
        app = config["applications"][0]
        app["args"] = {**app["args"], **admission_settings(edgar)}
        (tmp_path / "serve.yaml").write_text(yaml.safe_dump(config))
        port = free_port()
        server = serving(port, {}, tmp_path / "serve.yaml")
        try:
            health = assert_waits_then_refuses(f"http://127.0.0.1:{port}", edgar)
            assert health.status_code == 200, health.text  # asked while the place was held
        finally:
            stopped(server)


def test_a_burst_of_episodes_from_a_client_that_never_retries_all_complete():
    """1,024 episodes at once, each request sent once (as NeMo Gym's client sends it), against the packaged config
    as `finsec serve --in-process` serves it: every one completes."""
    port = free_port()
    server = serving(port, {})
    try:
        played = asyncio.run(burst(f"http://127.0.0.1:{port}", 1024))
    finally:
        stopped(server)
    assert played.completed == 1024, (dict(played.failures), played.samples)


def test_serving_leaves_what_it_started_with_out_of_garbage_collections():
    """A full collection holds the event loop, health checks included, for as long as it walks the tracked objects;
    the modules, the app and its settings live as long as the process, so once serving they are frozen out of it."""
    code = (
        "import gc, os, signal\n"
        "from deployments.inprocess import serve_in_process\n"
        "from deployments.settings import Settings\n"
        "def ready(url):\n"
        "    print(gc.get_freeze_count(), flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        f"serve_in_process(Settings(), '127.0.0.1', {free_port()}, on_ready=ready)\n"
    )
    served = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert served.returncode == 0, served.stderr
    assert int(served.stdout.split()[0]) > 10_000, served.stdout  # the startup heap: modules, app, settings
