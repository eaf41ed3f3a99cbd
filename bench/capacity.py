"""Capacity a cluster can be sized by: how many concurrent sessions the app holds at an agent's think time, in
OpenEnv's manner, and what admission does past that.

    .venv/bin/python bench/capacity.py --overload --plain               # the full sweep (hours; see --help)
    .venv/bin/python bench/capacity.py --configs serve --thinks 10,60 --rounds 1 --out capacity_quick

For each configuration (started here as users start it: `finsec serve configs/serve.yaml`; `redis` the same with
its marks in a private redis-server; `inprocess` as `finsec serve --in-process`; `serve-N` and `inprocess-N` the same
with N places a replica or the one process) and think time, session counts
double from a start until a point fails: fewer than 95% of requests answered, or the p99 of an agent's whole wait
for an answer over `--bound-ms`.
The largest count that passed is the capacity. Rounds interleave the configurations (this machine drifts between
passes), and a repetition starts at the capacity found before, so it measures that count and twice it; the
report gives each round's capacity and the median. With `--overload`, each configuration also runs at twice its
capacity: what admission does there (requests turned away, the admitted requests' p99 at the server, the
agent's wait, episodes completed). With `--plain`, a trainer's plain client (every request sent once, a 503 a
failure, as NeMo Gym's client) then runs at once, twice and four times the capacity: the share of its requests
answered, and its agents' wait.

Each point is one run of bench/sessions_load.py in its own process, through the project's own client (its CPU is
reported: it shares the server's cores). Memory per open session is the resident memory of all the
configuration's processes at the end of a point, less at rest, over the sessions (nearly every session holds an
open episode at any moment). Writes bench/results/<out>.{md,json}; `--append` adds rounds to an earlier run's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from functools import partial
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, FinsecServe, machine, write_report  # noqa: E402
from serve_rollouts import _rss_kb, _tree  # noqa: E402

CONFIGS = ("serve", "redis", "inprocess")
PLAIN_FACTORS = (1, 2, 4)
STARTS = {1: 500, 10: 2_000, 30: 8_000, 60: 10_000}  # the first round's: they pass through the points


class App:
    """One configuration, started as a user starts it, until `stop`."""

    def __init__(self, config: str):
        self.stack = ExitStack()
        env = {**os.environ}
        name, _, places = config.partition("-")
        if places:  # serve-N, inprocess-N: N places a replica or the one process (admission_running)
            env["FINSEC_ADMISSION_RUNNING"] = places
        if config == "redis":
            from harness.redis_server import running_redis

            env["FINSEC_MARK_STORE_URL"] = self.stack.enter_context(running_redis()).url
        self.server = FinsecServe(["--in-process"] if name == "inprocess" else [str(ROOT / "configs/serve.yaml")], env)
        self.url = self.server.url

    def rss_mb(self) -> float:
        return sum(_rss_kb(pid) for pid in _tree(self.server.process.pid)) / 1024

    def stop(self) -> None:
        self.server.stop()
        self.stack.close()


class Watch:
    """While a point runs: a health check every half second (its slowest answer, and how many were not a 200
    within 5 s), and the configuration's peak resident memory."""

    def __init__(self, app: App):
        self.app, self.slowest_health_s, self.health_failures, self.peak_mb = app, 0.0, 0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self._stop.wait(0.5):
                self.peak_mb = max(self.peak_mb, self.app.rss_mb())
                began = time.monotonic()
                try:
                    ok = client.get(self.app.url + "/healthz").status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.slowest_health_s = max(self.slowest_health_s, time.monotonic() - began)
                self.health_failures += not ok

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _shard_state(url: str) -> dict:
    return httpx.get(url + "/session_counters", timeout=60).json()


def point(app: App, sessions: int, think: float, seconds: float, never_retry: bool = False) -> dict:
    idle = app.rss_mb()
    before = _shard_state(app.url)
    with tempfile.NamedTemporaryFile(suffix=".json") as out, Watch(app) as watch:
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench/sessions_load.py"),
                "--url",
                app.url,
                "--sessions",
                str(sessions),
                "--think",
                str(think),
                "--seconds",
                str(seconds),
                "--out",
                out.name,
                *(["--never-retry"] if never_retry else []),
            ],
            check=True,
            timeout=30 * think + seconds + 1200,
        )
        busy = app.rss_mb()  # the load generator closes its sessions as it ends: read before they go
        raw = json.loads(Path(out.name).read_text())
    after = _shard_state(app.url)
    return {
        **summarize(raw, idle, busy),
        # where the shards' time went over the point, and the fences they hold after it (a round's points add up)
        "shard_calls": {k: v - before["shard_calls"][k] for k, v in after["shard_calls"].items()},
        "fences_held": after["held"]["fences"],
        "peak_mb": watch.peak_mb,
        "slowest_health_ms": 1e3 * watch.slowest_health_s,
        "health_failures": watch.health_failures,
    }


def summarize(raw: dict, idle_mb: float, busy_mb: float) -> dict:
    admitted = sorted(x for samples in raw["admitted"].values() for x in samples)
    waits = sorted(raw["pool_wait"])
    total = sorted(raw["total"])
    server = sorted(raw["server"])
    answered = raw["ok"] + raw["failed"]
    return {
        "sessions": raw["sessions"],
        "think": raw["think"],
        "success": raw["ok"] / answered if answered else 0.0,
        "requests_per_s": raw["ok"] / raw["seconds"],
        "rejected": raw["rejected"],
        "failed": raw["failed"],
        "failure_samples": raw["failure_samples"],
        "episodes": raw["episodes"],
        "episodes_failed": raw["episodes_failed"],
        "client_p50_ms": _ms(admitted, 0.5),
        "client_p99_ms": _ms(admitted, 0.99),
        "server_p50_ms": _ms(server, 0.5),
        "server_p99_ms": _ms(server, 0.99),
        "total_p50_ms": _ms(total, 0.5),
        "total_p99_ms": _ms(total, 0.99),
        "seconds": raw["seconds"],
        "pool_wait_p99_ms": _ms(waits, 0.99),
        "client_cpu_share": raw["cpu_seconds"] / (raw["wall_seconds"] * os.cpu_count()),
        "client_cpu_seconds": raw["cpu_seconds"],
        "idle_mb": idle_mb,
        "busy_mb": busy_mb,
        "kb_per_session": 1024 * (busy_mb - idle_mb) / raw["sessions"],
    }


def _ms(ordered: list[float], q: float) -> float | None:
    return 1e3 * ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else None


def passes(result: dict, bound_ms: float) -> bool:
    """What an agent sees: its requests answered, and its whole wait for an answer (backpressure's waits and the
    client's own queue included) under the bound. Past capacity the server keeps the requests it admits fast;
    it is the wait before admission that grows."""
    return result["success"] >= 0.95 and (result["total_p99_ms"] or 0) <= bound_ms


def sweep(
    app: App, found: dict, start: int, ceiling: int, seconds: float, bound_ms: float, save: Callable[[], None]
) -> None:
    """Doubling from `start` until a point fails; a failing start halves instead, down to a passing count. Fills
    `found` ({"think", "capacity", "points"}) point by point, calling `save` after each."""
    think, points, sessions = found["think"], found["points"], start
    while 10 <= sessions <= ceiling:
        result = point(app, sessions, think, seconds)
        points.append(result)
        save()
        print(
            f"  think {think:g} s, {sessions} sessions: success {result['success']:.3f}, p99 "
            f"{result['total_p99_ms'] or 0:.0f} ms (admitted {result['server_p99_ms'] or 0:.0f} ms), "
            f"{result['requests_per_s']:.0f} req/s, {result['rejected']} turned away",
            flush=True,
        )
        if passes(result, bound_ms):
            found["capacity"] = sessions
            if any(p["sessions"] == 2 * sessions for p in points):
                break  # its double failed already
            sessions *= 2
        elif found["capacity"]:
            break
        else:
            sessions //= 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default=",".join(CONFIGS[:3]))
    parser.add_argument("--thinks", default="1,10,30,60", help="think times, seconds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bound-ms", type=float, default=250.0, help="p99 an agent's wait must keep under")
    parser.add_argument("--ceiling", type=int, default=128_000, help="the most sessions tried")
    parser.add_argument(
        "--seconds",
        type=float,
        help="each point's window (default: half the think time, at least "
        "20 s: every session sends a request or more in it)",
    )
    parser.add_argument("--overload", action="store_true", help="then run each at twice its capacity")
    parser.add_argument(
        "--plain", action="store_true", help="then a client that never retries at 1, 2 and 4 times the capacity"
    )
    parser.add_argument(
        "--append",
        action="store_true",
        help="add the rounds to bench/results/<out>.json's (same configurations and think times)",
    )
    parser.add_argument("--out", default="capacity")
    parser.add_argument("--render", action="store_true", help="only write <out>.md again from <out>.json")
    options = parser.parse_args()
    if options.render:
        write_report(f"{options.out}.md", render(json.loads((RESULTS / f"{options.out}.json").read_text())))
        return
    thinks = [float(t) for t in options.thinks.split(",")]
    results = {
        "machine": machine(),
        "ran_at": time.strftime("%Y-%m-%d %H:%M"),
        "bound_ms": options.bound_ms,
        "command": " ".join(["bench/capacity.py", *sys.argv[1:]]),
        "rounds": [],
    }
    if options.append:
        results = {**json.loads((RESULTS / f"{options.out}.json").read_text()), "appended_at": results["ran_at"]}

    def save(runs: dict) -> None:
        """Writes the rounds so far with this one's partial runs: a run cut short keeps what it measured."""
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{options.out}.json").write_text(
            json.dumps({**results, "rounds": [*results["rounds"], runs]}, indent=1)
        )

    for _ in range(options.rounds):
        runs: dict = {}
        for config in options.configs.split(","):
            print(f"round {len(results['rounds']) + 1}: {config}", flush=True)
            app = App(config)
            try:
                runs[config] = sweeps = []
                for think in thinks:
                    seconds = options.seconds or max(20.0, think / 2)
                    # A repetition starts at the capacity found so far: it passes there and fails at twice it,
                    # or it halves (sweep).
                    found_before = [
                        f["capacity"]
                        for r in results["rounds"]
                        for f in r.get(config, [])
                        if f["think"] == think and f["capacity"]
                    ]
                    start = int(statistics.median(found_before)) if found_before else STARTS.get(int(think), 1_000)
                    found: dict = {"think": think, "capacity": 0, "points": []}
                    sweeps.append(found)
                    sweep(app, found, start, options.ceiling, seconds, options.bound_ms, partial(save, runs))
                    if options.overload and found["capacity"]:  # the failing point is twice the capacity
                        failed = found["points"][-1]
                        found["overload"] = (
                            failed
                            if failed["sessions"] == 2 * found["capacity"]
                            else point(app, 2 * found["capacity"], think, seconds)
                        )
                        save(runs)
                    if options.plain and found["capacity"]:
                        found["plain"] = []
                        for factor in PLAIN_FACTORS:
                            plain = point(app, factor * found["capacity"], think, seconds, never_retry=True)
                            print(
                                f"  plain client at {factor}x ({plain['sessions']} sessions): "
                                f"{plain['success']:.4f} answered, wait p99 {plain['total_p99_ms'] or 0:.0f} ms",
                                flush=True,
                            )
                            found["plain"].append({"factor": factor, **plain})
                            save(runs)
            finally:
                app.stop()
        results["rounds"].append(runs)
    write_report(f"{options.out}.md", render(results))


def render(results: dict) -> str:
    rounds = results["rounds"]
    cores = os.cpu_count() or 1
    lines = [
        "# Capacity: concurrent sessions at an agent's think time",
        "",
        results["machine"]
        + (f" (rounds added {results['appended_at']})" if results.get("appended_at") else "")
        + f". `.venv/bin/python {results['command']}`. A point passes when at least 95% of requests are "
        f"answered and the p99 of an agent's whole wait for an answer (backpressure's waits and the client's "
        f"queue included) is under {results['bound_ms']:.0f} ms; capacity is the largest session count that "
        f"passed, doubling from a start (a repetition starts at the capacity found before). {len(rounds)} "
        "round(s), configurations interleaved. Latency at the server is an admitted request's, from its "
        "headers on the wire to the answer's.",
        "",
        "| configuration | think | capacity by round | median | sessions per core | req/s there | "
        "agent's wait p99 ms | admitted p99 ms (server) | client CPU | KB per open session |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    overloads = []
    configs = dict.fromkeys(config for r in rounds for config in r)  # a configuration may join in a later round
    for config in configs:
        first_round = next(r[config] for r in rounds if config in r)
        for index, first in enumerate(first_round):
            numbered = [(number, r[config][index]) for number, r in enumerate(rounds, 1) if config in r]
            found = [f for _, f in numbered]
            capacities = [f["capacity"] for f in found]
            median = statistics.median_low(capacities)  # a count that was measured, with an even number of rounds too
            # every round's run at the median count (a round that stopped short of it has none)
            at = [p for f in found for p in f["points"] if p["sessions"] == median] or [found[0]["points"][0]]
            best = at[0]
            lines.append(
                f"| {config} | {first['think']:g} s | {', '.join(map(str, capacities))} | {median:,.0f} | "
                f"{median / cores:,.0f} | {statistics.median(p['requests_per_s'] for p in at):.0f} | "
                f"{_span(p['total_p99_ms'] for p in at)} | {_span(p['server_p99_ms'] for p in at)} | "
                f"{best['client_cpu_share']:.0%} | {best['kb_per_session']:.1f} |"
            )
            overloads += [(number, config, f["overload"]) for number, f in numbered if f.get("overload")]
    if overloads:
        lines += [
            "",
            "At twice capacity:",
            "",
            "| round | configuration | think | sessions | req/s served | turned away a second | "
            "admitted p99 ms (server) | agent's wait p99 ms | requests failed | episodes done / failed | "
            "slowest health check ms |",
            "|---" * 11 + "|",
        ]
        for number, config, p in overloads:
            lines.append(
                f"| {number} | {config} | {p['think']:g} s | {p['sessions']:,} | {p['requests_per_s']:.0f} | "
                f"{p['rejected'] / p.get('seconds', 1):.0f} | {_num(p['server_p99_ms'])} | "
                f"{_num(p['total_p99_ms'])} | {p['failed']} | {p['episodes']} / {p['episodes_failed']} | "
                f"{_num(p.get('slowest_health_ms'))} |"
            )
    plains = [
        (number, config, p)
        for number, r in enumerate(rounds, 1)
        for config, sweeps in r.items()
        for f in sweeps
        for p in f.get("plain", [])
    ]
    if plains:
        lines += [
            "",
            "A client that never retries (each request sent once, a 503 a failure) at 1, 2 and 4 times the capacity:",
            "",
            "| round | configuration | think | x capacity | sessions | requests answered | refused | "
            "agent's wait p50 / p99 ms | admitted p99 ms (server) | req/s | episodes done / failed | "
            "slowest health check ms | peak MB |",
            "|---" * 13 + "|",
        ]
        for number, config, p in plains:
            lines.append(
                f"| {number} | {config} | {p['think']:g} s | {p['factor']} | {p['sessions']:,} | "
                f"{p['success']:.2%} | {p['rejected']} | {_num(p.get('total_p50_ms'))} / "
                f"{_num(p['total_p99_ms'])} | {_num(p['server_p99_ms'])} | {p['requests_per_s']:.0f} | "
                f"{p['episodes']} / {p['episodes_failed']} | {_num(p.get('slowest_health_ms'))} | "
                f"{_num(p.get('peak_mb'))} |"
            )
    lines += [
        "",
        "Every point:",
        "",
        "| round | configuration | think | sessions | success | req/s | turned away | admitted p50 / p99 ms "
        "(server) | agent's wait p50 / p99 ms | episodes done / failed | shard ms a batch / a mark write | "
        "fences held after |",
        "|---" * 12 + "|",
    ]
    for number, runs in enumerate(rounds, 1):
        for config, sweeps in runs.items():
            for found in sweeps:
                over = found.get("overload")
                marked = [(p, " (2x)" if p is over else "") for p in found["points"]]
                marked += [(over, " (2x)")] if over is not None and over not in found["points"] else []
                for p, note in marked:
                    lines.append(
                        f"| {number} | {config} | {p['think']:g} s | {p['sessions']:,}{note} | {p['success']:.3f} | "
                        f"{p['requests_per_s']:.0f} | {p['rejected']} | {_num(p['server_p50_ms'])} / "
                        f"{_num(p['server_p99_ms'])} | {_num(p.get('total_p50_ms'))} / {_num(p['total_p99_ms'])} | "
                        f"{p['episodes']} / {p['episodes_failed']} | {_shard_ms(p.get('shard_calls'))} | "
                        f"{p.get('fences_held', '-')} |"
                    )
    return "\n".join(lines) + "\n"


def _shard_ms(calls: dict | None) -> str:
    """The mean time of a shard's batch and of a mark write within one, over a point ("-" where not recorded)."""
    if not calls or not calls["batches"]:
        return "-"
    writes = f"{calls['mark_write_us'] / calls['mark_writes'] / 1e3:.2f}" if calls["mark_writes"] else "-"
    return f"{calls['batch_us'] / calls['batches'] / 1e3:.2f} / {writes}"


def _num(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.0f}"


def _span(values: Iterable[float | None]) -> str:
    """The range of the rounds' values ("46" when they agree to the millisecond)."""
    known = sorted(round(v) for v in values if v is not None)
    if not known:
        return "-"
    return str(known[0]) if known[0] == known[-1] else f"{known[0]}-{known[-1]}"


if __name__ == "__main__":
    main()
