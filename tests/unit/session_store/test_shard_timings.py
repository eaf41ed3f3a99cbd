"""A shard's stats say how long its batches, and its durable mark reads and writes inside them, took: the
figures bench/serve_rollouts.py splits a stateful request's latency with; the reaper publishes them as metrics."""

from __future__ import annotations

import asyncio

from session_store import EpisodeSeed, MemoryMarkStore, Reaper, ShardConfig, ShardService

READ_S, WRITE_S = 0.03, 0.05


class SlowMarkStore(MemoryMarkStore):
    """Reads and writes that take a known time; writes may fail after it, as an unreachable store's do."""

    write_fails = False

    async def read(self, sids):
        await asyncio.sleep(READ_S)
        return await super().read(sids)

    async def write(self, changes, owners=None, parts=None):
        await asyncio.sleep(WRITE_S)
        if self.write_fails:
            raise ConnectionError("mark store unreachable")
        return await super().write(changes, owners, parts)


def seed(sid: str) -> tuple:
    return (
        "seed_episode",
        (sid, EpisodeSeed({"rollout_id": sid, "attempt": 0}, {"taskset": "t", "task_id": "1"}, "digest")),
    )


def test_a_seed_of_an_unknown_id_times_one_read_and_one_write_inside_its_batch():
    async def main():
        shard = ShardService(ShardConfig(100.0), SlowMarkStore())  # not settled: an unknown ID is read first
        [(ok, _)] = await shard.run([seed("s1")])
        assert ok
        stats = await shard.stats()
        assert (stats["mark_reads"], stats["mark_writes"]) == (1, 1)
        assert stats["mark_read_us"] >= READ_S * 1e6 and stats["mark_write_us"] >= WRITE_S * 1e6
        assert stats["batch_us"] >= stats["mark_read_us"] + stats["mark_write_us"]
        [(ok, _)] = await shard.run([("check_open", ("s1",))])  # known now: no read; a write of no part checks
        again = await shard.stats()  # that this life still holds its record
        assert (again["mark_reads"], again["mark_writes"]) == (1, 2) and again["batches"] == 2

    asyncio.run(main())


def test_a_failed_write_is_timed_too():
    async def main():
        marks = SlowMarkStore()
        marks.write_fails = True
        shard = ShardService(ShardConfig(100.0), marks)
        [(ok, _)] = await shard.run([("close", ("s1", {"rollout_id": "r", "attempt": 0}))])
        assert not ok  # a fence that is not durable is a 503
        stats = await shard.stats()
        assert stats["mark_writes"] == 1 and stats["mark_write_us"] >= WRITE_S * 1e6

    asyncio.run(main())


def test_the_reaper_publishes_what_each_tick_added_and_a_new_shard_life_counts_from_zero():
    """The reaper turns the shards' running totals into increments (the finsec_shard_* counters): never counted
    twice, and never negative when a restarted shard's totals start again at 0."""

    class Restartable:  # one shard slot, whose process can be replaced by a new life
        def __init__(self):
            self.life = ShardService(ShardConfig(100.0), MemoryMarkStore())

        async def tick(self, health=None):
            return await self.life.tick(health)

        async def settle(self):
            return await self.life.settle()

    async def main():
        slot = Restartable()
        reaper = Reaper([slot])
        for n in range(3):
            await slot.life.run([seed(f"a{n}")])
        _, _, first = await reaper.tick()
        assert (first["batches"], first["mark_writes"]) == (3, 3) and first["batch_us"] > 0
        _, _, idle = await reaper.tick()
        assert not any(idle.values())  # nothing new: nothing counted again
        slot.life = ShardService(ShardConfig(100.0), MemoryMarkStore())  # SIGKILL and restart: totals from 0
        await slot.life.run([seed("b")])
        _, _, after = await reaper.tick()
        assert (after["batches"], after["mark_writes"]) == (1, 1)

    asyncio.run(main())
