"""Benchmark: what a process per shard costs a rollout as the shards grow, by what the shards do.

    .venv/bin/python bench/shard_fanout.py      # ~11 minutes; needs redis-server

bench/results/serve_scaling.md finds the Serve app spending 1.2-1.5x the CPU a rollout at 16 shards as at 2 on
this machine, where issue 18 asks for within 15%, and bench/results/shard_call.md finds a call to a process that
slept costing that process several times a call to one that did not. This splits the growth: how much any design
pays that keeps a process per shard and a call per batch, and how much the shard's own work a call adds.

Two stand-in replicas (processes, under SCHED_BATCH as `finsec serve` runs the cluster) each keep 32 rollouts in
flight, concurrency 64 as in serve_scaling.md. A rollout replays one recorded rollout's shard operations on a new
session ID and a shard picked at random; before each operation the replica spends a fixed amount of CPU (WORK_MS,
about a real replica's CPU a rollout over six), then sends it through the app's own coalescer
(session_store/batching.py) and direct transport (session_store.direct.ShardChannel). The shards are
bench/shard_call.py's plain processes (a bare transport answering at once, or the app's ShardService with its marks
in memory or in a real redis-server), or the app's own shard actor in a Ray worker, its marks in Redis or in Ray's
GCS. CPU per rollout: every process's (schedstat) over the window, the mark store's included, over the rollouts
that ended in it. Shard kinds and counts in interleaved rounds, fresh processes each time; median and
range. Writes bench/results/shard_fanout.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from _common import RESULTS, machine, table, write_report
from shard_call import ShardProcess, process_cpu, record_batches

# bench/shard_call.py's plain processes, then the app's own shard actor as app_actors.py creates it, in a Ray worker
KINDS = ("transport", "shard, memory marks", "shard, Redis marks", "shard actor, Redis marks", "shard actor, GCS marks")
SHARDS = (2, 16)
REPLICAS = 2
IN_FLIGHT = 32  # rollouts per replica
WORK_MS = 0.9  # replica CPU a step: ~5.4 ms a rollout, the app's replicas' 5.2-6.3 (serve_scaling.md)
WARMUP_S, WINDOW_S = 3.0, 10.0
ROUNDS = 3


# ----- a stand-in replica (its own process) ---------------------------------------------------------------------


def work(seconds: float) -> None:
    """Spend `seconds` of this thread's CPU, whatever else runs on the core meanwhile."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


async def replica(plan: dict) -> dict:
    from session_store.batching import Coalescer
    from session_store.core import Claims, Seeded
    from session_store.direct import ShardChannel

    endpoints, rollouts_seen = plan["endpoints"], plan["rollouts"]
    start_at, end_at = plan["start_at"], plan["end_at"]
    counted = {"rollouts": 0, "calls": 0, "operations": 0, "refused": 0}
    refusals: list[str] = []

    def inside() -> bool:
        return start_at <= time.time() < end_at

    def channel(endpoint) -> ShardChannel:
        async def resolve():
            return endpoint

        return ShardChannel(resolve, timeout=10, what="shard")

    channels = [channel(endpoint) for endpoint in endpoints]

    async def send(shard: int, batch: list) -> list:
        if inside():
            counted["calls"] += 1
            counted["operations"] += len(batch)
        return await channels[shard].send(batch)

    coalescers = [Coalescer(partial(send, shard)) for shard in range(len(endpoints))]

    def for_session(op: tuple, sid: str, incarnation: str | None) -> tuple:
        """A recorded operation, on a new session ID and with the claims of the shard life that seeded it."""
        name, args = op
        rest = tuple(
            Claims(incarnation, arg.kind) if isinstance(arg, Claims) and arg.incarnation else arg for arg in args[1:]
        )
        return name, (sid, *rest)

    async def rollouts(seed: int) -> None:
        pick, n = random.Random(seed), 0
        while time.time() < end_at:
            shard, recorded, incarnation = pick.randrange(len(endpoints)), pick.choice(rollouts_seen), None
            sid, n = f"resources-session-fanout-{seed}-{n}", n + 1
            for op in recorded:
                work(WORK_MS / 1000)
                ok, value = await coalescers[shard].submit(for_session(op, sid, incarnation))
                if isinstance(value, Seeded):
                    incarnation = value.incarnation
                if not ok:  # the stand-in must drive the shard as the app does, or it measures error paths
                    counted["refused"] += 1
                    refusals.append(f"{op[0]}: {value!r}"[:300])
            if inside():
                counted["rollouts"] += 1

    await asyncio.gather(*(rollouts(plan["seed"] * 1000 + n) for n in range(IN_FLIGHT)))
    return {**counted, "refusals": refusals[:3]}


# ----- the shards ----------------------------------------------------------------------------------------------


class ShardActor:
    """The app's shard actor (session_store.ray_actors.SessionShardActor) with app_actors.py's options, but owned
    by this script rather than detached, and settled as the reaper settles it once the app runs."""

    def __init__(self, kind: str, redis_url: str):
        import uuid

        import ray

        from session_store.app_actors import ACTOR_OPTIONS
        from session_store.ray_actors import SessionShardActor
        from session_store.shard import ShardConfig

        options = {name: value for name, value in ACTOR_OPTIONS.items() if name not in ("lifetime", "get_if_exists")}
        url = redis_url if kind.endswith("Redis marks") else None
        self._actor = SessionShardActor.options(**options).remote(
            ShardConfig(600), f"fanout-{uuid.uuid4().hex}", (0, 1), url
        )
        self.endpoint = ray.get(self._actor.endpoint.remote())
        self.pid = ray.get(self._actor.pid.remote())
        ray.get(self._actor.settle.remote())

    def stop(self) -> None:
        import ray

        ray.kill(self._actor)


def mark_store_pid(kind: str, redis) -> int | None:
    """The process that keeps this kind's marks, whose CPU is the shards' too: redis-server, or Ray's GCS."""
    if kind.endswith("Redis marks"):
        return redis.process.pid
    if kind.endswith("GCS marks"):
        import ray

        return ray._private.worker._global_node.all_processes["gcs_server"][0].process.pid
    return None


# ----- one measurement ------------------------------------------------------------------------------------------


def measure_once(kind: str, shards: int, rollouts_seen: list, folder: str, seed: int, redis) -> dict:
    from deployments.cpu_policy import batch_scheduled

    with batch_scheduled():
        servers = [
            (ShardActor if kind.startswith("shard actor") else ShardProcess)(kind, redis.url) for _ in range(shards)
        ]
    replicas = []
    try:
        start_at = time.time() + 2.0 + WARMUP_S  # the replicas' start-up, then a warm-up
        end_at = start_at + WINDOW_S
        for n in range(REPLICAS):
            plan = {
                "endpoints": [server.endpoint for server in servers],
                "rollouts": rollouts_seen,
                "start_at": start_at,
                "end_at": end_at,
                "seed": seed * 10 + n,
            }
            plan_file, out_file = os.path.join(folder, f"plan-{n}"), os.path.join(folder, f"out-{n}.json")
            Path(plan_file).write_bytes(pickle.dumps(plan))
            with batch_scheduled():
                replicas.append(
                    (subprocess.Popen([sys.executable, __file__, "--replica", plan_file, out_file]), out_file)
                )
        pids = {"replicas": [process.pid for process, _ in replicas], "shards": [server.pid for server in servers]}
        if (marks := mark_store_pid(kind, redis)) is not None:
            pids["mark store"] = [marks]
        time.sleep(max(0.0, start_at - time.time()))
        before = {role: sum(map(process_cpu, group)) for role, group in pids.items()}
        time.sleep(max(0.0, end_at - time.time()))
        spent = {role: sum(map(process_cpu, group)) - before[role] for role, group in pids.items()}
        counted = {"rollouts": 0, "calls": 0, "operations": 0, "refused": 0, "refusals": []}
        for process, out_file in replicas:
            if process.wait(timeout=60) != 0:
                raise RuntimeError(f"a stand-in replica failed (exit {process.returncode})")
            for key, value in json.loads(Path(out_file).read_text()).items():
                counted[key] += value
    finally:
        for process, _ in replicas:
            if process.poll() is None:
                process.kill()
        for server in servers:
            server.stop()
    if counted["refused"]:
        raise RuntimeError(f"{kind}: the shards refused {counted['refused']} operations: {counted['refusals']}")
    rollouts = counted["rollouts"]
    return {
        "kind": kind,
        "shards": shards,
        "rollouts_per_s": rollouts / WINDOW_S,
        "cpu_ms_per_rollout": {role: 1000 * seconds / rollouts for role, seconds in spent.items()},
        "operations_per_rollout": counted["operations"] / rollouts,
        "operations_per_call": counted["operations"] / max(1, counted["calls"]),
    }


def measure(rollouts_seen: list, redis) -> list[dict]:
    runs = [(kind, shards) for kind in KINDS for shards in SHARDS]
    rows = []
    with tempfile.TemporaryDirectory(prefix="shard-fanout-") as folder:
        for round_ in range(ROUNDS):
            for kind, shards in runs if round_ % 2 == 0 else runs[::-1]:
                row = {"round": round_ + 1, **measure_once(kind, shards, rollouts_seen, folder, round_, redis)}
                rows.append(row)
                print(
                    f"round {round_ + 1}, {kind}, {shards} shards: {row['rollouts_per_s']:.0f} rollouts/s, "
                    f"{sum(row['cpu_ms_per_rollout'].values()):.2f} ms of CPU a rollout, "
                    f"{row['operations_per_call']:.1f} operations a call",
                    flush=True,
                )
    return rows


# ----- the report -----------------------------------------------------------------------------------------------


def spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def app_growth() -> tuple[str, float, float] | None:
    """The Serve app's scaling table as it reads now (serve_scaling.json): when it ran, and its CPU a rollout over
    the direct transport at 2 replicas x 2 shards and at 2 x 16 (medians over its rounds)."""
    path = RESULTS / "serve_scaling.json"
    if not path.exists():
        return None
    scaling = json.loads(path.read_text())
    totals: dict[tuple[int, int], list[float]] = {}  # a value per round
    for r in scaling["rows"]:
        if r["config"] == "serve-haproxy":
            totals.setdefault((r["replicas"], r["shards"]), []).append(sum(r["cpu_ms_per_rollout"].values()))
    if (2, 2) not in totals or (2, 16) not in totals:
        return None
    return (scaling["machine"].rsplit("; ", 1)[-1], statistics.median(totals[2, 2]), statistics.median(totals[2, 16]))


def report(data: dict) -> None:
    rows, few, many = data["rows"], SHARDS[0], SHARDS[-1]

    def total(r: dict) -> float:
        return sum(r["cpu_ms_per_rollout"].values())

    def at(r: dict, shards: int) -> dict:  # the same round's and kind's run at another shard count
        return next(o for o in rows if (o["round"], o["kind"], o["shards"]) == (r["round"], r["kind"], shards))

    def grown(kind: str) -> list[float]:  # within each round
        return [total(r) - total(at(r, few)) for r in rows if r["kind"] == kind and r["shards"] == many]

    def cell(kind: str, shards: int, value, digits: int = 2) -> str:
        return spread([value(r) for r in rows if (r["kind"], r["shards"]) == (kind, shards)], digits)

    lines = [
        [
            kind,
            shards,
            cell(kind, shards, lambda r: r["rollouts_per_s"], 0),
            cell(kind, shards, total),
            cell(kind, shards, lambda r: r["cpu_ms_per_rollout"]["replicas"]),
            cell(kind, shards, lambda r: r["cpu_ms_per_rollout"]["shards"]),
            cell(kind, shards, lambda r: r["cpu_ms_per_rollout"].get("mark store", 0.0)),
            cell(kind, shards, lambda r: r["operations_per_call"], 1),
            cell(kind, shards, lambda r: total(r) / total(at(r, few))) + "x",
        ]
        for kind in KINDS
        for shards in SHARDS
    ]
    growth = {kind: statistics.median(grown(kind)) for kind in KINDS}
    transport, memory, redis, actor_redis, actor_gcs = (growth[kind] for kind in KINDS)
    app = app_growth()  # read when the report is written: the two benchmarks run apart
    if app:
        when, base, sixteen = app
        allowance = 0.15 * base
        against = (
            f"The Serve app (serve_scaling.md of {when}: the direct transport, marks in the GCS) spends "
            f"{base:.1f} ms a rollout at 2 replicas x 2 shards and {sixteen:.1f} at 2 x 16: "
            f"+{sixteen - base:.1f} ms, where the issue's 15% allows +{allowance:.1f}. Of that allowance the "
            f"bare transport takes {transport / allowance:.0%}, the shard over Redis without Ray "
            f"{redis / allowance:.0%}, and the app's shard actor as shipped (GCS marks) "
            f"{actor_gcs / allowance:.0%}. The app's growth beyond that is its replicas' (HTTP and Serve around "
            "each step, where the stand-ins only spin) and its lower rate: fewer rollouts a second leave each "
            "shard longer to go cold between calls."
        )
    else:
        against = "(serve_scaling.json is missing: no comparison with the Serve app.)"
    write_report(
        "shard_fanout.md",
        "\n".join(
            [
                "# A process per shard: what the shards' number costs a rollout, by what the shards do",
                "",
                f"{data['machine']}. Produced by `.venv/bin/python bench/shard_fanout.py`: {REPLICAS} stand-in replicas "
                f"with {IN_FLIGHT} rollouts in flight each; a rollout replays a recorded rollout's shard operations (seed, "
                f"put_document, two read_documents, finish_verify, close) on a new session ID, each after {WORK_MS} ms of "
                "replica CPU, through the app's coalescer and direct transport to the rollout's shard. Shards: a bare "
                "transport process that answers at once; the app's ShardService in a plain process, its marks in memory or "
                "in a real redis-server; the app's shard actor (SessionShardActor, a Ray worker, with app_actors.py's "
                "options), its marks in Redis or in Ray's GCS as configs/serve.yaml ships it. The mark store's CPU is "
                f"counted with the shards'. {WINDOW_S:.0f} s measured after a {WARMUP_S:.0f} s warm-up, everything under "
                f"SCHED_BATCH; {ROUNDS} interleaved rounds, median and range. CPU: every process's, over the rollouts that "
                "ended in the window.",
                "",
                table(
                    [
                        "shard process",
                        "shards",
                        "rollouts/s",
                        "CPU ms a rollout",
                        "replicas",
                        "shards' processes",
                        "mark store (redis-server, the GCS)",
                        "operations a call",
                        f"vs {few} shards",
                    ],
                    lines,
                ),
                "",
                "## Reading",
                "",
                f"- From {few} to {many} shards the CPU a rollout grows by {spread(grown(KINDS[0]))} ms with nothing in a "
                f"shard but the transport, {spread(grown(KINDS[1]))} with the shard's core and its marks in memory, "
                f"{spread(grown(KINDS[2]))} with marks in Redis, {spread(grown(KINDS[3]))} when that shard is the app's "
                f"actor in a Ray worker, and {spread(grown(KINDS[4]))} with its marks in the GCS (within each round). "
                "Batches shrink from ~8 operations to ~1.5, so a rollout's operations become ~4 calls instead of ~1, each "
                "waking a shard process that slept; the replica pays a send and a receive per call instead of per batch.",
                f"- Step by step: the shard's own work a call (the core, its bookkeeping, richer answers to pickle) adds "
                f"{memory - transport:.2f} ms a rollout to the transport's growth; Redis {redis - memory:.2f} more, since "
                f"each mark read or write puts the shard to sleep once more until Redis answers; a Ray worker around it "
                f"{actor_redis - redis:+.2f} (its threads, and 100 wake-ups a second when idle); the GCS instead of Redis "
                f"{actor_gcs - actor_redis:+.2f}.",
                f"- {against}",
                "- So on two cores a process per shard whose marks are durable cannot be brought within 15% from 2 to 16 "
                "shards by trimming its code: the transport alone takes about half the allowance, and the shard over "
                "Redis, even with no Ray around it, more than all of it. The shard's work a call is already small "
                "(bench/results/shard_call.md: ~90 us back to back over the bare transport's); what costs is that it runs "
                "cold, in one of 16 processes taking turns on two cores. Only fewer shard processes (several shards' "
                "partitions in one process) or fewer calls a rollout (answers from the replica, which cannot know that no "
                "other replica closed the session) would keep it flat. On a cluster, where each shard has a core of its own "
                "and many replicas call it, calls come closer together and a shard's wake-ups take no replica's CPU.",
            ]
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replica", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--render", action="store_true", help="rewrite the report from the last JSON")
    options = parser.parse_args()
    import uvloop

    if options.replica:
        plan_file, out_file = options.replica
        counted = uvloop.run(replica(pickle.loads(Path(plan_file).read_bytes())))
        Path(out_file).write_text(json.dumps(counted))
        return
    path = RESULTS / "shard_fanout.json"
    if options.render:
        report(json.loads(path.read_text()))
        return
    from deployments.cpu_policy import batch_scheduled
    from deployments.serve_tuning import SERVE_TUNING
    from harness.redis_server import running_redis

    recorded: dict[str, list] = {}  # each recorded rollout's operations, in order, by session ID
    for batch in asyncio.run(record_batches(100)):
        for op in batch:
            recorded.setdefault(op[1][0], []).append(op)
    os.environ.update(
        {
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_AUTH_MODE": "disabled",
            "RAY_event_stats": SERVE_TUNING["RAY_event_stats"],
        }
    )
    import ray

    with batch_scheduled():  # every Ray process inherits it, as under `finsec serve`
        ray.init(address="local", include_dashboard=False, logging_level="warning")
    try:
        with running_redis() as redis:
            rows = measure(list(recorded.values()), redis)
    finally:
        ray.shutdown()
    data = {"machine": machine(), "rows": rows}
    path.write_text(json.dumps(data, indent=1))
    report(data)


if __name__ == "__main__":
    main()
