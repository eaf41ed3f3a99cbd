"""Benchmark: the floor under a stateful route's latency, one shard round trip, measured alone.

    .venv/bin/python bench/actor_hop.py      # ~1 minute

From an async actor (as an ingress replica is) to:
- an async actor (as a session shard is), with and without Ray task events;
- a threaded (sync) actor, which skips the hand-off to the actor's event loop thread;
- an async actor that writes one GCS key-value entry before it answers (as a shard does for a fence on close);
- the same async actor over the direct transport (session_store/direct), as replicas reach shards now.
One operation per call at concurrency 1, the payload shaped like one batched session operation: latency, and the
CPU each side's process spends per call (every thread of it: Ray's own threads count). Side by side, rounds
interleaved; writes bench/results/actor_hop.{md,json}.
"""

from __future__ import annotations

import json
import os
import statistics
import time

from _common import RESULTS, machine, table, write_report

CALLS = 1500
ROUNDS = 3
OP = [("close", (f"resources-session-{'0' * 32}", {"rollout_id": "bench-1", "attempt": 0}, None))]


def main() -> None:
    for name, value in {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}.items():
        os.environ.setdefault(name, value)
    import ray

    ray.init(address="local", include_dashboard=False, logging_level="warning")

    @ray.remote(num_cpus=0)
    class AsyncTarget:
        async def run(self, ops):
            return [(True, None) for _ in ops]

        async def endpoint(self):
            from session_store.direct import DirectServer

            if not hasattr(self, "_direct"):
                self._direct = DirectServer(self.run, ray.util.get_node_ip_address())
            return await self._direct.start()

        async def cpu(self) -> float:
            return time.process_time()

    @ray.remote(num_cpus=0)
    class SyncTarget:
        def run(self, ops):
            return [(True, None) for _ in ops]

    @ray.remote(num_cpus=0)
    class KvTarget:
        async def run(self, ops):
            from ray.experimental.internal_kv import internal_kv_get_gcs_client

            await internal_kv_get_gcs_client().async_internal_kv_put(
                b"mark:bench", b"x" * 64, True, b"bench", timeout=5
            )
            return [(True, None) for _ in ops]

    @ray.remote(num_cpus=0)
    class Caller:
        async def time_calls(self, target, n: int, direct: bool = False) -> tuple[list[float], float]:
            send = target.run.remote
            if direct:
                from session_store.direct import ShardChannel

                channel = ShardChannel(target.endpoint.remote, timeout=10, what="target")
                send = channel.send
            await send(OP)
            out, cpu = [], time.process_time()
            for _ in range(n):
                start = time.perf_counter()
                await send(OP)
                out.append(time.perf_counter() - start)
            return out, time.process_time() - cpu

    async_target = AsyncTarget.options(enable_task_events=False).remote()
    targets = {  # name: (the target, over the direct transport)
        "async actor call (the ray hop)": (async_target, False),
        "async actor call, task events on": (AsyncTarget.remote(), False),
        "threaded actor call": (SyncTarget.options(enable_task_events=False).remote(), False),
        "async actor call + one GCS KV put (close)": (KvTarget.options(enable_task_events=False).remote(), False),
        "direct transport to the async actor (shards now)": (async_target, True),
    }
    caller = Caller.remote()
    samples: dict[str, list[float]] = {name: [] for name in targets}
    cpu: dict[str, list[float]] = {name: [] for name in targets}
    for _ in range(ROUNDS):
        for name, (target, direct) in targets.items():
            ray.get(caller.time_calls.remote(target, 100, direct))  # warm
            before = ray.get(target.cpu.remote()) if hasattr(target, "cpu") else None
            latencies, caller_cpu = ray.get(caller.time_calls.remote(target, CALLS, direct))
            after = ray.get(target.cpu.remote()) if hasattr(target, "cpu") else None
            samples[name] += latencies
            cpu[name].append((caller_cpu / CALLS, None if before is None else (after - before) / CALLS))
    ray.shutdown()

    def row(values: list[float], spent: list[tuple[float, float | None]]) -> dict:
        ordered = sorted(values)
        target = [t for _, t in spent if t is not None]
        return {
            "p50_ms": 1e3 * statistics.median(ordered),
            "p99_ms": 1e3 * ordered[int(0.99 * len(ordered))],
            "caller_cpu_us": 1e6 * statistics.median(c for c, _ in spent),
            "target_cpu_us": 1e6 * statistics.median(target) if target else None,
        }

    results = {"machine": machine(), "calls": CALLS * ROUNDS, "targets": {n: row(samples[n], cpu[n]) for n in targets}}
    (RESULTS / "actor_hop.json").write_text(json.dumps(results, indent=1))
    base = results["targets"]["async actor call (the ray hop)"]["p50_ms"]
    rows = [
        [
            name,
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            f"{r['p50_ms'] - base:+.2f}",
            f"{r['caller_cpu_us']:.0f}",
            "-" if r["target_cpu_us"] is None else f"{r['target_cpu_us']:.0f}",
        ]
        for name, r in results["targets"].items()
    ]
    write_report(
        "actor_hop.md",
        "\n".join(
            [
                "# One shard round trip, alone",
                "",
                f"{results['machine']}. {results['calls']} calls per target from an async actor, one at a time, rounds "
                "interleaved. CPU per call: the process's CPU (all its threads) over the calls, on each side; the target "
                "side is read where the target can report it (the async actor). Produced by `bench/actor_hop.py`.",
                "",
                table(
                    [
                        "target",
                        "p50 ms",
                        "p99 ms",
                        "p50 vs the ray hop",
                        "caller CPU us per call",
                        "target CPU us per call",
                    ],
                    rows,
                ),
                "",
                "A stateful route pays one of these on top of a stateless one (bench/results/serve_rollouts.md, "
                "concurrency 1); close also pays the KV put, before its reply, so the fence survives a shard's SIGKILL. "
                "Replicas reach shards over the direct transport; `shard_transport: ray` is the first row.",
            ]
        ),
    )


if __name__ == "__main__":
    main()
