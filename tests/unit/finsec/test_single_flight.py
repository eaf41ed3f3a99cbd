"""SingleFlight: concurrent callers of one key share one run of the work (the judge, a parse, an index build)."""

import asyncio

import pytest

from finsec.single_flight import SingleFlight


def test_concurrent_callers_of_one_key_share_one_run_and_other_keys_run_their_own():
    runs: list[str] = []

    async def work(key: str) -> str:
        runs.append(key)
        await asyncio.sleep(0.01)
        return key.upper()

    async def main():
        flight: SingleFlight[str, str] = SingleFlight()
        answers = await asyncio.gather(*(flight.run(k, lambda k=k: work(k)) for k in ["a", "a", "b", "a"]))
        assert answers == ["A", "A", "B", "A"]
        assert sorted(runs) == ["a", "b"]
        await flight.run("a", lambda: work("a"))  # finished work is not remembered: a later call runs again
        assert runs.count("a") == 2

    asyncio.run(main())


def test_a_caller_that_goes_away_does_not_cancel_the_work_the_others_wait_for():
    async def main():
        flight: SingleFlight[str, int] = SingleFlight()
        release = asyncio.Event()

        async def work() -> int:
            await release.wait()
            return 7

        leaver = asyncio.create_task(flight.run("k", work))
        stayer = asyncio.create_task(flight.run("k", work))
        await asyncio.sleep(0)
        leaver.cancel()
        release.set()
        assert await stayer == 7
        with pytest.raises(asyncio.CancelledError):
            await leaver

    asyncio.run(main())


def test_a_failure_reaches_every_caller_and_is_not_kept():
    calls = 0

    async def failing() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        raise ValueError("upstream down")

    async def main():
        flight: SingleFlight[str, int] = SingleFlight()
        results = await asyncio.gather(flight.run("k", failing), flight.run("k", failing), return_exceptions=True)
        assert [type(r) for r in results] == [ValueError, ValueError] and calls == 1
        with pytest.raises(ValueError):
            await flight.run("k", failing)
        assert calls == 2

    asyncio.run(main())
