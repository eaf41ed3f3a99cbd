"""The rollout client's send window (finsec_client/window.py): it opens fully, halves once for each round of
backpressure, grows back by one a window of answers, and holds the requests past it in order, without leaking
room when a waiting request is cancelled; and the client narrows it against a real server on loopback that
answers 503 with Retry-After when too many requests are in flight at once."""

from __future__ import annotations

import asyncio

from aiohttp import web

from finsec_client.client import Retries, ServerClient
from finsec_client.window import SendWindow
from harness.aiohttp_app import start


def test_it_opens_fully_and_holds_what_is_past_it_in_order():
    async def scenario() -> list[int]:
        window = SendWindow(2)
        assert [await window.enter(), await window.enter()] == [0, 0]  # no wait at all
        order: list[int] = []

        async def later(n: int) -> None:
            await window.enter()
            order.append(n)

        waiting = [asyncio.create_task(later(n)) for n in range(3)]
        await asyncio.sleep(0)
        assert order == [] and window.in_flight == 2
        window.leave(0, busy=False)
        window.leave(0, busy=False)
        await asyncio.sleep(0)
        assert order == [0, 1] and window.in_flight == 2  # two let in, the third still waits
        window.leave(0, busy=False)
        await asyncio.gather(*waiting)
        return order

    assert asyncio.run(scenario()) == [0, 1, 2]


def test_backpressure_halves_it_once_a_round_and_answers_grow_it_back():
    async def scenario() -> None:
        window = SendWindow(64)
        sent = [await window.enter() for _ in range(8)]
        window.leave(sent[0], busy=True)
        assert window.size == 32
        for cut in sent[1:4]:  # refusals of requests sent before that cut say nothing new
            window.leave(cut, busy=True)
        assert window.size == 32 and window.cuts == 1
        window.leave(await window.enter(), busy=True)  # sent after the cut: the server is still busy
        assert window.size == 16 and window.cuts == 2
        for cut in sent[4:]:
            window.leave(cut, busy=False)
        assert 16 < window.size < 17  # by about one for each window's worth of answers
        for _ in range(5_000):
            window.leave(await window.enter(), busy=False)
        assert window.size == 64 and window.in_flight == 0  # never past its most

    asyncio.run(scenario())


def test_it_never_closes_entirely():
    async def scenario() -> SendWindow:
        window = SendWindow(4)
        for _ in range(10):
            window.leave(await window.enter(), busy=True)
        return window

    assert asyncio.run(scenario()).size == 1


def test_a_cancelled_waiter_leaks_no_room():
    async def scenario() -> SendWindow:
        window = SendWindow(1)
        first = await window.enter()
        waiter = asyncio.create_task(window.enter())
        behind = asyncio.create_task(window.enter())
        await asyncio.sleep(0)
        waiter.cancel()  # still waiting
        window.leave(first, busy=False)  # the room passes to `behind`, not to the cancelled one
        await behind
        assert (await asyncio.gather(waiter, return_exceptions=True))[0].__class__ is asyncio.CancelledError
        assert window.in_flight == 1
        window.leave(0, busy=False)
        woken_then_cancelled = asyncio.create_task(window.enter())
        hold = await window.enter()
        assert not woken_then_cancelled.done()
        window.leave(hold, busy=False)  # wakes it ...
        woken_then_cancelled.cancel()  # ... and it goes before it runs: its room is handed back
        await asyncio.gather(woken_then_cancelled, return_exceptions=True)
        assert window.in_flight == 0
        return window

    assert asyncio.run(scenario()).in_flight == 0


def test_the_client_narrows_its_window_on_a_busy_server_and_every_request_is_answered():
    """A server that answers 503 + Retry-After past 4 requests at once; 40 sent together through a pool of 64."""

    async def scenario() -> tuple[list[int], int, int, ServerClient]:
        running = refused = 0

        async def handle(request: web.Request) -> web.StreamResponse:
            nonlocal running, refused
            if running >= 4:
                refused += 1
                return web.Response(status=503, text="busy", headers={"Retry-After": "0"})
            running += 1
            try:
                await asyncio.sleep(0.01)
                return web.json_response({"ok": True})
            finally:
                running -= 1

        app = web.Application()
        app.router.add_post("/{route}", handle)
        runner, url = await start(app)
        try:
            retries = Retries(deadline=60, initial=0.01, longest_busy=0.05)
            async with ServerClient(url, connections=64, retries=retries) as client:
                replies = await asyncio.gather(*(client.post("verify", {}, None, []) for _ in range(40)))
                return [reply.status for reply in replies], refused, client.window.cuts, client
        finally:
            await runner.cleanup()

    statuses, refused, cuts, client = asyncio.run(scenario())
    assert statuses == [200] * 40  # every request answered through its retries
    assert cuts >= 1 and refused >= 1  # it was told, and it listened
    assert client.window.size < 64
