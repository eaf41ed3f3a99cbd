"""Benchmark: what the load generator itself costs, as it is and as it was, against the same server.

    .venv/bin/python bench/client_cost.py      # ~4 minutes

The load generator shares the server's two cores (harness/ceiling.py), so its CPU a rollout is CPU the Serve path
cannot have. bench/loadgen.py now runs on uvloop and carries the session cookie itself; `--plain-client` runs it
as before (asyncio's loop, aiohttp's cookie jar). Each server (the one-process baseline and the Serve path over
Redis) is started once, then the two clients take turns at concurrency 64 in interleaved rounds. The client's CPU a
rollout is its own CPU over the rollouts it completed; the server's comes from /proc inside the window.
Writes bench/results/client_cost.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, ROOT, machine, table, write_report  # noqa: E402
from serve_rollouts import Server, client_flags, cpu_by_role, load, rollouts_per_s  # noqa: E402

SERVERS = ("baseline", "redis-nowatch-haproxy")
CLIENTS = {"as before (--plain-client)": ["--plain-client"], "as now": []}
LEVEL = 64


def window(server: Server, config: str, flags: list[str], seconds: float) -> dict:
    sampler = ThreadPoolExecutor(1).submit(cpu_by_role, server, 3.0, max(1.0, seconds - 3))
    measured, shares = load(server.url, LEVEL, seconds, 1.0, client_flags(config) + flags), sampler.result()
    rate, cores = rollouts_per_s(measured), os.cpu_count()
    return {
        "rollouts_per_s": rate,
        "errors": measured["errors"],
        "client_ms_per_rollout": measured["client_cpu_share"] * cores * 1000 / rate if rate else None,
        "server_ms_per_rollout": sum(shares.values()) * cores * 1000 / rate if rate else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    options = parser.parse_args()
    runs: dict[str, dict[str, list[dict]]] = {config: {name: [] for name in CLIENTS} for config in SERVERS}
    for config in SERVERS:
        server = Server(config, ROOT)
        try:
            load(server.url, LEVEL, 4.0, 1.0, client_flags(config))  # warm
            for round_ in range(options.rounds):
                for name in list(CLIENTS) if round_ % 2 == 0 else list(CLIENTS)[::-1]:
                    runs[config][name].append(window(server, config, CLIENTS[name], options.seconds))
                    print(config, name, json.dumps(runs[config][name][-1]), flush=True)
        finally:
            server.stop()
    (RESULTS / "client_cost.json").write_text(json.dumps({"machine": machine(), "runs": runs}, indent=1))
    print(write_report("client_cost.md", render(runs, options)))


def spread(values: list[float], digits: int = 1) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def render(runs: dict, options: argparse.Namespace) -> str:
    rows = []
    for config, clients in runs.items():
        before, now = (clients[name] for name in CLIENTS)
        gain = [
            b2["rollouts_per_s"] / b1["rollouts_per_s"] for b1, b2 in zip(before, now, strict=False)
        ]  # within each round
        for name, windows in clients.items():
            rows.append(
                [
                    config,
                    name,
                    spread([w["rollouts_per_s"] for w in windows]),
                    spread([w["client_ms_per_rollout"] for w in windows], 2),
                    spread([w["server_ms_per_rollout"] for w in windows], 2),
                    spread(gain, 2) + "x" if windows is now else "-",
                ]
            )
    return "\n".join(
        [
            "# What the load generator costs: as it is and as it was",
            "",
            f"{machine()}. One server per configuration, the two clients (bench/loadgen.py with and without "
            f"`--plain-client`) taking turns at concurrency {LEVEL} in {options.rounds} interleaved rounds of "
            f"{options.seconds:.0f} s (median, range). Produced by `.venv/bin/python bench/client_cost.py`.",
            "",
            table(
                [
                    "server",
                    "client",
                    "rollouts/s",
                    "client CPU ms a rollout",
                    "server CPU ms a rollout",
                    "rollouts/s over the client as before, same round",
                ],
                rows,
            ),
            "",
            "The client's CPU a rollout is its own (the warm-up and drain included, as serve_rollouts counts it); the "
            "server's is every process of the configuration inside the window. The one-process baseline's server "
            "has a core to itself, so a cheaper client moves its rate little; the Serve path shares both cores with "
            "the client, so what the client stops spending is CPU the replicas get.",
            "",
        ]
    )


if __name__ == "__main__":
    main()
