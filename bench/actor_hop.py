"""Benchmark: the floor under a stateful route's latency, one actor round trip, measured alone.

    .venv/bin/python bench/actor_hop.py      # ~1 minute

From an async actor (as an ingress replica is) to:
- an async actor (as a session shard is), with and without Ray task events;
- a threaded (sync) actor, which skips the hand-off to the actor's event loop thread;
- an async actor that writes one GCS key-value entry before it answers (as a shard does for a fence on close).
One operation per call at concurrency 1, the payload shaped like one batched session operation. Side by side,
rounds interleaved; writes bench/results/actor_hop.{md,json}.
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

    @ray.remote(num_cpus=0)
    class SyncTarget:
        def run(self, ops):
            return [(True, None) for _ in ops]

    @ray.remote(num_cpus=0)
    class KvTarget:
        async def run(self, ops):
            from ray.experimental.internal_kv import internal_kv_get_gcs_client

            await internal_kv_get_gcs_client().async_internal_kv_put(b"mark:bench", b"x" * 64, True, b"bench",
                                                                     timeout=5)
            return [(True, None) for _ in ops]

    @ray.remote(num_cpus=0)
    class Caller:
        async def time_calls(self, target, n: int) -> list[float]:
            out = []
            for _ in range(n):
                start = time.perf_counter()
                await target.run.remote(OP)
                out.append(time.perf_counter() - start)
            return out

    targets = {
        "async actor (a shard today)": AsyncTarget.options(enable_task_events=False).remote(),
        "async actor, task events on": AsyncTarget.remote(),
        "threaded actor": SyncTarget.options(enable_task_events=False).remote(),
        "async actor + one GCS KV put (close)": KvTarget.options(enable_task_events=False).remote(),
    }
    caller = Caller.remote()
    samples: dict[str, list[float]] = {name: [] for name in targets}
    for _ in range(ROUNDS):
        for name, target in targets.items():
            ray.get(caller.time_calls.remote(target, 100))  # warm
            samples[name] += ray.get(caller.time_calls.remote(target, CALLS))
    ray.shutdown()

    def row(values: list[float]) -> dict:
        ordered = sorted(values)
        return {"p50_ms": 1e3 * statistics.median(ordered), "p99_ms": 1e3 * ordered[int(0.99 * len(ordered))]}

    results = {"machine": machine(), "calls": CALLS * ROUNDS, "targets": {n: row(v) for n, v in samples.items()}}
    (RESULTS / "actor_hop.json").write_text(json.dumps(results, indent=1))
    base = results["targets"]["async actor (a shard today)"]["p50_ms"]
    rows = [[name, f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", f"{r['p50_ms'] - base:+.2f}"]
            for name, r in results["targets"].items()]
    write_report("actor_hop.md", "\n".join([
        "# One actor round trip, alone", "",
        f"{results['machine']}. {results['calls']} calls per target from an async actor, one at a time, rounds "
        "interleaved. Produced by `bench/actor_hop.py`.", "",
        table(["target", "p50 ms", "p99 ms", "p50 vs a shard today"], rows), "",
        "A stateful route pays one of these on top of a stateless one (bench/results/serve_rollouts.md, "
        "concurrency 1); close also pays the KV put, before its reply, so the fence survives a shard's SIGKILL.",
    ]))


if __name__ == "__main__":
    main()
