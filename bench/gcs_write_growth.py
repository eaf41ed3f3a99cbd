"""Why the GCS mark store's writes slow over a capacity round: one load held on one app, window after window.

    .venv/bin/python bench/gcs_write_growth.py                        # ~25 min; results/gcs_write_growth.{md,json}
    .venv/bin/python bench/gcs_write_growth.py --perf 20              # and a profile of the GCS in the first and last

In capacity round 5 a shard's mark write with GCS marks took 2.9 ms with 3,000 fences held and 5.1 ms with
50,000, at like request rates. This starts the app as `configs/serve.yaml` ships it (GCS marks), then runs
bench/sessions_load.py at one session count and think time for `--windows` windows back to back, each in its own
process as capacity points are. After each window: the shards' mean time a batch and a mark write, the fences
held, and each part of the app's CPU over the window (its processes by role: the GCS, the shards, the ingress
replicas...), per request. With `--perf S`, `perf record` samples the GCS process for S seconds in the middle of
the first and the last window, and the report lists where its CPU went in each.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, machine, write_report  # noqa: E402
from capacity import App, point  # noqa: E402
from serve_rollouts import _role, _rss_kb, _tree, cpu_times  # noqa: E402


def _cpu_by_role(pids: list[int]) -> dict[str, float]:
    spent: dict[str, float] = defaultdict(float)
    for pid in pids:
        spent[_role(pid)] += sum(cpu_times(pid)) / os.sysconf("SC_CLK_TCK")
    return spent


def _machine_ticks() -> tuple[int, int, int]:
    """The machine's busy, stolen and total CPU ticks so far (/proc/stat's first line)."""
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return user + nice + system + irq + softirq, steal, user + nice + system + idle + iowait + irq + softirq + steal


def _gcs_pid(pids: list[int]) -> int:
    return next(pid for pid in pids if _role(pid) == "GCS")


def _profile_into(found: list, pid: int, seconds: float, after: float) -> None:
    """Appends the GCS's own functions by their share of its sampled CPU (self time), the top 25."""
    time.sleep(after)
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "perf.data"
        subprocess.run(
            [
                "perf",
                "record",
                "-q",
                "-F",
                "499",
                "-e",
                "cpu-clock",
                "-p",
                str(pid),
                "-o",
                str(data),
                "--",
                "sleep",
                str(seconds),
            ],
            check=True,
            capture_output=True,
        )
        report = subprocess.run(
            ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "symbol", "-q"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    rows = []
    for line in report.splitlines():
        share, _, rest = line.strip().partition("%")
        try:
            rows.append((float(share), _short(rest.strip().rstrip(" -"))))
        except ValueError:
            continue
    found.append(rows[:25])


def _short(symbol: str) -> str:
    """A C++ symbol without its template arguments, with the start of them kept (what the containers hold)."""
    bare = symbol
    while (fewer := re.sub(r"<[^<>]*>", "", bare)) != bare:
        bare = fewer
    return bare if bare == symbol else f"{bare} ({symbol[:90]}...)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=5_000)
    parser.add_argument("--think", type=float, default=10.0, help="seconds")
    parser.add_argument("--seconds", type=float, default=60.0, help="each window's length")
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--out", default="gcs_write_growth", help="results/<out>.{md,json}")
    parser.add_argument("--perf", type=float, default=0.0, help="seconds of GCS profile in the first and last window")
    options = parser.parse_args()
    app = App("serve")
    windows = []
    try:
        for number in range(1, options.windows + 1):
            pids = _tree(app.server.process.pid)
            before, ticks = _cpu_by_role(pids), _machine_ticks()
            profiled: list[list[tuple[float, str]]] = []
            if options.perf and number in (1, options.windows):
                # the load generator prepares its sessions first: sample the middle of the measured window
                after = 30.0 + options.seconds / 2 - options.perf / 2
                thread = threading.Thread(
                    target=_profile_into, args=(profiled, _gcs_pid(pids), options.perf, after), daemon=True
                )
                thread.start()
            result = point(app, options.sessions, options.think, options.seconds)
            if options.perf and number in (1, options.windows):
                thread.join()
            after_cpu = _cpu_by_role(pids)
            busy, stolen, total = (b - a for a, b in zip(ticks, _machine_ticks(), strict=True))
            calls = result["shard_calls"]
            requests = result["requests_per_s"] * result.get("seconds", options.seconds)
            window = {
                "window": number,
                "requests_per_s": result["requests_per_s"],
                "agent_wait_p99_ms": result["total_p99_ms"],
                "batch_ms": calls["batch_us"] / max(calls["batches"], 1) / 1e3,
                "mark_write_ms": calls["mark_write_us"] / max(calls["mark_writes"], 1) / 1e3,
                "mark_writes": calls["mark_writes"],
                "fences_held": result["fences_held"],
                "gcs_mb": _rss_kb(_gcs_pid(pids)) / 1024,
                # CPU over the whole window (the load generator's preparing included), per request measured
                "cpu_ms_per_request": {
                    role: 1e3 * (after_cpu[role] - before.get(role, 0.0)) / max(requests, 1) for role in after_cpu
                },
                "gcs_cpu_us_per_mark_write": 1e6
                * (after_cpu["GCS"] - before.get("GCS", 0.0))
                / max(calls["mark_writes"], 1),
                # the controls: the load generator's own CPU (not the app's), and the machine's
                "load_generator_cpu_ms_per_request": 1e3 * result["client_cpu_seconds"] / max(requests, 1),
                "machine_busy": busy / max(total, 1),
                "machine_stolen": stolen / max(total, 1),
                "profile": profiled[0] if profiled else None,
            }
            windows.append(window)
            print(
                f"window {number}: {window['requests_per_s']:.0f} req/s, batch {window['batch_ms']:.2f} ms, mark "
                f"write {window['mark_write_ms']:.2f} ms, fences {window['fences_held']}, GCS "
                f"{window['cpu_ms_per_request'].get('GCS', 0):.3f} ms CPU a request",
                flush=True,
            )
    finally:
        app.stop()
    results = {"machine": machine(), "options": vars(options), "windows": windows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{options.out}.json").write_text(json.dumps(results, indent=1))
    write_report(f"{options.out}.md", render(results))


def render(results: dict) -> str:
    options, windows = results["options"], results["windows"]
    roles = sorted(
        {role for w in windows for role in w["cpu_ms_per_request"]},
        key=lambda r: -windows[-1]["cpu_ms_per_request"].get(r, 0),
    )
    lines = [
        "# The GCS mark store's writes over a long run at one load",
        "",
        f"{results['machine']}. `.venv/bin/python bench/gcs_write_growth.py --sessions {options['sessions']} "
        f"--think {options['think']:g} --windows {options['windows']}"
        + (f" --perf {options['perf']:g}`" if options["perf"] else "`")
        + f": the app as configs/serve.yaml ships it (GCS marks), {options['sessions']:,} sessions at "
        f"{options['think']:g} s think time, {options['seconds']:g} s windows back to back on one app. CPU is each "
        "role's over the window (the load generator's preparing of its sessions included) per request measured.",
        "",
        "| window | req/s | agent's wait p99 ms | shard ms a batch | ms a mark write | mark writes | fences held "
        "after | GCS MB | GCS CPU us a mark write | load generator CPU ms a request | machine busy / stolen | "
        + " | ".join(f"{r} CPU ms a request" for r in roles)
        + " |",
        "|---" * (11 + len(roles)) + "|",
    ]
    for w in windows:
        lines.append(
            f"| {w['window']} | {w['requests_per_s']:.0f} | {w['agent_wait_p99_ms'] or 0:.0f} | {w['batch_ms']:.2f} "
            f"| {w['mark_write_ms']:.2f} | {w['mark_writes']:,} | {w['fences_held']:,} | {w['gcs_mb']:.0f} | "
            f"{w['gcs_cpu_us_per_mark_write']:.0f} | {w['load_generator_cpu_ms_per_request']:.3f} | "
            f"{w['machine_busy']:.0%} / {w['machine_stolen']:.1%} | "
            + " | ".join(f"{w['cpu_ms_per_request'].get(r, 0):.3f}" for r in roles)
            + " |"
        )
    for w in windows:
        if w.get("profile"):
            lines += ["", f"Where the GCS's CPU went in window {w['window']} (perf, self time):", ""]
            lines += [f"- {share:.1f}% {symbol}" for share, symbol in w["profile"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
