"""The benchmark's load generator: whole rollouts at a fixed concurrency, from its own process, with aiohttp.

    python bench/loadgen.py --url http://127.0.0.1:8000 --concurrency 64 --seconds 15 [--warmup 3]

Prints one JSON object: rollouts and requests completed in the measured window, per-route latency samples,
errors, and the CPU seconds this process used (so the report can say how much of the machine the client
took). An httpx load client saturates at a few hundred requests/s on this machine; aiohttp does not. The client is
kept cheap because it shares the server's cores: it runs on uvloop and carries each rollout's session cookie itself
(harness/cookies.py; aiohttp's cookie jar and its Set-Cookie parsing took ~17% of its time under cProfile).
`--plain-client` runs it as it was before, for bench/client_cost.py, which measures what the two cost against one
server.

A rollout is the 8 requests of an RL episode as NeMo Gym's single_agent_turn drives it: episode seed,
sec_filing_search, parse_html_page, retrieve_information twice, submit_final_result, verify, close_session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import aiohttp
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finsec.corpus.generate import questions  # noqa: E402
from finsec_client.client import CLIENT_HEADERS  # noqa: E402
from harness.cookies import cookie_header, take_cookies  # noqa: E402
from harness.episodes import rollout_steps  # noqa: E402


async def run(
    url: str,
    concurrency: int,
    seconds: float,
    warmup: float,
    rollout_prefix: bool = False,
    no_disconnect_watch: bool = False,
    plain_client: bool = False,
) -> dict:
    """Drive `concurrency` rollout loops; measure the `seconds` after the warm-up.

    The window opens once `warmup` has passed and every loop has finished one rollout (or a minute more has), so
    it sees steady state even at 1024 in flight, where one rollout lasts several seconds. Inside it, every request and
    rollout that *ends* there counts, whenever it began: counting only rollouts that begin inside the window drops the
    work in flight at its edges, which at high concurrency is most of it. Only successful requests count (a 200,
    and for verify the right reward); any other answer is an error.
    """
    tasks = questions()
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    counts = {"rollouts": 0, "requests": 0}
    start = time.monotonic()
    window = [float("inf"), float("inf")]  # [opens, closes], set by open_window
    cycled = 0
    everyone_cycled = asyncio.Event()
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=600)
    sequence = 0

    def inside(moment: float) -> bool:
        return window[0] <= moment <= window[1]

    async def open_window() -> None:
        await asyncio.sleep(warmup)
        try:  # a server that stalls never lets every loop finish: measure what it does after a minute
            await asyncio.wait_for(everyone_cycled.wait(), 60)
        except TimeoutError:
            pass
        window[0] = time.monotonic()
        window[1] = window[0] + seconds

    async def worker(w: int) -> None:
        nonlocal sequence, cycled
        cookies: dict[str, str] = {}  # this rollout's, sent by hand: no jar shared between rollouts
        # unsafe: keep cookies for an IP-address host
        jar = aiohttp.CookieJar(unsafe=True) if plain_client else aiohttp.DummyCookieJar()
        async with aiohttp.ClientSession(
            base_url=url,
            connector=connector,
            connector_owner=False,
            cookie_jar=jar,
            timeout=timeout,
            headers=CLIENT_HEADERS if no_disconnect_watch else None,
        ) as session:
            first = True
            while time.monotonic() < window[1]:
                sequence += 1
                cookies.clear()
                jar.clear()
                steps = rollout_steps(tasks[sequence % len(tasks)], sequence)
                base = f"/ng-rollout/bench-{sequence}/" if rollout_prefix else "/"  # contract §A.0
                ok = True
                for route, body in steps:
                    sent = time.perf_counter()
                    try:
                        async with session.post(base + route, json=body, headers=cookie_header(cookies)) as response:
                            payload = await response.read()
                            status = response.status
                            if not plain_client:
                                take_cookies(response.headers.getall("Set-Cookie", []), cookies)
                    except aiohttp.ClientError as error:
                        payload, status = repr(error).encode(), 0
                    elapsed = time.perf_counter() - sent
                    if status != 200 or (route == "verify" and json.loads(payload).get("reward") != 1.0):
                        ok = False
                        errors.append(f"{route} {status} {payload[:160]!r}")
                    elif inside(time.monotonic()):
                        latencies[route].append(elapsed)
                        counts["requests"] += 1
                if ok and inside(time.monotonic()):
                    counts["rollouts"] += 1
                if first:
                    first, cycled = False, cycled + 1
                    if cycled == concurrency:
                        everyone_cycled.set()

    opener = asyncio.create_task(open_window())
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    await opener
    await connector.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "concurrency": concurrency,
        "seconds": seconds,
        **counts,
        "errors": len(errors),
        "error_samples": errors[:5],
        "latencies": latencies,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "wall_seconds": time.monotonic() - start,
        "warmup_seconds": window[0] - start,
        "pid": os.getpid(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rollout-prefix", action="store_true", help="each rollout's requests under /ng-rollout/<id>/")
    parser.add_argument(
        "--no-disconnect-watch",
        action="store_true",
        help="send finsec_client.client.CLIENT_HEADERS, as the project's rollout client does",
    )
    parser.add_argument(
        "--plain-client",
        action="store_true",
        help="the client as it was before 2026-12-02: asyncio's loop and aiohttp's cookie jar "
        "(bench/client_cost.py compares the two)",
    )
    parser.add_argument("--out", type=Path, help="write the result here instead of to standard output")
    options = parser.parse_args()
    runner = asyncio.run if options.plain_client else uvloop.run
    emit(
        runner(
            run(
                options.url,
                options.concurrency,
                options.seconds,
                options.warmup,
                options.rollout_prefix,
                options.no_disconnect_watch,
                options.plain_client,
            )
        ),
        options.out,
    )


def emit(result: dict, out: Path | None) -> None:
    """A load generator's result as one JSON object, to `out` or to standard output."""
    text = json.dumps(result)
    if out:
        out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
