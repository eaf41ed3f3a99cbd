"""The coalescing shard client (session_store/batching.py): one call in flight, the rest ride the next one."""

from __future__ import annotations

import asyncio

from session_store.batching import Coalescer


class Shard:
    """A stand-in `send` that records its batches and answers each item after a delay."""

    def __init__(self, delay: float = 0.01, fail: set[int] | None = None):
        self.batches: list[list[int]] = []
        self.delay = delay
        self.fail = fail or set()
        self.in_flight = 0
        self.most_in_flight = 0

    async def send(self, items: list[int]) -> list[int]:
        self.batches.append(items)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(self.delay)
        self.in_flight -= 1
        if self.fail & set(items):
            raise ConnectionError("the shard died")
        return [item * 10 for item in items]


def test_a_lone_operation_goes_out_at_once_alone():
    shard = Shard()

    async def one():
        return await Coalescer(shard.send).submit(7)

    assert asyncio.run(one()) == 70 and shard.batches == [[7]]


def test_operations_arriving_during_a_call_ride_the_next_one_in_order():
    shard = Shard(delay=0.05)
    coalescer = Coalescer(shard.send)

    async def burst():
        first = asyncio.create_task(coalescer.submit(0))
        await asyncio.sleep(0.01)  # the first call is in flight now
        rest = [asyncio.create_task(coalescer.submit(i)) for i in range(1, 50)]
        return await asyncio.gather(first, *rest)

    results = asyncio.run(burst())
    assert results == [i * 10 for i in range(50)]  # each operation gets its own result
    assert shard.batches == [[0], list(range(1, 50))]  # arrival order kept; one call for the 49 latecomers
    assert shard.most_in_flight == 1


def test_batches_are_capped_and_sent_one_after_another():
    shard = Shard()
    coalescer = Coalescer(shard.send, max_batch=10)

    async def burst():
        return await asyncio.gather(*(coalescer.submit(i) for i in range(35)))

    assert asyncio.run(burst()) == [i * 10 for i in range(35)]
    assert [len(b) for b in shard.batches] == [10, 10, 10, 5] and shard.most_in_flight == 1


def test_a_failed_call_fails_each_of_its_operations_and_only_those():
    shard = Shard(delay=0.02, fail={3})
    coalescer = Coalescer(shard.send)

    async def burst():
        first = asyncio.create_task(coalescer.submit(1))
        await asyncio.sleep(0.005)
        doomed = [asyncio.create_task(coalescer.submit(i)) for i in (2, 3, 4)]
        await asyncio.sleep(0.03)
        after = asyncio.create_task(coalescer.submit(5))
        return await asyncio.gather(first, *doomed, after, return_exceptions=True)

    first, *doomed, after = asyncio.run(burst())
    assert first == 10 and after == 50
    assert all(isinstance(r, ConnectionError) for r in doomed)


def test_a_cancelled_request_does_not_break_its_batch():
    shard = Shard(delay=0.03)
    coalescer = Coalescer(shard.send)

    async def burst():
        first = asyncio.create_task(coalescer.submit(1))
        await asyncio.sleep(0.005)
        gone, kept = asyncio.create_task(coalescer.submit(2)), asyncio.create_task(coalescer.submit(3))
        await asyncio.sleep(0)
        gone.cancel()  # its client went away
        return await asyncio.gather(first, kept)

    assert asyncio.run(burst()) == [10, 30]


def test_a_wrong_number_of_results_is_an_error_for_everyone():
    async def short(items):
        return items[:-1]

    async def go():
        coalescer = Coalescer(short)
        return await asyncio.gather(coalescer.submit(1), coalescer.submit(2), return_exceptions=True)

    assert all(isinstance(r, RuntimeError) for r in asyncio.run(go()))
