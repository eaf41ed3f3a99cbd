"""Benchmark: rollouts per second through the Serve app against one plain uvicorn process, side by side.

Both serve the same FastAPI app on the embedded corpus. The baseline is that app in a single uvicorn process
with the in-process session store (what NeMo Gym's single-process server amounts to); the subject is the Ray
Serve application (ingress replicas + session-store shard actors). The same load generator drives both with
the same rollout: seed, sec_filing_search, parse_html_page, retrieve_information, verify, close_session.

    .venv/bin/python bench/serve_rollouts.py [--rollouts 300] [--concurrency 32] [--replicas 2] [--shards 4]

Writes bench/results/serve_rollouts.md (and .json). On a 2-core machine the Serve app cannot win: its proxy,
replicas, shards and the load generator share two cores, and every session operation is an actor round trip.
The point of the numbers is the cost of that architecture per request, measured, not a claim of speed-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import ROOT, machine, table, write_report  # noqa: E402

from deployments.corpus.generate import questions  # noqa: E402
from deployments.local import deploy, free_port, start_ray_and_serve, undeploy  # noqa: E402
from deployments.settings import Settings  # noqa: E402

ROUTES = ("seed", "sec_filing_search", "parse_html_page", "retrieve_information", "verify", "close_session")


def serve_baseline(port: int) -> None:
    """The baseline server: run as a subprocess of this script."""
    import uvicorn

    from deployments.api import create_api
    from deployments.edgar.limiter import LocalRateLimiter
    from deployments.services import build_services
    from session_store.shard import ShardService
    from session_store.store import LocalSessionStore

    settings = Settings(app_name="bench-baseline")
    store = LocalSessionStore([ShardService(settings.session_ttl_seconds)])
    app = create_api(settings, lambda: build_services(settings, store, LocalRateLimiter(10, 1.25)), "bench")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


async def rollout(client: httpx.AsyncClient, task: dict, latencies: dict[str, list[float]]) -> None:
    sid = f"resources-session-{uuid.uuid4().hex}"
    episode = {"rollout_id": sid[-12:], "attempt": 0}
    answer = {"type": "function_call", "name": "submit_final_result", "call_id": "c",
              "arguments": json.dumps({"final_result": task["expected_answer"]})}
    steps = (
        ("seed", "/seed_session", {"resources_session_id": sid, "episode_id": episode,
                                   "task_id": {"taskset": "bench", "task_id": sid}, "task_data": {}}),
        ("sec_filing_search", "/sec_filing_search", {"ticker": task["ticker"], "form_types": [task["form"]]}),
        ("parse_html_page", "/parse_html_page", {"url": task["url"], "key": "filing"}),
        ("retrieve_information", "/retrieve_information", {"prompt": task["question"] + " {{filing}}"}),
        ("verify", "/verify", {"responses_create_params": {"input": [{"role": "user", "content": task["question"]}]},
                               "response": {"output": [answer]}, "question": task["question"],
                               "expected_answer": task["expected_answer"]}),
        ("close_session", "/close_session", {"resources_session_id": sid, "episode_id": episode}),
    )
    for name, path, body in steps:
        started = time.perf_counter()
        response = await client.post(path, json=body)
        latencies[name].append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"{path} answered {response.status_code}: {response.text[:200]}")


async def drive(base_url: str, rollouts: int, concurrency: int) -> dict:
    tasks = questions()
    todo = list(range(rollouts))
    latencies: dict[str, list[float]] = defaultdict(list)

    async def worker() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:
            while todo:
                client.cookies.clear()
                await rollout(client, tasks[todo.pop() % len(tasks)], latencies)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "rollouts_per_second": rollouts / seconds,
        "requests_per_second": rollouts * len(ROUTES) / seconds,
        "p50_ms": {r: 1000 * statistics.median(latencies[r]) for r in ROUTES},
        "p90_ms": {r: 1000 * statistics.quantiles(latencies[r], n=10)[-1] for r in ROUTES},
    }


def wait_for(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(url)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--haproxy", action="store_true", help="Serve's HAProxy ingress (RAY_SERVE_ENABLE_HA_PROXY)")
    parser.add_argument("--baseline-server", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.baseline_server:
        serve_baseline(options.baseline_server)
        return

    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--baseline-server", str(port)], cwd=ROOT)
    try:
        wait_for(f"http://127.0.0.1:{port}")
        asyncio.run(drive(f"http://127.0.0.1:{port}", 20, 4))  # warm: corpus parsed, indexes built
        baseline = asyncio.run(drive(f"http://127.0.0.1:{port}", options.rollouts, options.concurrency))
    finally:
        server.terminate()
        server.wait()

    if options.haproxy:
        os.environ["RAY_SERVE_ENABLE_HA_PROXY"] = "1"
    base_url = start_ray_and_serve()
    settings = Settings(app_name="bench-serve", num_shards=options.shards)
    deploy(settings, base_url, replicas=options.replicas)
    try:
        asyncio.run(drive(base_url, 20, 4))
        served = asyncio.run(drive(base_url, options.rollouts, options.concurrency))
    finally:
        undeploy(settings)

    ratio = served["rollouts_per_second"] / baseline["rollouts_per_second"]
    rows = [[route, f"{baseline['p50_ms'][route]:.1f} ({baseline['p90_ms'][route]:.1f})",
             f"{served['p50_ms'][route]:.1f} ({served['p90_ms'][route]:.1f})"] for route in ROUTES]
    markdown = "\n".join([
        "# Rollouts through the Serve app vs one uvicorn process",
        "",
        f"{machine()}. {options.rollouts} rollouts, {options.concurrency} in flight, 6 requests each; Serve: "
        f"{options.replicas} ingress replicas, {options.shards} shards, "
        f"{'HAProxy' if options.haproxy else 'the default'} proxy. Load generator: httpx, same process tree.",
        "",
        f"- one uvicorn process: **{baseline['rollouts_per_second']:.1f} rollouts/s** "
        f"({baseline['requests_per_second']:.0f} requests/s)",
        f"- Serve app: **{served['rollouts_per_second']:.1f} rollouts/s** ({served['requests_per_second']:.0f} "
        f"requests/s)",
        f"- ratio Serve / single process: **{ratio:.2f}x**",
        "",
        "## Latency per route, ms: p50 (p90)",
        "",
        table(["route", "one uvicorn process", "Serve app"], rows),
        "",
        "What the ratio means: on one small machine the Serve app pays for its proxy hop and one actor round trip",
        "per session operation, with every process competing for the same two cores. What it buys is in the",
        "tests, not here: any replica serves any session, a replica or shard can die without a silent loss, TTL",
        "holds cluster-wide, and replicas scale out across machines.",
    ])
    name = "serve_rollouts_haproxy" if options.haproxy else "serve_rollouts"
    write_report(f"{name}.md", markdown)
    (ROOT / f"bench/results/{name}.json").write_text(json.dumps(
        {"baseline": baseline, "serve": served, "ratio": ratio, "options": vars(options)}, indent=1))
    print(markdown)


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    main()
