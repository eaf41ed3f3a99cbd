"""Benchmark: what sharing a core costs the one-process baseline, a check of the Serve path's per-call tax.

    .venv/bin/python bench/core_sharing.py      # ~2 minutes

The baseline of bench/serve_rollouts.py (the app in one uvicorn process) is pinned to core 0, and the load
generator (bench/loadgen.py) runs at concurrency 64 pinned either to core 1 (as in serve_rollouts, where the
baseline's server has a core to itself) or to core 0 beside it. The server's own CPU a request is read from
/proc inside each measured window, in interleaved rounds. Writes bench/results/core_sharing.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, ROOT, machine, run_loadgen, table, write_report  # noqa: E402
from serve_rollouts import Server, cpu_times  # noqa: E402

PLACEMENTS = {"load generator on the other core": "1", "load generator on the server's core": "0"}


def window(url: str, pid: int, core: str, seconds: float) -> dict:
    """One load-generator run; the server's CPU is sampled inside its measured window (it starts ~2 s in, after
    the interpreter's start and the 1 s warm-up), so start-up and the drain after it are left out."""
    sampler = ThreadPoolExecutor(1).submit(cpu_rate, pid, 2.5, seconds - 3.0)
    load = run_loadgen(url, 64, seconds, 1, prefix=["taskset", "-c", core])
    user, system = sampler.result()
    rate = load["requests"] / load["seconds"]
    return {
        "rollouts_per_s": load["rollouts"] / load["seconds"],
        "user_us_per_request": 1e6 * user / rate,
        "sys_us_per_request": 1e6 * system / rate,
    }


def cpu_rate(pid: int, after: float, seconds: float) -> tuple[float, float]:
    """The process's user and system CPU (cores) over `seconds`, from `after` seconds from now."""
    time.sleep(after)
    before = cpu_times(pid)
    time.sleep(seconds)
    ticks = os.sysconf("SC_CLK_TCK") * seconds
    return tuple((now - then) / ticks for now, then in zip(cpu_times(pid), before, strict=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0)
    options = parser.parse_args()
    if (os.cpu_count() or 1) < 2:
        print("core_sharing needs two cores")
        return
    server = Server("baseline", ROOT)
    runs: dict[str, list[dict]] = {name: [] for name in PLACEMENTS}
    try:
        subprocess.run(["taskset", "-a", "-p", "-c", "0", str(server.process.pid)], check=True, capture_output=True)
        window(server.url, server.process.pid, "1", 4.0)  # warm
        for round_ in range(options.rounds):
            for name in list(PLACEMENTS) if round_ % 2 == 0 else list(PLACEMENTS)[::-1]:
                runs[name].append(window(server.url, server.process.pid, PLACEMENTS[name], options.seconds))
                print(name, json.dumps(runs[name][-1]), flush=True)
    finally:
        server.stop()
    (RESULTS / "core_sharing.json").write_text(json.dumps({"machine": machine(), "runs": runs}, indent=1))

    def cell(name: str, key: str) -> str:
        values = [r[key] for r in runs[name]]
        return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"

    alone, shared = (statistics.median(r["user_us_per_request"] for r in runs[name]) for name in PLACEMENTS)
    print(
        write_report(
            "core_sharing.md",
            "\n".join(
                [
                    "# What sharing a core costs the one-process baseline",
                    "",
                    f"{machine()}. The baseline of bench/serve_rollouts.py pinned to core 0, its load generator at concurrency "
                    f"64 pinned to core 1 or to core 0 beside it; {options.rounds} interleaved rounds of {options.seconds:.0f} s "
                    "(median, range). Produced by `.venv/bin/python bench/core_sharing.py`.",
                    "",
                    table(
                        ["placement", "rollouts/s", "server user CPU us a request", "server system CPU us a request"],
                        [
                            [
                                name,
                                cell(name, "rollouts_per_s"),
                                cell(name, "user_us_per_request"),
                                cell(name, "sys_us_per_request"),
                            ]
                            for name in PLACEMENTS
                        ],
                    ),
                    "",
                    f"Sharing its core with one busy process costs the same server **{100 * (shared / alone - 1):.0f}% more "
                    "user CPU a request** for the same work (part of it may be that at half the rate each turn of its event "
                    "loop finds fewer requests to share it). On the Serve path every core is shared by several busy processes "
                    "(two replicas, two shards, HAProxy, the GCS, the load generator), which is where "
                    "bench/results/serve_rollouts_ceiling.md finds each Python call in a replica costing ~35% more than in "
                    "the baseline.",
                    "",
                ]
            ),
        )
    )


if __name__ == "__main__":
    main()
