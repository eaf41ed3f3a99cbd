"""The rollout client retries a 5xx and a dropped connection (every contract route is safe to repeat, README
"Running it"), honours a 503's Retry-After within its deadline, records every attempt, and gives up as it says:
against a real aiohttp server on loopback that fails on purpose."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web

from finsec_client.client import Retries, ServerClient, TransportFailure
from finsec_client.runner import RunPlan, run_episodes
from finsec_client.tasks import embedded_tasks
from harness.aiohttp_app import start

FAST = Retries(attempts=4, deadline=10.0, initial=0.01, longest=0.05, jitter=0.0)


class Flaky:
    """Answers each route's first `failures` requests with `status` (or drops them, status None), then 200."""

    def __init__(self, failures: int, status: int | None, retry_after: str | None = None):
        self.failures, self.status, self.retry_after = failures, status, retry_after
        self.seen: list[float] = []
        self.headers: list[dict[str, str]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(time.monotonic())
        self.headers.append(dict(request.headers))
        if len(self.seen) <= self.failures:
            if self.status is None:
                request.transport.close()  # no reply at all: the connection drops
                return web.Response()
            headers = {"Retry-After": self.retry_after} if self.retry_after else {}
            return web.json_response({"detail": "busy"}, status=self.status, headers=headers)
        return web.json_response({"ok": True, "body": await request.json()})


async def serve(flaky: Flaky):
    app = web.Application()
    app.router.add_post("/{route}", flaky.handle)
    return await start(app)


async def post(flaky: Flaky, retries: Retries = FAST):
    runner, url = await serve(flaky)
    try:
        calls: list = []
        async with ServerClient(url, timeout=5, retries=retries) as client:
            try:
                reply = await client.post("seed_session", {"n": 1}, None, calls)
            except TransportFailure as failure:
                return failure, calls
        return reply, calls
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("status", [500, 502, 503, 504, None])
def test_a_5xx_or_a_dropped_connection_is_sent_again_until_it_succeeds(status):
    reply, calls = asyncio.run(post(Flaky(2, status)))
    assert reply.status == 200 and reply.json()["body"] == {"n": 1}
    assert [c.status for c in calls] == [status, status, 200]
    assert [c.retried for c in calls] == [True, True, False]
    assert [c.to_json().get("retried") for c in calls] == [True, True, None]


def test_every_attempt_asks_serve_not_to_watch_for_a_disconnect():
    flaky = Flaky(1, 503)
    reply, calls = asyncio.run(post(flaky))
    assert reply.status == 200 and len(flaky.headers) == 2
    # the header of finsec_client.client.CLIENT_HEADERS, on every attempt
    assert all(h.get("x-request-disconnect-disabled") == "?1" for h in flaky.headers)


@pytest.mark.parametrize("status", [400, 404, 409, 422, 429])
def test_an_answer_that_is_not_a_5xx_is_never_repeated(status):
    reply, calls = asyncio.run(post(Flaky(1, status)))
    assert reply.status == status and len(calls) == 1 and not calls[0].retried


def test_when_the_attempts_are_spent_the_last_answer_stands():
    reply, calls = asyncio.run(post(Flaky(10, 503)))
    assert reply.status == 503 and len(calls) == FAST.attempts
    assert [c.retried for c in calls] == [True] * (FAST.attempts - 1) + [False]
    failure, calls = asyncio.run(post(Flaky(10, None)))
    assert isinstance(failure, TransportFailure) and len(calls) == FAST.attempts


def test_retry_after_is_waited_and_a_hint_past_the_deadline_is_not():
    flaky = Flaky(1, 503, retry_after="1")
    reply, calls = asyncio.run(post(flaky))
    assert reply.status == 200 and flaky.seen[1] - flaky.seen[0] >= 0.95  # not the 10 ms backoff
    flaky = Flaky(1, 503, retry_after="60")  # longer than the 10 s deadline leaves
    reply, calls = asyncio.run(post(flaky))
    assert reply.status == 503 and len(calls) == 1 and not calls[0].retried


def test_one_attempt_means_no_retry():
    reply, calls = asyncio.run(post(Flaky(1, 503), Retries(attempts=1)))
    assert reply.status == 503 and len(calls) == 1


def test_backpressure_is_sent_again_past_the_attempts_until_it_is_answered():
    """A 503 with Retry-After is the server saying the request was not started: not a failure, so the attempts
    for failures do not bound it; the deadline does."""
    flaky = Flaky(6, 503, retry_after="0")
    reply, calls = asyncio.run(post(flaky, Retries(attempts=2, deadline=10.0, initial=0.01, longest_busy=0.05)))
    assert reply.status == 200 and [c.status for c in calls] == [503] * 6 + [200]
    flaky = Flaky(6, 429, retry_after="0")  # Serve's backpressure_config may say 429
    reply, calls = asyncio.run(post(flaky, Retries(attempts=2, deadline=10.0, initial=0.01, longest_busy=0.05)))
    assert reply.status == 200 and len(calls) == 7


def test_a_busy_server_s_wait_doubles_from_its_retry_after():
    policy = Retries(longest_busy=60.0)
    for busy in range(1, 9):
        least = min(2.0 * 2 ** (busy - 1), 60.0)
        assert least <= policy.wait(0, busy, 2.0) <= 2 * least
    assert Retries(initial=0.2).wait(0, 1, 0.0) >= 0.2  # a Retry-After of 0 is not a tight loop
    assert Retries(longest_busy=1.0).wait(0, 5, 30.0) >= 30.0  # never sooner than the server asked
    assert Retries(attempts=1).wait(0, 1, 2.0) is None


def test_a_run_s_retry_deadline_ends_its_wait_for_a_server_that_stays_busy():
    """`finsec rollouts --retry-deadline`: an episode against a server that never stops answering 503 with
    Retry-After ends with that answer once the run's deadline passes (with the default ten minutes, this test
    would run into its own timeout instead)."""
    flaky = Flaky(10**9, 503, retry_after="0")

    async def play() -> list:
        runner, url = await serve(flaky)
        try:
            records: list = []
            plan = RunPlan(url, tuple(embedded_tasks()), 1, 1, retry_deadline=1.0)
            await run_episodes(plan, [0], records.append)
            return records
        finally:
            await runner.cleanup()

    [record] = asyncio.run(play())
    seeds = [call for call in record.calls if call["route"].endswith("seed_session")]
    assert record.failure is not None and record.reward is None
    assert len(seeds) > 1 and all(call["status"] == 503 for call in seeds)  # waited out, then the 503 stood


def test_each_attempt_keeps_excerpts_of_its_body_and_reply():
    """With `excerpts`, each call keeps that many characters of what was sent and answered, saying how many more
    there were; without, neither (the run file of a benchmark stays small)."""

    async def run(excerpts: int) -> list:
        runner, url = await serve(Flaky(1, 500))
        try:
            calls: list = []
            async with ServerClient(url, timeout=5, retries=FAST, excerpts=excerpts) as client:
                await client.post("parse_html_page", {"url": "https://www.sec.gov/x", "pad": "p" * 100}, None, calls)
            return calls
        finally:
            await runner.cleanup()

    failed, answered = asyncio.run(run(40))
    assert failed.status == 500 and failed.reply.startswith('{"detail": "busy"}')
    sent = '{"url": "https://www.sec.gov/x", "pad": "' + "p" * 100 + '"}'
    assert answered.body == f"{sent[:40]}… [{len(sent) - 40} more characters]"
    assert answered.reply.startswith('{"ok": true, "body": {"url"') and answered.reply.endswith("more characters]")
    assert answered.to_json()["body"] == answered.body
    assert all(call.body is None and call.reply is None for call in asyncio.run(run(0)))
    assert "body" not in asyncio.run(run(0))[0].to_json()
