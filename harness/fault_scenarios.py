"""Fault scenarios on real local Ray clusters: rollouts keep running while a process or a whole node dies,
and every episode is checked afterwards. Used by the fault tests and by `bench/faults.py` (the report).

Each scenario returns a summary: episodes run, episodes the fault reached, how many of those were masked,
unmasked wrong rewards, and the recovery time (from the fault to the first clean episode that needed what was
killed). The scripted answer is always right and grading never reads session state, so a lost session scored
unmasked would look right: each episode therefore records what shows whether its session was lost when its
verify arrived (the shard life that seeded it, from the seed's cookie; whether a stateful tool answered 404
session_lost; when its verify was sent), and `lost_scored_unmasked` counts lost sessions whose verify was not
masked, whatever the reward (must be 0). Half the clients pause between their last tool call and verify, as a
policy does while it writes its answer, so a kill often lands where only the verify can see the loss.

HTTP 500s are split by who answered: the app (must be 0) or HAProxy's own page for a backend that died
mid-request (`ingress_error_page`), which only a killed ingress replica may cause.

    python -m harness.fault_scenarios node-loss [--seconds 12]    # prints the summary as JSON
    python -m harness.fault_scenarios serve-shutdown
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from finsec.corpus.generate import questions
from finsec.net.ports import free_port
from session_store import shard_index

TASK = questions()[0]
PROMPT = "total net revenues {{doc}}"
THINK_SECONDS = 0.25  # what half the clients wait between their last tool call and verify


@dataclass(frozen=True)
class Call:
    path: str
    status: int  # 0: no reply (a dropped connection)
    sent: float
    done: float
    ingress_page: bool = False  # HAProxy's own 500 page, not an answer of the app


@dataclass
class Episode:
    sid: str
    started: float
    ended: float = 0.0
    statuses: list[int] = field(default_factory=list)  # each step's last status
    calls: list[Call] = field(default_factory=list)  # every attempt of every step
    row: dict | None = None
    retried: int = 0  # requests repeated after a 5xx or a dropped connection
    incarnation: str | None = None  # the shard life that seeded the session (the seed reply's cookie)
    tool_lost: bool = False  # a stateful tool answered 404 session_lost

    @property
    def clean(self) -> bool:
        return self.row is not None and self.statuses[:4] == [200] * 4 and self.row["mask_sample"] is False

    @property
    def faulted(self) -> bool:
        return any(s not in (200,) for s in self.statuses)

    def last(self, path: str) -> Call | None:
        return next((c for c in reversed(self.calls) if c.path == path), None)


def ingress_error_page(response: httpx.Response) -> bool:
    """HAProxy's reply for a backend that died mid-request. Serve's HAProxy config maps 502, 503 and 504 to one
    fixed page (ray/serve/_private/haproxy.py writes it as 500.http): status 500, `text/plain`, "Internal Server
    Error", and no session cookie. No answer of the app has that shape: its 5xx are JSON 503s with a cookie,
    Starlette's own 500 is `text/plain; charset=utf-8` and a Serve replica's 500 has no content type."""
    return (
        response.status_code == 500
        and response.headers.get("content-type") == "text/plain"
        and response.content == b"Internal Server Error"
        and "set-cookie" not in response.headers
    )


def seeded_by(response: httpx.Response) -> str | None:
    """The shard incarnation named by the session cookie a seed reply sets (harness/bodies.py cookie_claims reads
    one cookie by name; the fault clients do not know the app's cookie name)."""
    for header in response.headers.get_list("set-cookie"):
        payload = header.partition("=")[2].split(";")[0].split(".")[0]
        try:
            claims = json.loads(base64.b64decode(payload + "=" * (-len(payload) % 4)))
        except ValueError:
            continue
        if isinstance(claims, dict) and "session_id" in claims:
            return claims.get("shard_incarnation")
    return None


def new_sid() -> str:
    return f"resources-session-{uuid.uuid4().hex}"


async def episode(client: httpx.AsyncClient, retry_5xx: bool, think: float = 0.0, sid: str | None = None) -> Episode:
    """One episode as single_agent_turn drives it. With `retry_5xx`, a 5xx or a dropped connection is retried,
    as a rollout driver may: every route is safe to repeat by the contract. `think` seconds pass between the
    last tool call and verify."""
    sid = sid or new_sid()
    ep = {"rollout_id": sid[-10:], "attempt": 0}
    record = Episode(sid, time.monotonic())
    answer = {
        "type": "function_call",
        "name": "submit_final_result",
        "call_id": "c",
        "arguments": json.dumps({"final_result": TASK["expected_answer"]}),
    }
    steps = [
        (
            "/seed_session",
            {
                "resources_session_id": sid,
                "episode_id": ep,
                "task_id": {"taskset": "faults", "task_id": sid},
                "task_data": {},
            },
        ),
        ("/parse_html_page", {"url": TASK["url"], "key": "doc"}),
        ("/retrieve_information", {"prompt": PROMPT}),
        (
            "/verify",
            {
                "responses_create_params": {"input": [{"role": "user", "content": TASK["question"]}]},
                "response": {"output": [answer]},
                "question": TASK["question"],
                "expected_answer": TASK["expected_answer"],
            },
        ),
        ("/close_session", {"resources_session_id": sid, "episode_id": ep}),
    ]
    for path, body in steps:
        if path == "/verify" and think:
            await asyncio.sleep(think)
        for _attempt in range(40 if retry_5xx else 1):
            sent = time.monotonic()
            try:
                response = await client.post(path, json=body)
                status = response.status_code
            except httpx.HTTPError:
                response, status = None, 0
            record.calls.append(
                Call(path, status, sent, time.monotonic(), response is not None and ingress_error_page(response))
            )
            if status < 500 and status != 0 or not retry_5xx:
                break
            record.retried += 1
            await asyncio.sleep(0.25)
        record.statuses.append(status)
        if path == "/seed_session" and status == 200:
            record.incarnation = seeded_by(response)
        if path in ("/parse_html_page", "/retrieve_information") and status == 404:
            record.tool_lost |= response.json().get("failure_kind") == "session_lost"
        if path == "/verify" and status == 200:
            record.row = response.json()
        if path == "/seed_session" and status != 200:
            break
    record.ended = time.monotonic()
    return record


@dataclass(frozen=True)
class Fault:
    """When the fault ran (monotonic: `began` before it, `ended` once it returned; a fault that kills processes
    returns once they are gone, `wait_gone`) and the shards whose process it killed. Nothing a killed process
    held answers after `ended` (`grace` is a margin for the clock reads around it)."""

    began: float
    ended: float
    shards: frozenset[int] = frozenset()
    grace: float = 0.05


async def rollouts(
    url: str,
    workers: int,
    seconds: float,
    fault,
    fault_after: float,
    retry_5xx: bool = False,
    think: float = THINK_SECONDS,
    exposed: Callable[[str], bool] | None = None,
) -> tuple[list[Episode], Fault]:
    """Episodes from `workers` concurrent clients for `seconds` (every other client thinks `think` seconds before
    verify); `fault()` runs (in a thread) after `fault_after` seconds and, given `exposed` (whether the fault
    reaches a session ID), once an episode it reaches is in flight. Returns the episodes and when the fault ran
    (its `shards` are the caller's to fill in)."""
    done: list[Episode] = []
    stop_at = time.monotonic() + seconds
    window: list[float] = []
    in_flight: set[str] = set()

    async def worker(n: int):
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            while time.monotonic() < stop_at:
                client.cookies.clear()
                sid = new_sid()
                in_flight.add(sid)  # before the episode's start time is taken: no await between
                done.append(await episode(client, retry_5xx, think if n % 2 else 0.0, sid))
                in_flight.discard(sid)

    async def inject():
        await asyncio.sleep(fault_after)
        # Otherwise every session in flight may sit where the fault does not reach (rarely, but a test of what
        # the fault does to open sessions then has none)
        while exposed is not None and not any(map(exposed, in_flight)) and time.monotonic() < stop_at:
            await asyncio.sleep(0.005)
        window.append(time.monotonic())
        await asyncio.to_thread(fault)
        window.append(time.monotonic())

    await asyncio.gather(inject(), *(worker(n) for n in range(workers)))
    return done, Fault(*window)


def lost_at_verify(e: Episode, fault: Fault, shard: int, old: set[str], reborn: float) -> bool | None:
    """Whether the session was gone when the episode's verify reached the server. True: a tool said so (404
    session_lost), or the life of the shard that seeded it (the seed cookie's incarnation) died before the verify
    was sent. False: not seeded by a life that died, or verified before the fault began. None: the verify was in
    flight while the shard died, so either answer is right. `reborn`: when a later life of the shard first
    answered (the old one was surely dead by then)."""
    if e.tool_lost:
        return True
    if shard not in fault.shards or e.incarnation is None or e.incarnation not in old:
        return False
    verify = e.last("/verify")
    if verify is None or verify.done < fault.began:
        return False
    if verify.sent > min(fault.ended + fault.grace, reborn):
        return True
    return None


def losses(
    episodes: list[Episode], fault: Fault, shard_of: Callable[[Episode], int], old: set[str] | None = None
) -> dict[int, bool | None]:
    """`lost_at_verify` of every episode, by id(). `old`: the incarnations of the killed shards' lives before the
    fault; by default those that answered seeds before it began."""
    if old is None:
        old = {
            e.incarnation
            for e in episodes
            if e.incarnation and shard_of(e) in fault.shards and e.last("/seed_session").done < fault.began
        }
    reborn = {
        k: min(
            (
                e.last("/seed_session").done
                for e in episodes
                if shard_of(e) == k and e.incarnation and e.incarnation not in old
            ),
            default=float("inf"),
        )
        for k in fault.shards
    }
    return {id(e): lost_at_verify(e, fault, shard_of(e), old, reborn.get(shard_of(e), float("inf"))) for e in episodes}


def summarize(
    episodes: list[Episode], fault: Fault, hit, shard_of: Callable[[Episode], int], durable: bool = False
) -> dict:
    """`hit(episode)`: whether the fault could reach this episode (its shard died, its node went away).

    `durable`: the app restores sessions (durable_sessions), so a session whose seeding shard life died is not lost
    by that alone. It is *restored* when its verify was scored unmasked and no tool said it was lost; it is lost
    when a tool answered 404 session_lost or its verify was masked session_lost, and a lost one must never be
    scored unmasked: a tool said it was gone, and its verify scored anyway."""
    fault_at = fault.began
    spanning = [e for e in episodes if e.started <= fault_at + 60 and e.ended >= fault_at - 5]
    reached = [e for e in episodes if e.faulted or (e.row is not None and e.row["mask_sample"])]
    wrong = [e for e in episodes if e.row is not None and not e.row["mask_sample"] and e.row["reward"] != 1.0]
    after = sorted((e for e in episodes if e.started >= fault_at and hit(e) and e.clean), key=lambda e: e.ended)
    lost = losses(episodes, fault, shard_of)
    verified = [e for e in episodes if e.row is not None]
    calls = [c for e in episodes for c in e.calls]
    restored = 0
    if durable:
        dead_life = {id(e) for e in verified if lost[id(e)]}
        restored = sum(1 for e in verified if id(e) in dead_life and not e.tool_lost and not e.row["mask_sample"])
        lost = {
            id(e): e.tool_lost
            or (e.row is not None and e.row["mask_sample"] and e.row["failure_kind"] == "session_lost")
            for e in episodes
        }
    return {
        "episodes": len(episodes),
        "episodes_around_the_fault": len(spanning),
        "exposed_at_the_fault": sum(1 for e in episodes if e.started <= fault_at <= e.ended and hit(e)),
        "episodes_the_fault_reached": len(reached),
        "reached_but_not_exposed": sum(1 for e in reached if not hit(e)),
        "masked": sum(1 for e in verified if e.row["mask_sample"]),
        "unmasked_wrong_rewards": len(wrong),
        "lost_sessions_verified": sum(1 for e in verified if lost[id(e)]),
        "lost_seen_only_by_verify": sum(1 for e in verified if lost[id(e)] and not e.tool_lost),
        "lost_scored_unmasked": sum(1 for e in verified if lost[id(e)] and not e.row["mask_sample"]),
        "verified_while_dying": sum(1 for e in verified if lost[id(e)] is None),
        "masked_not_lost": sum(1 for e in verified if lost[id(e)] is False and e.row["mask_sample"]),
        "restored": restored,
        "server_errors_500": sum(c.status == 500 for c in calls),  # every attempt, retried ones too
        "app_500s": sum(c.status == 500 and not c.ingress_page for c in calls),
        "ingress_500_pages": sum(c.ingress_page for c in calls),
        "requests_retried": sum(e.retried for e in episodes),
        "statuses": sorted({c.status for c in calls}),
        "recovery_seconds": round(after[0].ended - fault_at, 2) if after else None,
    }


def failures(summary: dict) -> list[str]:
    """What a scenario must never show, by name; empty when it passed."""
    checks = {
        "lost_scored_unmasked": 0,
        "unmasked_wrong_rewards": 0,
        "app_500s": 0,
        "reached_but_not_exposed": 0,
        "closed_ids_seeded_again": 0,
    }
    return [
        f"{name} = {summary[name]} (must be {want})" for name, want in checks.items() if summary.get(name, want) != want
    ]


# ----- the mark store forgets: Redis comes back empty, a shard dies with it ----------------------------------


def store_forgets(base_url: str, seconds: float = 12.0, workers: int = 16, acknowledge_after: float = 3.0) -> dict:
    """Rollouts against an app whose marks are in Redis (4 shards, 2 replicas, at /forgets on a running Serve);
    then shard 1's process is SIGKILLed, and the Redis restarts without persistence, as empty, before the shard's
    next life reads it. The app
    trusts the Redis's configuration (as for one that persists "another way"), so only its marker can tell.
    While the loss stands, every ID closed before the fault is seeded again (each must be refused); then an
    operator acknowledges it. Lost sessions are shard 1's old life's, as in a shard SIGKILL; the other shards
    hold their sessions in memory and serve them."""
    import ray

    from deployments.ingress import app_actors
    from deployments.local import QUIET_LOGS, deploy_application, undeploy_application
    from deployments.mark_store import durable_records
    from deployments.settings import Settings
    from finsec.corpus.generate import embedded_corpus_dir
    from harness.redis_server import running_redis

    port = free_port()
    redis = running_redis(persist=False, port=port)
    redis_url = redis.__enter__().url
    settings = Settings(
        app_name="faults-store",
        num_shards=4,
        corpus_dir=embedded_corpus_dir(),
        reaper_interval_seconds=1.0,
        mark_store_url=redis_url,
        mark_store_durability_check=False,
    )
    late: list[int] = []
    try:
        url = deploy_application(
            settings,
            base_url,
            name=settings.app_name,
            route_prefix="/forgets",
            options={"num_replicas": 2, "ray_actor_options": {"num_cpus": 0}, "logging_config": QUIET_LOGS},
        )
        closed = _closed_ids(url, 40)
        app = app_actors(settings)
        shard = ray.get_actor(
            next(
                a["name"]
                for a in ray.util.list_named_actors(all_namespaces=True)
                if a["namespace"] == app.namespace and a["name"].startswith("shard-1-of-4.")
            ),
            namespace=app.namespace,
        )

        def fault() -> None:  # the shard dies holding open sessions; Redis comes back empty before it does
            nonlocal redis
            pid = ray.get(shard.pid.remote(), timeout=30)
            os.kill(pid, signal.SIGKILL)
            redis.__exit__(None, None, None)
            redis = running_redis(persist=False, port=port)
            redis.__enter__()
            wait_gone([pid])
            _wait_answering(url)
            with httpx.Client(base_url=url, timeout=60) as client:
                late.extend(client.post("/seed_session", json=_seed(sid)).status_code for sid in closed)
            time.sleep(acknowledge_after)
            durable_records(settings).acknowledge_loss()  # `finsec store acknowledge-loss`

        # Clients retry 5xx, as a driver may: a verify of a lost session then reaches the shard's next life.
        episodes, ran = asyncio.run(rollouts(url, workers, seconds, fault, fault_after=3.0, retry_5xx=True))
        killed = Fault(ran.began, ran.ended, frozenset({1}))

        def shard_of(e: Episode) -> int:
            return shard_index(e.sid, settings.num_shards)

        summary = summarize(episodes, killed, lambda e: True, shard_of)
        refused = [
            c
            for e in episodes
            for c in e.calls
            if c.path == "/seed_session" and c.status == 503 and ran.began <= c.sent <= ran.ended
        ]
        return {
            **summary,
            "closed_ids_tried_while_lost": len(late),
            "closed_ids_seeded_again": sum(status == 200 for status in late),
            "closed_ids_refused_with": sorted(set(late)),
            "seeds_refused_until_acknowledged": len(refused),
        }
    finally:
        undeploy_application(settings, settings.app_name, purge=True)
        redis.__exit__(None, None, None)


def _wait_answering(url: str, timeout: float = 60.0) -> None:
    """Until every shard answers again (a killed shard restarts in ~2 s): /status asks each one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/status", timeout=10).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the app's shards did not answer again")


# ----- node loss: a three-node cluster, the state actors kept off the head ----------------------------------


def node_loss(seconds: float = 12.0) -> dict:
    """Head node (controller, HAProxy, ingress replicas) plus two state nodes (shards, reaper, document store,
    limiter: the `finsec_state` resource). The app is deployed from a serve config by `finsec serve --address`,
    as on a real cluster, told of two state nodes while one has joined: it must place no shard until the second
    joins, then two on each. Rollouts run; one state node holding shards is removed; then `finsec serve` is
    stopped, which must remove the app's actors and leave the cluster up."""
    from deployments.local import LOCAL_RAY_ENV, ingress_env, stop_haproxy

    os.environ.update(LOCAL_RAY_ENV)
    os.environ.update(ingress_env("haproxy"))
    import ray
    from ray import serve
    from ray.cluster_utils import Cluster

    from deployments.ingress import app_actors
    from deployments.settings import Settings
    from finsec.corpus.generate import embedded_corpus_dir

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 2, "gcs_server_port": free_port(), "resources": {"finsec_ingress": 10}},
    )
    state = [cluster.add_node(num_cpus=0, resources={"finsec_state": 10})]
    server = None
    try:
        ray.init(address=cluster.address, logging_level="warning")
        port = free_port()
        # One HAProxy, on the head: the three "nodes" share this machine's ports.
        serve.start(http_options={"host": "127.0.0.1", "port": port}, proxy_location="HeadOnly")
        # Restore off: this scenario's accounting tells lost sessions by the shard life that seeded them, which
        # durable sessions outlive (tests/integration/test_durable_sessions_http.py covers those).
        args = {
            "app_name": "node-loss",
            "num_shards": 4,
            "corpus_dir": str(embedded_corpus_dir()),
            "reaper_interval_seconds": 0.5,
            "state_actor_resources": {"finsec_state": 0.01},
            "store_call_timeout_seconds": 5.0,
            "durable_sessions": False,
            "state_nodes": 2,
        }
        config = _serve_config(args, port)
        server = subprocess.Popen(
            [sys.executable, "-m", "deployments.cli", "serve", str(config), "--address", cluster.address],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        settings = Settings(**args)
        app = app_actors(settings)
        # A replica creates the limiter first, then waits for the state nodes before it creates any shard.
        _wait_for_actor(app, "edgar-limiter.")
        time.sleep(3)
        shards_before = sorted(n for n in _actor_nodes(app) if n.startswith("shard-"))
        state.append(cluster.add_node(num_cpus=0, resources={"finsec_state": 10}))
        url = _wait_for_url(server)
        nodes = _actor_nodes(app)
        head = cluster.head_node.node_id
        shard_nodes = [node for n, node in nodes.items() if n.startswith("shard-")]
        placement = {
            "on_head": sorted(n for n, node in nodes.items() if node == head),
            "state_nodes": sorted({node for node in nodes.values()} - {head}),
            "shards_before_the_second_node": shards_before,
            "shards_per_state_node": sorted(shard_nodes.count(node.node_id) for node in state),
            "proxies_per_state_node": sorted(_replica_nodes("StateNodeProxy").count(node.node_id) for node in state),
        }
        shards = {n: node for n, node in nodes.items() if n.startswith("shard-")}
        victim = max(state, key=lambda node: sum(v == node.node_id for v in shards.values()))
        lost = {int(n.split("-")[1]) for n, node in shards.items() if node == victim.node_id}

        doomed = [
            ray.get(ray.get_actor(n, namespace=app.namespace).pid.remote(), timeout=30)
            for n, node in shards.items()
            if node == victim.node_id
        ]

        def remove_victim() -> None:  # over once the shards' processes are gone, not only the node's raylet
            cluster.remove_node(victim)
            wait_gone(doomed)

        closed = _closed_ids(url, 8)
        episodes, fault = asyncio.run(
            rollouts(
                url,
                8,
                seconds,
                remove_victim,
                fault_after=2.0,
                exposed=lambda sid: shard_index(sid, settings.num_shards) in lost,
            )
        )
        fault = Fault(fault.began, fault.ended, frozenset(lost))

        def shard_of(e: Episode) -> int:
            return shard_index(e.sid, settings.num_shards)

        def exposed(e: Episode) -> bool:
            return shard_of(e) in lost

        summary = summarize(episodes, fault, exposed, shard_of)
        with httpx.Client(base_url=url, timeout=60) as late:
            summary["closed_ids_still_fenced"] = all(
                late.post("/seed_session", json=_seed(sid)).status_code == 409 for sid in closed
            )
        summary.update(
            {
                "placement": placement,
                "shards_lost": sorted(lost),
                "expected_share": len(lost) / 4,
                "exposed_episodes_not_clean": sum(1 for e in episodes if exposed(e) and not e.clean),
            }
        )
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

    from deployments.ingress import app_actors
    from deployments.local import deploy, start_ray_and_serve, stop_ray_and_serve
    from deployments.settings import Settings
    from finsec.corpus.generate import embedded_corpus_dir

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

    config = {
        "proxy_location": "HeadOnly",
        "http_options": {"host": "127.0.0.1", "port": port},
        "applications": [
            {
                "name": args["app_name"],
                "route_prefix": "/",
                "import_path": "deployments.builder:build_app",
                "args": args,
                "deployments": [
                    {
                        "name": "FinsecIngress",
                        "num_replicas": 2,
                        "ray_actor_options": {"num_cpus": 0, "resources": {"finsec_ingress": 0.01}},
                    }
                ],
            }
        ],
    }
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


def _wait_for_actor(app, prefix: str, timeout: float = 180.0) -> None:
    import ray

    deadline = time.monotonic() + timeout
    while not any(
        a["namespace"] == app.namespace and a["name"].startswith(prefix)
        for a in ray.util.list_named_actors(all_namespaces=True)
    ):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no actor {prefix}* after {timeout:.0f} s")
        time.sleep(0.5)


def _replica_nodes(deployment: str) -> list[str]:
    """The node of each live replica of this Serve deployment."""
    from ray.util.state import list_actors

    return [
        a.node_id
        for a in list_actors(filters=[("state", "=", "ALIVE")], limit=10_000)
        if a.class_name.endswith(f":{deployment}")
    ]


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


def wait_gone(pids: list[int], timeout: float = 30.0) -> None:
    """Until none of these processes runs any more (exited, or a zombie nobody reaped yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                alive.append(pid)
        if not alive:
            return
        time.sleep(0.01)
    raise RuntimeError(f"processes {pids} still run {timeout:.0f} s after they were killed")


def _seed(sid: str) -> dict:
    return {
        "resources_session_id": sid,
        "episode_id": {"rollout_id": "closed", "attempt": 0},
        "task_id": {"taskset": "faults", "task_id": sid},
        "task_data": {},
    }


def _closed_ids(url: str, n: int) -> list[str]:
    ids = [f"resources-session-{uuid.uuid4().hex}" for _ in range(n)]
    with httpx.Client(base_url=url, timeout=60) as client:
        for sid in ids:
            client.post("/seed_session", json=_seed(sid))
            client.post(
                "/close_session",
                json={"resources_session_id": sid, "episode_id": {"rollout_id": "closed", "attempt": 0}},
            )
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=["node-loss", "serve-shutdown"])
    parser.add_argument("--seconds", type=float, default=12.0)
    options = parser.parse_args()
    summary = node_loss(options.seconds) if options.scenario == "node-loss" else serve_shutdown()
    print("SUMMARY " + json.dumps(summary))


if __name__ == "__main__":
    main()
