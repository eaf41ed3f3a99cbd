"""A shard answers an operation only once the marks it relies on are durable (contract §C.4, §C.9: a fence
outlives a SIGKILL of the shard), even when batches of several replicas and the reaper's tick interleave on the
actor's loop while their mark writes are in flight."""

from __future__ import annotations

import asyncio

from session_store import MemoryMarkStore, ShardConfig, ShardService, StoreUnavailable
from session_store.marks import Written

TTL = 100.0


def ep() -> dict:
    return {"rollout_id": "r1", "attempt": 0}


class ScriptedMarkStore(MemoryMarkStore):
    """A durable store whose writes, in call order, wait for their gate and then fail or land."""

    def __init__(self, script: list[tuple[asyncio.Event | None, bool]]):
        super().__init__()
        self.script = script  # (gate to wait for, or None; whether the write fails)
        self.calls = 0

    async def write(self, changes, owners=None, parts=None):
        gate, fails = self.script[self.calls] if self.calls < len(self.script) else (None, False)
        self.calls += 1
        if gate is not None:
            await gate.wait()
        return Written(failed=set(changes)) if fails else await super().write(changes, owners, parts)


def test_a_failed_fence_write_answers_503_and_the_retry_makes_it_durable():
    async def main():
        marks = ScriptedMarkStore([(None, True)])
        shard = ShardService(ShardConfig(TTL), marks)
        [(ok, error)] = await shard.run([("close", ("s1", ep()))])
        assert not ok and isinstance(error, StoreUnavailable)
        assert "s1" not in marks.marks
        [(ok, _)] = await shard.run([("close", ("s1", ep()))])  # the agent's retry
        assert ok and "s1" in marks.marks

    asyncio.run(main())


def test_failed_writes_of_interleaved_batches_are_all_retried():
    """Two batches' writes both fail, the earlier-started one last: each retried close still waits for its fence."""

    async def main():
        late = asyncio.Event()
        marks = ScriptedMarkStore([(late, True), (None, True)])
        shard = ShardService(ShardConfig(TTL), marks)
        first = asyncio.create_task(shard.run([("close", ("x", ep()))]))
        await asyncio.sleep(0.01)  # x's write is in flight
        second = asyncio.create_task(shard.run([("close", ("y", ep()))]))
        await asyncio.sleep(0.01)  # y waits behind it
        late.set()
        assert [ok for ok, _ in await first] == [False]
        assert [ok for ok, _ in await second] == [False]
        for sid in ("x", "y"):
            [(ok, _)] = await shard.run([("close", (sid, ep()))])
            assert ok and sid in marks.marks, sid

    asyncio.run(main())


def test_a_repeated_close_waits_for_the_first_close_s_fence_write():
    async def main():
        gate = asyncio.Event()
        marks = ScriptedMarkStore([(gate, False)])
        shard = ShardService(ShardConfig(TTL), marks)
        first = asyncio.create_task(shard.run([("close", ("s1", ep()))]))
        await asyncio.sleep(0.01)
        repeated = asyncio.create_task(shard.run([("close", ("s1", ep()))]))  # another replica's retry
        await asyncio.sleep(0.01)
        assert not repeated.done()  # no 200 while the fence is not durable
        gate.set()
        assert [ok for ok, _ in await first] == [True] and [ok for ok, _ in await repeated] == [True]
        assert "s1" in marks.marks

    asyncio.run(main())


def test_a_tick_that_writes_meanwhile_does_not_forget_a_failed_fence():
    async def main():
        gate = asyncio.Event()
        marks = ScriptedMarkStore([(gate, True)])
        shard = ShardService(ShardConfig(TTL), marks)
        close = asyncio.create_task(shard.run([("close", ("s1", ep()))]))
        await asyncio.sleep(0.01)
        gate.set()
        assert [ok for ok, _ in await close] == [False]
        await shard.tick()  # the reaper's tick retries the pending fence
        assert "s1" in marks.marks

    asyncio.run(main())
