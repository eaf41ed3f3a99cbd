"""The reaper: one named actor that enforces the session TTL on every shard, every tick (contract §C.9).

Sessions past their TTL are also refused on access by the core itself; the reaper is what releases the
memory of sessions nobody touches again, and drops fences and expired marks once they lapse (Decision 10).
"""

from __future__ import annotations

import asyncio
import logging

import ray

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
        self._ticks += 1
        self._evicted = self._evicted + report
        return report

    async def status(self) -> dict:
        return {"ticks": self._ticks, "evicted": self._evicted, "interval_seconds": self._interval}
