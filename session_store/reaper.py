"""The reaper: one named actor that enforces the session TTL on every shard, every tick (contract §C.9).

Sessions past their TTL are also refused on access by the core itself; the reaper is what releases the
memory of sessions nobody touches again, and drops fences and expired marks once they lapse (Decision 10).
Each tick it publishes what it evicted and what the shards hold as Ray metrics (exported with a `ray_`
prefix on each node's metrics port): `finsec_sessions_evicted`, `finsec_sessions_held`, `finsec_fences_held`.
"""

from __future__ import annotations

import asyncio
import logging

import ray
from ray.util.metrics import Counter, Gauge

from .core import EvictionReport

log = logging.getLogger(__name__)


@ray.remote
class Reaper:
    def __init__(self, namespace: str, shard_names: list[str], interval_seconds: float):
        self._namespace = namespace
        self._shard_names = shard_names
        self._interval = interval_seconds
        self._ticks = 0
        self._evicted = EvictionReport()
        self._held: dict[str, int] = {}
        self._tags = {"namespace": namespace}
        self._evicted_metric = Counter(
            "finsec_sessions_evicted", "Sessions evicted for outliving session_ttl_seconds", tag_keys=("namespace",))
        self._held_metrics = {
            name: Gauge(f"finsec_{name}_held", f"{name.replace('_', ' ').capitalize()} held by all shards",
                        tag_keys=("namespace",))
            for name in ("sessions", "fences")
        }
        # An async actor's constructor runs on its event loop, so the loop can start here; a restarted reaper
        # (max_restarts=-1) starts it again the same way.
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.tick()
            except Exception:  # a restarting shard must not stop the reaper
                log.exception("reaper tick failed; trying again next tick")

    async def tick(self) -> EvictionReport:
        shards = [ray.get_actor(name, namespace=self._namespace) for name in self._shard_names]
        results = await asyncio.gather(*(s.evict_expired.remote() for s in shards), return_exceptions=True)
        report = sum((r for r in results if isinstance(r, EvictionReport)), EvictionReport())
        counts = await asyncio.gather(*(s.counts.remote() for s in shards), return_exceptions=True)
        self._held = {name: sum(c[name] for c in counts if isinstance(c, dict)) for name in self._held_metrics}
        self._ticks += 1
        self._evicted = self._evicted + report
        if report.sessions:
            self._evicted_metric.inc(report.sessions, tags=self._tags)
        for name, gauge in self._held_metrics.items():
            gauge.set(self._held[name], tags=self._tags)
        return report

    async def status(self) -> dict:
        return {"ticks": self._ticks, "evicted": self._evicted, "held": self._held,
                "interval_seconds": self._interval}
