"""Fault scenarios on real local Ray clusters: rollouts keep running while a process or a whole node dies,
and every episode is checked afterwards. Used by the fault tests and by `bench/faults.py` (the report).

Each scenario returns a summary: episodes run, episodes the fault reached, how many of those were masked,
unmasked wrong rewards (must be 0: the scripted answers are right, so an unmasked reward other than 1.0 is a
fault turned into a training signal), and the recovery time (from the fault to the first clean episode that
needed what was killed).

    python -m tests.fault_scenarios node-loss [--seconds 12]    # prints the summary as JSON
    python -m tests.fault_scenarios serve-shutdown
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from deployments.corpus.generate import questions
from session_store import shard_index

TASK = questions()[0]
PROMPT = "total net revenues {{doc}}"


@dataclass
class Episode:
    sid: str
    started: float
    ended: float = 0.0
    statuses: list[int] = field(default_factory=list)
    row: dict | None = None
    retried: int = 0  # requests repeated after a 5xx or a dropped connection

    @property
    def clean(self) -> bool:
        return self.row is not None and self.statuses[:4] == [200] * 4 and self.row["mask_sample"] is False

    @property
    def faulted(self) -> bool:
        return any(s not in (200,) for s in self.statuses)


async def episode(client: httpx.AsyncClient, retry_5xx: bool) -> Episode:
    """One episode as single_agent_turn drives it. With `retry_5xx`, a 5xx or a dropped connection is retried,
    as a rollout driver may: every route is safe to repeat by the contract."""
    sid = f"resources-session-{uuid.uuid4().hex}"
    ep = {"rollout_id": sid[-10:], "attempt": 0}
    record = Episode(sid, time.monotonic())
    answer = {"type": "function_call", "name": "submit_final_result", "call_id": "c",
              "arguments": json.dumps({"final_result": TASK["expected_answer"]})}
    steps = [("/seed_session", {"resources_session_id": sid, "episode_id": ep,
                                "task_id": {"taskset": "faults", "task_id": sid}, "task_data": {}}),
             ("/parse_html_page", {"url": TASK["url"], "key": "doc"}),
             ("/retrieve_information", {"prompt": PROMPT}),
             ("/verify", {"responses_create_params": {"input": [{"role": "user", "content": TASK["question"]}]},
                          "response": {"output": [answer]}, "question": TASK["question"],
                          "expected_answer": TASK["expected_answer"]}),
             ("/close_session", {"resources_session_id": sid, "episode_id": ep})]
    for path, body in steps:
        for attempt in range(40 if retry_5xx else 1):
            try:
                response = await client.post(path, json=body)
                status = response.status_code
            except httpx.HTTPError:
                response, status = None, 0
            if status < 500 and status != 0 or not retry_5xx:
                break
            record.retried += 1
            await asyncio.sleep(0.25)
        record.statuses.append(status)
        if path == "/verify" and status == 200:
            record.row = response.json()
        if path == "/seed_session" and status != 200:
            break
    record.ended = time.monotonic()
    return record


async def rollouts(url: str, workers: int, seconds: float, fault, fault_after: float,
                   retry_5xx: bool = False) -> tuple[list[Episode], float]:
    """Episodes from `workers` concurrent clients for `seconds`; `fault()` runs (in a thread) after
    `fault_after` seconds. Returns the episodes and when the fault happened."""
    done: list[Episode] = []
    stop_at = time.monotonic() + seconds
    fault_at = 0.0

    async def worker():
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            while time.monotonic() < stop_at:
                client.cookies.clear()
                done.append(await episode(client, retry_5xx))

    async def inject():
        nonlocal fault_at
        await asyncio.sleep(fault_after)
        fault_at = time.monotonic()
        await asyncio.to_thread(fault)

    await asyncio.gather(inject(), *(worker() for _ in range(workers)))
    return done, fault_at


def summarize(episodes: list[Episode], fault_at: float, hit) -> dict:
    """`hit(episode)`: whether the fault could reach this episode (its shard died, its node went away)."""
    spanning = [e for e in episodes if e.started <= fault_at + 60 and e.ended >= fault_at - 5]
    reached = [e for e in episodes if e.faulted or (e.row is not None and e.row["mask_sample"])]
    wrong = [e for e in episodes if e.row is not None and not e.row["mask_sample"] and e.row["reward"] != 1.0]
    after = sorted((e for e in episodes if e.started >= fault_at and hit(e) and e.clean), key=lambda e: e.ended)
    return {
        "episodes": len(episodes),
        "episodes_around_the_fault": len(spanning),
        "exposed_at_the_fault": sum(1 for e in episodes if e.started <= fault_at <= e.ended and hit(e)),
        "episodes_the_fault_reached": len(reached),
        "reached_but_not_exposed": sum(1 for e in reached if not hit(e)),
        "masked": sum(1 for e in episodes if e.row is not None and e.row["mask_sample"]),
        "unmasked_wrong_rewards": len(wrong),
        "server_errors_500": sum(s == 500 for e in episodes for s in e.statuses),
        "requests_retried": sum(e.retried for e in episodes),
        "statuses": sorted({s for e in episodes for s in e.statuses}),
        "recovery_seconds": round(after[0].ended - fault_at, 2) if after else None,
    }


# ----- node loss: a three-node cluster, the state actors kept off the head ----------------------------------


def node_loss(seconds: float = 12.0) -> dict:
    """Head node (controller, HAProxy, ingress replicas) plus two state nodes (shards, reaper, document store,
    limiter: the `finsec_state` resource). The app is deployed from a serve config by `finsec serve --address`,
    as on a real cluster. Rollouts run; one state node holding shards is removed; then `finsec serve` is
    stopped, which must remove the app's actors and leave the cluster up."""
    from deployments.local import LOCAL_RAY_ENV, ingress_env, stop_haproxy

    os.environ.update(LOCAL_RAY_ENV)
    os.environ.update(ingress_env("haproxy"))
    import ray
    from ray import serve
    from ray.cluster_utils import Cluster

    from deployments.corpus.generate import embedded_corpus_dir
    from deployments.ingress import app_actors
    from deployments.settings import Settings

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "gcs_server_port": _free_port(),
                                                            "resources": {"finsec_ingress": 10}})
    state = [cluster.add_node(num_cpus=0, resources={"finsec_state": 10}) for _ in range(2)]
    server = None
    try:
        ray.init(address=cluster.address, logging_level="warning")
        port = _free_port()
        # One HAProxy, on the head: the three "nodes" share this machine's ports.
        serve.start(http_options={"host": "127.0.0.1", "port": port}, proxy_location="HeadOnly")
        args = {"app_name": "node-loss", "num_shards": 4, "corpus_dir": str(embedded_corpus_dir()),
                "reaper_interval_seconds": 0.5, "state_actor_resources": {"finsec_state": 0.01},
                "store_call_timeout_seconds": 5.0}
        config = _serve_config(args, port)
        server = subprocess.Popen([sys.executable, "-m", "deployments.cli", "serve", str(config), "--address",
                                   cluster.address], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        url = _wait_for_url(server)
        settings = Settings(**args)
        app = app_actors(settings)
        nodes = _actor_nodes(app)
        head = cluster.head_node.node_id
        placement = {"on_head": sorted(n for n, node in nodes.items() if node == head),
                     "state_nodes": sorted({node for node in nodes.values()} - {head})}
        shards = {n: node for n, node in nodes.items() if n.startswith("shard-")}
        victim = max(state, key=lambda node: sum(v == node.node_id for v in shards.values()))
        lost = {int(n.split("-")[1]) for n, node in shards.items() if node == victim.node_id}

        closed = _closed_ids(url, 8)
        episodes, fault_at = asyncio.run(rollouts(url, 8, seconds, lambda: cluster.remove_node(victim),
                                                  fault_after=2.0))

        def exposed(e: Episode) -> bool:
            return shard_index(e.sid, settings.num_shards) in lost

        summary = summarize(episodes, fault_at, exposed)
        with httpx.Client(base_url=url, timeout=60) as late:
            summary["closed_ids_still_fenced"] = all(
                late.post("/seed_session", json=_seed(sid)).status_code == 409 for sid in closed)
        summary.update({"placement": placement, "shards_lost": sorted(lost), "expected_share": len(lost) / 4,
                        "exposed_episodes_not_clean": sum(1 for e in episodes if exposed(e) and not e.clean),
                        "unexposed_episodes_not_clean": sum(1 for e in episodes if not exposed(e) and not e.clean
                                                            and e.started > fault_at + 30)})
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
        summary["actors_left_after_stop"] = len(_actor_nodes(app))
        summary["cluster_up_after_stop"] = ray.is_initialized() and len(ray.nodes()) > 0
        return summary
    finally:
        if server is not None and server.poll() is None:
            server.kill()
        ray.shutdown()
        cluster.shutdown()
        stop_haproxy()


def serve_shutdown() -> dict:
    """Detached actors outlive `serve delete`; the app registers them with Serve's controller, which kills
    registered actors on `serve shutdown` (as it does Ray Serve's own per-app actors)."""
    import ray
    from ray import serve

    from deployments.corpus.generate import embedded_corpus_dir
    from deployments.ingress import app_actors
    from deployments.local import deploy, start_ray_and_serve, stop_ray_and_serve
    from deployments.settings import Settings

    url = start_ray_and_serve()
    settings = Settings(app_name="shutdown", num_shards=2, corpus_dir=embedded_corpus_dir())
    try:
        deploy(settings, url, replicas=1)
        app = app_actors(settings)
        before = len(_actor_nodes(app))
        serve.shutdown()
        deadline = time.monotonic() + 60
        while (after := len(_actor_nodes(app))) and time.monotonic() < deadline:
            time.sleep(0.5)
        return {"actors_before": before, "actors_after_serve_shutdown": after, "ray_up": ray.is_initialized()}
    finally:
        stop_ray_and_serve()


def _serve_config(args: dict, port: int) -> Path:
    import tempfile

    import yaml

    config = {"proxy_location": "HeadOnly", "http_options": {"host": "127.0.0.1", "port": port},
              "applications": [{"name": args["app_name"], "route_prefix": "/",
                                "import_path": "deployments.builder:build_app", "args": args,
                                "deployments": [{"name": "FinsecIngress", "num_replicas": 2,
                                                 "ray_actor_options": {"num_cpus": 0,
                                                                       "resources": {"finsec_ingress": 0.01}}}]}]}
    path = Path(tempfile.mkdtemp(prefix="node-loss-")) / "serve.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _wait_for_url(server: subprocess.Popen, timeout: float = 180.0) -> str:
    deadline = time.monotonic() + timeout
    for line in server.stdout:
        if "is up at " in line:
            return line.split("is up at ", 1)[1].split()[0]
        if time.monotonic() > deadline:
            break
    raise RuntimeError(f"finsec serve did not come up (exit {server.poll()})")


def _actor_nodes(app) -> dict[str, str]:
    """Each of the app's named actors -> the node it runs on."""
    import ray

    found = {}
    for entry in ray.util.list_named_actors(all_namespaces=True):
        if entry["namespace"] == app.namespace:
            try:
                handle = ray.get_actor(entry["name"], namespace=app.namespace)
                found[entry["name"]] = ray.get(handle.node_id.remote(), timeout=30)
            except (ValueError, ray.exceptions.RayError):  # killed meanwhile
                pass
    return found


def _seed(sid: str) -> dict:
    return {"resources_session_id": sid, "episode_id": {"rollout_id": "closed", "attempt": 0},
            "task_id": {"taskset": "faults", "task_id": sid}, "task_data": {}}


def _closed_ids(url: str, n: int) -> list[str]:
    ids = [f"resources-session-{uuid.uuid4().hex}" for _ in range(n)]
    with httpx.Client(base_url=url, timeout=60) as client:
        for sid in ids:
            client.post("/seed_session", json=_seed(sid))
            client.post("/close_session", json={"resources_session_id": sid,
                                                "episode_id": {"rollout_id": "closed", "attempt": 0}})
    return ids


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=["node-loss", "serve-shutdown"])
    parser.add_argument("--seconds", type=float, default=12.0)
    options = parser.parse_args()
    summary = node_loss(options.seconds) if options.scenario == "node-loss" else serve_shutdown()
    print("SUMMARY " + json.dumps(summary))


if __name__ == "__main__":
    main()
