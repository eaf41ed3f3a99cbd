"""The capacity benchmark's load generator: N concurrent sessions, each playing 8-request episodes with an agent's
think time before every request, from its own process, through the project's own rollout client
(finsec_client.client.ServerClient: one pool of connections, its retries and its send window), on uvloop.

    python bench/sessions_load.py --url http://127.0.0.1:8000 --sessions 8000 --think 10 --seconds 60

Prints one JSON object. A session starts at a random moment within its first think time (so the load is smooth,
as thousands of rollouts' model turns are) and joins its first episode at a random step, then plays episodes
back to back (bench/loadgen.py's rollout_steps:
seed, search, parse, retrieve twice, submit, verify, close), sleeping `think` seconds before each request. When
the window closes each session closes its open episode at once, so none outlives the run.

A 503 or 429 with Retry-After is backpressure: the client sends the request again as its `Retries` say, and
narrows its window; each such answer is counted as rejected, never as failed. A request fails when it gets any
other non-200, no reply, no answer within `--give-up` seconds, or (verify) a reward other than 1.0: failures and
episodes are counted over the whole run. Within the measured window (after `--warmup`), each request that ends
there counts as served and gives its admitted latency (the attempt that was answered 200, from asking the pool
for a connection: what an admitted request costs, as the client saw it), its server latency (that attempt from
its headers on the wire to the answer's: the client pool's own queue left out) and its total latency (first
attempt to answer: the window's queue and the backpressure waits included).
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

from loadgen import rollout_steps  # noqa: E402

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


async def run(url: str, sessions: int, think: float, seconds: float, warmup: float, connections: int,
              give_up: float) -> dict:
    tasks = questions()
    tally = _Tally()
    began = time.monotonic()
    window = (began + warmup, began + warmup + seconds)
    tracing = aiohttp.TraceConfig()  # the server's time apart from the client's own queue for a connection

    def inside() -> bool:
        return window[0] <= time.monotonic() <= window[1]

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

    async def send(client: ServerClient, route: str, body: dict, cookies: Cookies) -> Reply | None:
        first = time.monotonic()
        try:
            reply = await client.post(route, body, cookies, [])
        except TransportFailure:
            return None
        if reply.status == 200 and inside():
            tally.total.append(time.monotonic() - first)
        return reply

    async def session(client: ServerClient) -> None:
        nonlocal sequence
        # The first episode joins at a random step, the steps before it played at once, so that the window sees
        # the steady mix of routes (seeds, parses, verifies, closes) rather than every session's first steps.
        await asyncio.sleep(random.uniform(0, think))
        joins = random.randrange(8)
        while time.monotonic() < window[1]:
            sequence += 1
            cookies = Cookies(follow=True)
            ok = True
            steps = rollout_steps(tasks[sequence % len(tasks)], sequence)
            for step, (route, body) in enumerate(steps):
                await asyncio.sleep(think if step >= joins else random.uniform(0, think / 8))
                if time.monotonic() > window[1]:  # measured: close what is open, so no session outlives the run
                    if route != "seed_session":
                        await send(client, *steps[-1], cookies)
                    return
                reply = await send(client, route, body, cookies)
                good = reply is not None and reply.status == 200 and (
                    route != "verify" or (reply.json_or_none() or {}).get("reward") == 1.0)
                if good:
                    tally.ok += inside()
                else:  # wherever it falls: a failure is never outside the measurement
                    tally.fail(f"{route} {reply.status if reply else 'no reply'} {reply.text[:120] if reply else ''!r}")
                    ok = False
                    await send(client, *steps[-1], cookies)  # the episode is lost: release it, start another
                    break
            joins = 0
            tally.episodes += ok  # every episode that ended, in the window or not
            tally.episodes_failed += not ok

    retries = Retries(deadline=give_up)
    async with ServerClient(url, timeout=give_up, connections=connections, observer=observe, retries=retries,
                            trace_configs=[tracing]) as client:
        await asyncio.gather(*(session(client) for _ in range(sessions)))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.monotonic() - began
    return {"sessions": sessions, "think": think, "seconds": seconds, "ok": tally.ok, "failed": tally.failed,
            "rejected": tally.rejected, "episodes": tally.episodes, "episodes_failed": tally.episodes_failed,
            "failure_samples": tally.failures, "admitted": tally.admitted, "total": tally.total,
            "pool_wait": tally.pool_wait, "server": tally.server,
            "cpu_seconds": usage.ru_utime + usage.ru_stime, "wall_seconds": wall, "pid": os.getpid()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--think", type=float, required=True, help="seconds before each request")
    parser.add_argument("--seconds", type=float, default=60.0, help="the measured window")
    parser.add_argument("--warmup", type=float, help="seconds before the window (default: two think times + 5, "
                        "when the sessions have started and caught up)")
    parser.add_argument("--connections", type=int, default=512, help="the shared pool's size (default 512)")
    parser.add_argument("--give-up", type=float, default=600.0,
                        help="a request not answered by then fails (the client's retry deadline)")
    parser.add_argument("--out", type=Path, help="write the result here instead of to standard output")
    options = parser.parse_args()
    warmup = options.warmup if options.warmup is not None else 2 * options.think + 5
    result = json.dumps(uvloop.run(run(options.url, options.sessions, options.think, options.seconds, warmup,
                                       options.connections, options.give_up)))
    if options.out:
        options.out.write_text(result)
    else:
        print(result)


if __name__ == "__main__":
    main()
