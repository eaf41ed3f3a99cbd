"""The capacity benchmark's load generator: N concurrent sessions, each playing 8-request episodes with an agent's
think time before every request, from its own process, through the project's own rollout client
(finsec_client.client.ServerClient: one pool of connections, its retries and its send window), on uvloop.

    python bench/sessions_load.py --url http://127.0.0.1:8000 --sessions 8000 --think 10 --seconds 60

Prints one JSON object. Each session joins its first episode at a random step (harness/episodes.py's rollout_steps:
seed, search, parse, retrieve twice, submit, verify, close), so the load is the steady mix of routes from its
first request. The steps before it are played first, `--preparing` sessions at a time and unmeasured, so that
preparing tens of thousands of sessions never floods the server. Then the load starts: every session sends its
next request at a random moment within one think time (as thousands of rollouts' model turns do) and plays
episodes back to back, sleeping `think` seconds before each request. When the window closes each session closes
its open episode at once, so none outlives the run.

A 503 or 429 with Retry-After is backpressure: the client sends the request again as its `Retries` say, and
narrows its window; each such answer is counted as turned away, never as failed. With `--never-retry` the client
is a trainer's plain one instead (NeMo Gym's): every request sent once, no send window (the connection pool is its
only bound), and a 503 fails the request and its episode. A request fails when it gets
any other non-200, no reply, no answer within `--give-up` seconds, or (verify) a reward other than 1.0: failures
and episodes are counted over the whole run. A request first sent within the measured window (from `--warmup`
after the load starts) counts as served when answered, and gives its total latency: the agent's whole wait
(the window's queue and backpressure's waits included). Each attempt answered within the window also gives its
admitted latency (the attempt answered 200, from asking the pool for a connection) and its server latency (that
attempt from its headers on the wire to the answer's: the client's own queues left out).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import random
import resource
import sys
import time
from pathlib import Path

import aiohttp
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import emit  # noqa: E402

from finsec.corpus.generate import questions  # noqa: E402
from finsec_client.client import (  # noqa: E402
    BUSY_STATUSES,
    Call,
    Cookies,
    Reply,
    Retries,
    ServerClient,
    TransportFailure,
)
from harness.episodes import rollout_steps  # noqa: E402


class _Tally:
    def __init__(self) -> None:
        self.admitted: dict[str, list[float]] = {}  # route -> seconds
        self.total: list[float] = []
        self.pool_wait: list[float] = []  # seconds a request waited for one of the pool's connections
        self.server: list[float] = []  # a 200's time from its headers sent to its answer's headers
        self.ok = self.failed = self.rejected = self.episodes = self.episodes_failed = 0
        self.failures: list[str] = []

    def fail(self, what: str) -> None:
        self.failed += 1
        if len(self.failures) < 5:
            self.failures.append(what)


class _NoWindow:
    """A plain client's: as many requests in flight as its pool has connections, however busy the server."""

    async def enter(self) -> int:
        return 0

    def leave(self, sent_under: int, *, busy: bool) -> None:
        pass


async def run(  # noqa: C901 (a load generator's one loop: splitting it costs a call per request)
    url: str,
    sessions: int,
    think: float,
    seconds: float,
    warmup: float,
    connections: int,
    give_up: float,
    preparing: int,
    never_retry: bool = False,
) -> dict:
    tasks = questions()
    tally = _Tally()
    began = time.monotonic()
    window = (math.inf, math.inf)  # set once every session is prepared
    tracing = aiohttp.TraceConfig()  # the server's time apart from the client's own queue for a connection

    def inside(at: float | None = None) -> bool:
        return window[0] <= (time.monotonic() if at is None else at) <= window[1]

    async def queued(_session, context, _params) -> None:
        context.queued = time.monotonic()

    async def dequeued(_session, context, _params) -> None:
        if inside():
            tally.pool_wait.append(time.monotonic() - context.queued)

    async def on_the_wire(_session, context, _params) -> None:
        context.sent = time.monotonic()

    async def answered(_session, context, params) -> None:
        if inside() and params.response.status == 200 and hasattr(context, "sent"):
            tally.server.append(time.monotonic() - context.sent)

    tracing.on_connection_queued_start.append(queued)
    tracing.on_connection_queued_end.append(dequeued)
    tracing.on_request_headers_sent.append(on_the_wire)
    tracing.on_request_end.append(answered)

    def observe(call: Call, _body, _reply) -> None:  # every attempt
        if not inside():
            return
        if call.status in BUSY_STATUSES:
            tally.rejected += 1
        elif call.status == 200:
            tally.admitted.setdefault(call.route, []).append(call.ms / 1e3)

    sequence = 0

    async def send(client: ServerClient, route: str, body: dict, cookies: Cookies) -> tuple[Reply | None, bool]:
        """The reply (None: no reply), and whether the request was first sent inside the window: what counts."""
        first = time.monotonic()
        try:
            reply = await client.post(route, body, cookies, [])
        except TransportFailure:
            return None, inside(first)
        if reply.status == 200 and inside(first):
            tally.total.append(time.monotonic() - first)
        return reply, inside(first)

    collecting = [0.0, 0.0, 0.0]  # this collection's start; the window's longest and total, seconds

    def collector(phase: str, _info: dict) -> None:
        if phase == "start":
            collecting[0] = time.perf_counter()
        elif inside():
            took = time.perf_counter() - collecting[0]
            collecting[1], collecting[2] = max(collecting[1], took), collecting[2] + took

    gc.callbacks.append(collector)
    preparation = asyncio.Semaphore(preparing)
    unprepared = sessions
    prepared = asyncio.Event()

    async def session(client: ServerClient) -> None:
        nonlocal unprepared, window
        joins = random.randrange(8)
        # The first episode joins at a random step, so the measured load is the steady mix of routes (seeds, parses,
        # verifies, closes) from its first request. The steps before it are played first, a few sessions at a time
        # and unmeasured, so that preparing thousands of sessions never floods the server; then every session
        # starts at a random moment within one think time, as thousands of rollouts' model turns do.
        async with preparation:
            episode = await prepare(client, joins)
        unprepared -= 1
        if not unprepared:
            # What the sessions hold is long-lived: out of the collector's sight, a full collection would scan
            # every session's objects (seconds at tens of thousands) and stall the whole load at once.
            gc.collect()
            gc.freeze()
            steady = time.monotonic()
            window = (steady + warmup, steady + warmup + seconds)
            prepared.set()
        await prepared.wait()
        await asyncio.sleep(random.uniform(0, think))
        while time.monotonic() < window[1]:
            if episode is None:
                episode, joins = new_episode(), 0
            cookies, steps = episode
            for step in range(joins, len(steps)):
                if step > joins:
                    await asyncio.sleep(think)
                if time.monotonic() > window[1]:  # measured: close what is open, so no session outlives the run
                    if steps[step][0] != "seed_session":
                        await send(client, *steps[-1], cookies)
                    return
                if not await played(client, steps[step], cookies):
                    await send(client, *steps[-1], cookies)  # the episode is lost: release it, start another
                    tally.episodes_failed += 1
                    break
            else:
                tally.episodes += 1  # every episode that ended, in the window or not
            episode = None
            await asyncio.sleep(think)

    def new_episode() -> tuple[Cookies, list]:
        nonlocal sequence
        sequence += 1
        return Cookies(follow=True), rollout_steps(tasks[sequence % len(tasks)], sequence)

    async def prepare(client: ServerClient, joins: int) -> tuple[Cookies, list] | None:
        episode = new_episode()
        for step in episode[1][:joins]:
            if not await played(client, step, episode[0]):
                await send(client, *episode[1][-1], episode[0])
                tally.episodes_failed += 1
                return None
        return episode

    async def played(client: ServerClient, step: tuple[str, dict], cookies: Cookies) -> bool:
        route, body = step
        reply, counted = await send(client, route, body, cookies)
        good = (
            reply is not None
            and reply.status == 200
            and (route != "verify" or (reply.json_or_none() or {}).get("reward") == 1.0)
        )
        if good:
            tally.ok += counted
        else:  # wherever it falls: a failure is never outside the measurement
            tally.fail(f"{route} {reply.status if reply else 'no reply'} {reply.text[:120] if reply else ''!r}")
        return good

    retries = Retries(attempts=1) if never_retry else Retries(deadline=give_up)
    async with ServerClient(
        url, timeout=give_up, connections=connections, observer=observe, retries=retries, trace_configs=[tracing]
    ) as client:
        if never_retry:
            client.window = _NoWindow()
        await asyncio.gather(*(session(client) for _ in range(sessions)))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.monotonic() - began
    return {
        "sessions": sessions,
        "think": think,
        "seconds": seconds,
        "never_retry": never_retry,
        "ok": tally.ok,
        "failed": tally.failed,
        "rejected": tally.rejected,
        "episodes": tally.episodes,
        "episodes_failed": tally.episodes_failed,
        "failure_samples": tally.failures,
        "admitted": tally.admitted,
        "total": tally.total,
        "pool_wait": tally.pool_wait,
        "server": tally.server,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "wall_seconds": wall,
        "pid": os.getpid(),
        "prepared_seconds": window[0] - warmup - began,
        "client_gc_longest_ms": 1e3 * collecting[1],
        "client_gc_ms": 1e3 * collecting[2],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--think", type=float, required=True, help="seconds before each request")
    parser.add_argument("--seconds", type=float, default=60.0, help="the measured window")
    parser.add_argument(
        "--preparing",
        type=int,
        default=24,
        help="sessions that play their first steps at once before the load starts (default 24)",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        help="seconds from the start of the load to the window (default: a quarter of the think time + 5)",
    )
    parser.add_argument("--connections", type=int, default=512, help="the shared pool's size (default 512)")
    parser.add_argument(
        "--give-up",
        type=float,
        default=600.0,
        help="a request not answered by then fails (the client's retry deadline)",
    )
    parser.add_argument(
        "--never-retry", action="store_true", help="a trainer's plain client: each request sent once, no send window"
    )
    parser.add_argument("--out", type=Path, help="write the result here instead of to standard output")
    options = parser.parse_args()
    warmup = options.warmup if options.warmup is not None else options.think / 4 + 5
    emit(
        uvloop.run(
            run(
                options.url,
                options.sessions,
                options.think,
                options.seconds,
                warmup,
                options.connections,
                options.give_up,
                options.preparing,
                options.never_retry,
            )
        ),
        options.out,
    )


if __name__ == "__main__":
    main()
