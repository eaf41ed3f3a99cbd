"""Benchmark: what a Serve replica costs per request before the app runs, the floor under the per-core target.

    .venv/bin/python bench/serve_floor.py      # ~3 minutes

One trivial FastAPI route (a JSON body in, `{"ok": true}` out), served two ways, each in its own process tree:
- `uvicorn`: the route in one plain uvicorn process (as bench/serve_rollouts.py's baseline serves the app);
- `serve`: the same route in one Serve replica behind Serve's HAProxy ingress, with the project's tuning
  (deployments/serve_tuning.py) and no access log, as `finsec serve` runs the app;
- `serve-no-disconnect-watch`: the same, with every request carrying `x-request-disconnect-disabled: ?1`, which
  tells the replica not to watch the client for a disconnect: it then awaits the app directly instead of
  starting a receive task and a request task and waiting on both.
An aiohttp client in its own process drives it at concurrency 32; the server's CPU per request is read from
/proc over the measured window (the client left out), in interleaved rounds. Writes
bench/results/serve_floor.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, ROOT, machine, table, write_report  # noqa: E402
from serve_rollouts import _cpu_ticks, _role, _tree  # noqa: E402

from finsec.net.ports import free_port  # noqa: E402

CONFIGS = ("uvicorn", "serve", "serve-no-disconnect-watch")
NO_DISCONNECT_WATCH = {"x-request-disconnect-disabled": "?1"}  # Serve's header (ray.serve._private.constants)
CONCURRENCY = 32
CLIENT = """
import asyncio, json, resource, sys, time
import aiohttp
url, concurrency, seconds, headers = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
async def main():
    done = 0
    async with aiohttp.ClientSession(headers=headers) as session:
        end = time.monotonic() + seconds
        async def loop():
            nonlocal done
            while time.monotonic() < end:
                async with session.post(url + "/x", json={"a": 1}) as reply:
                    await reply.read()
                    done += reply.status == 200
        await asyncio.gather(*(loop() for _ in range(concurrency)))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"requests": done, "cpu_seconds": usage.ru_utime + usage.ru_stime}))
asyncio.run(main())
"""


def app():
    from fastapi import FastAPI

    api = FastAPI()

    @api.post("/x")
    async def x(body: dict) -> dict:
        return {"ok": True}

    return api


def serve(config: str, port: int) -> None:
    """Run one configuration until stdin closes; print its URL first."""
    if config == "uvicorn":
        import asyncio

        import uvicorn

        server = uvicorn.Server(uvicorn.Config(app(), host="127.0.0.1", port=port, log_level="warning"))

        async def until_stdin_closes():
            task = asyncio.create_task(server.serve())
            await asyncio.to_thread(sys.stdin.read)
            server.should_exit = True
            await task

        print(f"READY http://127.0.0.1:{port}", flush=True)
        asyncio.run(until_stdin_closes())
        return
    sys.path.insert(0, str(ROOT))
    from ray import serve as ray_serve

    from deployments import local

    url = local.start_ray_and_serve(port, ingress="haproxy")
    floor = ray_serve.deployment(max_ongoing_requests=256, ray_actor_options={"num_cpus": 0})(
        ray_serve.ingress(app())(type("Floor", (), {}))
    )
    ray_serve.run(floor.bind(), name="floor", route_prefix="/", logging_config={"enable_access_log": False})
    print("READY " + url, flush=True)
    sys.stdin.read()
    local.stop_ray_and_serve()


def measure(config: str, seconds: float) -> dict:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", config, "--port", str(free_port())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        url = next(line.split()[1] for line in process.stdout if line.startswith("READY "))
        headers = NO_DISCONNECT_WATCH if config == "serve-no-disconnect-watch" else {}
        drive(url, 3.0, headers)  # warm
        pids = _tree(process.pid)
        before, began = {pid: _cpu_ticks(pid) for pid in pids}, time.monotonic()
        client = drive(url, seconds, headers)
        wall = time.monotonic() - began
        spent: dict[str, float] = defaultdict(float)
        for pid in pids:
            if (ticks := _cpu_ticks(pid)) >= before[pid]:
                spent[_role(pid)] += (ticks - before[pid]) / os.sysconf("SC_CLK_TCK")
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
    n = client["requests"]
    return {
        "requests_per_s": n / seconds,
        "server_cpu_us_per_request": 1e6 * sum(spent.values()) / n,
        "cpu_us_per_request_by_process": {role: 1e6 * s / n for role, s in spent.items()},
        "client_cpu_share": client["cpu_seconds"] / (wall * os.cpu_count()),
    }


def drive(url: str, seconds: float, headers: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, url, str(CONCURRENCY), str(seconds), json.dumps(headers)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        return serve(options.serve, options.port)
    runs: dict[str, list[dict]] = defaultdict(list)
    for round_ in range(options.rounds):
        for config in CONFIGS if round_ % 2 == 0 else CONFIGS[::-1]:
            runs[config].append(measure(config, options.seconds))
            print(config, f"{runs[config][-1]['server_cpu_us_per_request']:.0f} us a request", flush=True)
    results = {"machine": machine(), "concurrency": CONCURRENCY, "seconds": options.seconds, "runs": runs}
    (RESULTS / "serve_floor.json").write_text(json.dumps(results, indent=1))
    print(write_report("serve_floor.md", render(results)))


def render(results: dict) -> str:
    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"

    runs = results["runs"]
    rows = []
    for config, rounds in runs.items():
        roles = sorted({role for r in rounds for role in r["cpu_us_per_request_by_process"]})
        by_process = ", ".join(
            f"{role} {statistics.median(r['cpu_us_per_request_by_process'].get(role, 0) for r in rounds):.0f}"
            for role in roles
        )
        rows.append(
            [
                config,
                spread([r["requests_per_s"] for r in rounds]),
                spread([r["server_cpu_us_per_request"] for r in rounds]),
                by_process,
                f"{100 * statistics.median(r['client_cpu_share'] for r in rounds):.0f}%",
            ]
        )

    def cpu(config: str) -> float:
        return statistics.median(r["server_cpu_us_per_request"] for r in runs[config])

    floor = cpu("serve") - cpu("uvicorn")
    watch = []
    if "serve-no-disconnect-watch" in runs:
        watch = [
            "",
            f"Without the disconnect watch (`x-request-disconnect-disabled: ?1` on every request) the replica "
            f"path costs {cpu('serve-no-disconnect-watch') - cpu('uvicorn'):.0f} us over uvicorn: the watch "
            f"itself is {cpu('serve') - cpu('serve-no-disconnect-watch'):.0f} us a request.",
        ]
    return (
        "\n".join(
            [
                "# The floor: what a Serve replica behind HAProxy costs per request before the app runs",
                "",
                f"{results['machine']}. A trivial FastAPI route at concurrency {results['concurrency']}, "
                f"{results['seconds']:.0f} s measured, {len(runs['serve'])} interleaved rounds (median and range). Server CPU "
                "per request: every process of the configuration over the window, the load generator left out. Produced "
                "by `.venv/bin/python bench/serve_floor.py`.",
                "",
                table(
                    [
                        "config",
                        "requests/s",
                        "server CPU us per request",
                        "by process (us, median)",
                        "load-generator CPU share",
                    ],
                    rows,
                ),
                "",
                f"Serve's replica and its HAProxy hop add **{floor:.0f} us of CPU per request** over plain uvicorn before "
                f"any app code runs. A rollout is 8 requests (bench/serve_rollouts.py), so about {8 * floor / 1000:.1f} ms "
                "of CPU per rollout is Serve's own, whatever the app does: the floor under the Serve path's per-core ratio "
                "to the one-process baseline.",
                *watch,
            ]
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
