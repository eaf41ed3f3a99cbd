"""Durable state at scale: the GCS mark store and the Redis mark store side by side, at 1M and 4M marks.

    .venv/bin/python bench/state_scale.py                      # 1M and 4M marks; ~25 min, most of it GCS writes
    .venv/bin/python bench/state_scale.py --marks 200000       # a quick pass
    .venv/bin/python bench/state_scale.py --stores redis       # one store again; the other's rows are kept

By simulation on this machine: the shards' group commits are played by 16 writer tasks in this process, each
writing its own shard's changes in batches (one `MarkStore.write` per batch, as a shard does per coalesced
batch); "a shard" below is a real `ShardService` over the store, run on this process's event loop, whose lag a
sampler task measures. Redis is a real redis-server (Debian's package) on a free loopback port; the GCS is a
local Ray cluster's. Writes/s, restart and settle times, loop blocks, bytes per fence and seed latency go to
bench/results/state_scale.{json,md}. Nothing asserts on a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import time
import uuid
from pathlib import Path

from _common import RESULTS, ROOT  # noqa: F401 (puts the project on sys.path)

from session_store import ShardConfig, ShardService
from session_store.core import EpisodeSeed, Mark
from session_store.routing import shard_index

SHARDS = 16
PROCESSES = (1, 2, 4)  # shard processes writing at once, SHARDS / processes shards each
ROUNDS = 3
BATCH = 64  # changes per group commit: a busy shard's coalesced batch
FENCE_TTL = 21600.0


def steal() -> tuple[int, int]:
    """The machine's stolen and total CPU ticks: a virtual machine's host may take cores from it mid-run."""
    ticks = [int(t) for t in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return ticks[7], sum(ticks)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class LoopLag:
    """The longest time the event loop did not run a 1 ms timer: how long something blocked it."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - before - 0.001)

    def __enter__(self) -> LoopLag:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *_) -> None:
        self._task.cancel()


def fence(n: int, now: float) -> tuple[str, Mark]:
    sid = f"resources-session-{n:032x}"
    return sid, Mark(fence_until=now + FENCE_TTL, cause="closed", episode_id={"rollout_id": f"r{n}", "attempt": 0})


async def populate(store, start: int, count: int) -> float:
    """Write marks `start..start+count` from SHARDS concurrent writers; returns writes/s."""
    now = time.time()
    by_shard: list[list[tuple[str, Mark]]] = [[] for _ in range(SHARDS)]
    next_n = start
    began = time.perf_counter()

    async def writer(k: int) -> None:
        nonlocal next_n
        while True:
            while len(by_shard[k]) < BATCH and next_n < start + count:
                sid, mark = fence(next_n, now)
                next_n += 1
                by_shard[shard_index(sid, SHARDS)].append((sid, mark))
            batch, by_shard[k] = by_shard[k][:BATCH], by_shard[k][BATCH:]
            if not batch:
                if next_n >= start + count:
                    return
                await asyncio.sleep(0)
                continue
            failed = await store.write(dict(batch))
            if failed:
                raise RuntimeError(f"{len(failed)} marks not written")

    await asyncio.gather(*(writer(k) for k in range(SHARDS)))
    return count / (time.perf_counter() - began)


def shard_process(
    url: str, namespace: str, index: int, processes: int, start: int, count: int, ready, go, results
) -> None:
    """One of `processes` shard processes, each playing SHARDS / processes shards: its marks are made before the
    clock starts (a shard has its marks already), then written in group commits by one task per shard."""
    from session_store.marks.redis_store import RedisMarkStore

    now = time.time()
    mine = [fence(n, now) for n in range(start + index, start + count, processes)]
    shards = [k for k in range(SHARDS) if k % processes == index]
    batches: dict[int, list[dict]] = {k: [] for k in shards}
    by_shard: dict[int, list] = {k: [] for k in shards}
    for sid, mark in mine:
        by_shard[shards[shard_index(sid, SHARDS) % len(shards)]].append((sid, mark))
    for k, marks in by_shard.items():
        batches[k] = [dict(marks[i : i + BATCH]) for i in range(0, len(marks), BATCH)]
    store = RedisMarkStore(url, namespace)

    async def write_all() -> tuple[float, float, float]:
        await store.write(dict(mine[:1]))  # connect and load the script before the clock starts

        async def shard(k: int) -> None:
            for batch in batches[k]:
                if await store.write(batch):
                    raise RuntimeError("marks not written")

        ready.set()
        go.wait()
        began, cpu = time.time(), time.process_time()
        await asyncio.gather(*(shard(k) for k in shards))
        return began, time.time(), time.process_time() - cpu

    results.put((index, len(mine), *asyncio.run(write_all())))


def from_processes(url: str, namespace: str, server_pid: int, start: int, count: int, processes: int) -> dict:
    """Mark writes/s into one Redis from `processes` shard processes at once (new IDs `start..start+count`), and
    the CPU each side spent."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    go, results = context.Event(), context.Queue()
    readies = [context.Event() for _ in range(processes)]
    workers = [
        context.Process(
            target=shard_process, args=(url, namespace, i, processes, start, count, readies[i], go, results)
        )
        for i in range(processes)
    ]
    for worker in workers:
        worker.start()
    for ready in readies:
        ready.wait()
    server, (stolen, ticks) = cpu_seconds(server_pid), steal()
    go.set()
    done = [results.get() for _ in workers]
    server = cpu_seconds(server_pid) - server
    stolen_after, ticks_after = steal()
    for worker in workers:
        worker.join()
    written = sum(d[1] for d in done)
    elapsed = max(d[3] for d in done) - min(d[2] for d in done)
    return {
        "processes": processes,
        "marks": written,
        "writes_per_s": written / elapsed,
        "writer_us_per_write": sum(d[4] for d in done) / written * 1e6,
        "redis_us_per_write": server / written * 1e6,
        "stolen_share": (stolen_after - stolen) / max(1, ticks_after - ticks),
    }


def seed(n: int) -> EpisodeSeed:
    return EpisodeSeed({"rollout_id": f"probe{n}", "attempt": 0}, {"taskset": "fin", "task_id": "t"}, "d")


async def restart_and_settle(store, config: ShardConfig) -> dict:
    """A restarted shard 0 of 16: how soon it answers, how long it settles, the loop's worst block meanwhile,
    and seed latency during the settle against seeds on a settled shard."""
    probes = iter(range(10**9))
    shard = ShardService(config, store, place=(0, SHARDS))
    began = time.perf_counter()
    first = await shard.run([("seed_episode", (f"probe-{uuid.uuid4().hex}", seed(next(probes))))])
    serves_after = time.perf_counter() - began
    assert first[0][0], first

    async def seeds_meanwhile(stop: asyncio.Event) -> list[float]:
        latencies = []
        while not stop.is_set():
            t = time.perf_counter()
            await shard.run([("seed_episode", (f"probe-{uuid.uuid4().hex}", seed(next(probes))))])
            latencies.append(time.perf_counter() - t)
            await asyncio.sleep(0.005)  # ~200 seeds/s on this shard
        return latencies

    stop = asyncio.Event()
    with LoopLag() as lag:
        prober = asyncio.create_task(seeds_meanwhile(stop))
        began = time.perf_counter()
        if store.lists_marks:
            loaded = await shard.settle()
        else:  # nothing to settle (Redis): the restarted shard reads per ID; its seeds meanwhile are measured alike
            loaded = None
            await asyncio.sleep(2.0)
        settle_seconds = time.perf_counter() - began
        stop.set()
        during = await prober
    stop = asyncio.Event()
    prober = asyncio.create_task(seeds_meanwhile(stop))
    await asyncio.sleep(min(5.0, max(1.0, settle_seconds)))
    stop.set()
    settled = await prober
    with LoopLag() as counters_lag:
        for _ in range(100):
            await shard.stats()
            await asyncio.sleep(0)
    return {
        "serves_after_s": serves_after,
        "settle_s": settle_seconds if loaded is not None else None,
        "settle_loaded": loaded,
        "settle_worst_block_ms": lag.worst * 1000,
        "counters_worst_block_ms": counters_lag.worst * 1000,
        "seed_p99_ms_settling": p99(during),
        "seed_p99_ms_settled": p99(settled),
        "seeds_settling": len(during),
    }


def p99(values: list[float]) -> float | None:
    if len(values) < 2:
        return values[0] * 1000 if values else None
    return statistics.quantiles(values, n=100)[98] * 1000


async def sweep(store) -> dict:
    with LoopLag() as lag:
        began = time.perf_counter()
        swept = await store.sweep(time.time())
        return {"sweep_s": time.perf_counter() - began, "swept": swept, "sweep_worst_block_ms": lag.worst * 1000}


async def measure(name: str, store, levels: list[int], memory, server_pid: int) -> list[dict]:
    rows, written = [], 0
    base = memory()
    for level in levels:
        client, server = time.process_time(), cpu_seconds(server_pid)
        rate = await populate(store, written, level - written)
        count, written = level - written, level
        row = {
            "store": name,
            "marks": level,
            "writes_per_s": rate,
            "client_us_per_write": (time.process_time() - client) / count * 1e6,
            "server_us_per_write": (cpu_seconds(server_pid) - server) / count * 1e6,
            "bytes_per_fence": (memory() - base) / level,
        }
        stolen, ticks = steal()
        row.update(await restart_and_settle(store, ShardConfig(session_ttl_seconds=FENCE_TTL)))
        stolen_after, ticks_after = steal()
        row["settle_stolen_share"] = (stolen_after - stolen) / max(1, ticks_after - ticks)
        row.update(await sweep(store))
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def run_gcs(levels: list[int]) -> list[dict]:
    import ray
    from ray._private import ray_constants

    from deployments.local import LOCAL_RAY_ENV
    from session_store.marks.gcs_store import GcsMarkStore

    os.environ.update(LOCAL_RAY_ENV)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        node = ray._private.worker._global_node
        gcs_pid = node.all_processes[ray_constants.PROCESS_TYPE_GCS_SERVER][0].process.pid
        store = GcsMarkStore(f"bench-{uuid.uuid4().hex[:8]}".encode())
        try:
            return asyncio.run(measure("gcs", store, levels, lambda: rss(gcs_pid), gcs_pid))
        finally:
            asyncio.run(store.purge())
    finally:
        ray.shutdown()


def run_redis(levels: list[int], process_marks: int) -> tuple[list[dict], list[dict]]:
    """The store's rows, then rounds of writes from several shard processes into the Redis that holds the largest
    level's marks (processes 1, 2, 4 in turn, ROUNDS times, so that the machine's drift falls on each alike)."""
    import redis

    from harness.redis_server import running_redis
    from session_store.marks.redis_store import RedisMarkStore

    with running_redis() as server:
        client = redis.Redis.from_url(server.url)
        namespace = f"bench-{uuid.uuid4().hex[:8]}"
        store = RedisMarkStore(server.url, namespace)
        rows = asyncio.run(
            measure("redis", store, levels, lambda: client.info("memory")["used_memory"], server.process.pid)
        )
        rounds, start = [], max(levels)
        for round_ in range(ROUNDS):
            for processes in PROCESSES:
                row = from_processes(server.url, namespace, server.process.pid, start, process_marks, processes)
                start += process_marks
                rounds.append({**row, "round": round_, "held_before": start - process_marks})
                print(json.dumps(rounds[-1]), flush=True)
        asyncio.run(store.purge())
        return rows, rounds


def processes_table(rounds: list[dict]) -> list[str]:
    if not rounds:
        return []
    first = rounds[0]
    lines = [
        "## Mark writes/s into one Redis from several shard processes",
        "",
        f"Each process plays {SHARDS} / processes shards (one writer task a shard, group commits of {BATCH}) with its",
        f"marks made before the clock starts; {first['marks']:,} new marks a round, into the Redis that already",
        f"holds {first['held_before']:,} (and every earlier round's); "
        f"{len(rounds) // len(PROCESSES)} interleaved rounds ({first.get('ran_at', '?')},"
        f" {first.get('code', '?')}). The writers and Redis share this machine's 2 cores, so the processes'",
        "CPU is taken from Redis's: Redis's own CPU per write bounds what one Redis core takes from a cluster's "
        "shards.",
        "",
        "| shard processes | mark writes/s: median (range) | CPU us per write: writers / Redis (median) "
        "| CPU stolen by the host (range) |",
        "|---|---|---|---|",
    ]
    for processes in sorted({r["processes"] for r in rounds}):
        mine = [r for r in rounds if r["processes"] == processes]
        rates = [r["writes_per_s"] for r in mine]
        lines.append(
            f"| {processes} | {statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f}) | "
            f"{statistics.median(r['writer_us_per_write'] for r in mine):.1f} / "
            f"{statistics.median(r['redis_us_per_write'] for r in mine):.1f} | "
            f"{min(r.get('stolen_share', 0) for r in mine):.0%}-"
            f"{max(r.get('stolen_share', 0) for r in mine):.0%} |"
        )
    return [*lines, ""]


def report(rows: list[dict], levels: list[int], rounds: list[dict]) -> str:
    head = (
        "| store (run at, code) | marks | mark writes/s (one process) | CPU us per write: writers / store "
        "| restarted shard "
        "serves after | settle (1/16 share) | loaded | worst loop block: settle / sweep / counters | seed p99 "
        "settling / settled | sweep | bytes per fence | CPU stolen by the host while settling |"
    )
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        lines.append(
            f"| {r['store']} ({r.get('ran_at', '?')}, {r.get('code', '?')}) | {r['marks']:,} | "
            f"{r['writes_per_s']:,.0f} | {r['client_us_per_write']:.0f} / "
            f"{r['server_us_per_write']:.1f} | {r['serves_after_s'] * 1000:.1f} ms | "
            f"{settle(r)} | {r['settle_worst_block_ms']:.1f} / "
            f"{r['sweep_worst_block_ms']:.1f} / {r['counters_worst_block_ms']:.1f} ms | "
            f"{fmt(r['seed_p99_ms_settling'])} / {fmt(r['seed_p99_ms_settled'])} ms | {r['sweep_s']:.1f} s | "
            f"{r['bytes_per_fence']:.0f} | {fmt_share(r.get('settle_stolen_share'))} |"
        )
    by = {(r["store"], r["marks"]): r for r in rows}
    ratios = [
        f"- at {n:,} marks, Redis wrote {by[('redis', n)]['writes_per_s'] / by[('gcs', n)]['writes_per_s']:.0f}x"
        " the GCS's marks per second"
        for n in levels
        if ("redis", n) in by and ("gcs", n) in by
    ]
    return "\n".join(
        [
            "# Durable state at scale: GCS vs Redis mark stores",
            "",
            "Produced by `.venv/bin/python bench/state_scale.py` (" + ", ".join(f"{n:,}" for n in levels) + " marks).",
            "16 simulated shards write fences in group commits of 64 (one `MarkStore.write` each); then a restarted",
            "shard 0 of 16 (a real `ShardService` on this process's loop) answers a seed, settles its 1/16 share while",
            "seeds arrive at ~200/s (over Redis, which it never settles from, the seeds of its first 2 s, each read per",
            "ID), and the store's sweep runs; a 1 ms timer task records the loop's worst block.",
            "Bytes per fence: the GCS process's RSS growth, or Redis's `used_memory` growth, over the marks written.",
            "CPU per write: this process's (the 16 writers: routing, encoding, the client) and the store server's, so",
            "the rate one store can take from many shard processes is about 1e6 / (its us per write) per core.",
            "",
            *lines,
            "",
            *ratios,
            "",
            *processes_table(rounds),
        ]
    )


def settle(row: dict) -> str:
    if row["settle_loaded"] is None:
        return "none: reads per ID | -"
    return f"{row['settle_s']:.2f} s | {row['settle_loaded']:,}"


def fmt_share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--marks", type=int, nargs="+", default=[1_000_000, 4_000_000])
    parser.add_argument("--stores", nargs="+", default=["redis", "gcs"], choices=["redis", "gcs"])
    parser.add_argument(
        "--process-marks",
        type=int,
        default=500_000,
        help="new marks written in each round of the shard-process runs (Redis only)",
    )
    options = parser.parse_args()
    levels = sorted(options.marks)
    previous = RESULTS / "state_scale.json"
    kept = json.loads(previous.read_text()) if previous.is_file() else {}
    rows = [r for r in kept.get("rows", []) if r["store"] not in options.stores and r["marks"] in levels]
    rounds = [] if "redis" in options.stores else kept.get("from_processes", [])
    code = subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    for name in options.stores:
        ran_at = time.strftime("%Y-%m-%d %H:%M")
        if name == "redis":
            mine, from_shards = run_redis(levels, options.process_marks)
            rounds = [{**row, "ran_at": ran_at, "code": code} for row in from_shards]
        else:
            mine = run_gcs(levels)
        rows += [{**row, "ran_at": ran_at, "code": code} for row in mine]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "state_scale.json").write_text(
        json.dumps({"levels": levels, "rows": rows, "from_processes": rounds}, indent=1)
    )
    (RESULTS / "state_scale.md").write_text(report(rows, levels, rounds))
    print(report(rows, levels, rounds))


if __name__ == "__main__":
    main()
