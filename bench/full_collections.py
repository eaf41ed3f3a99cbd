"""The one process's health checks past capacity, where its garbage collector's full collections stall the event
loop: this tree against `--before`, side by side.

    .venv/bin/python bench/full_collections.py --before c037fa1 --points 80000@60,160000@60 --history 60000

`finsec serve --in-process` holds every open session, and every fence of a closed one, in the process that
answers health checks; a full collection walks every object the collector tracks while the loop waits. Each point
starts the app afresh (as capacity.py starts it), plays `--history` whole episodes to their close at once (the
fences a run leaves behind, as the points before it in a capacity round do), then runs capacity.py's point with
a client that never retries: SESSIONS at THINK seconds. It gives the slowest of the health checks sent every half
second meanwhile, the admitted p99 at the server, the share of requests answered and the peak resident memory.
Rounds interleave the two trees, the order reversed every other round (this machine drifts between passes).
Writes bench/results/<out>.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import RESULTS, commit_tree, machine, table, write_report  # noqa: E402
from capacity import App, point  # noqa: E402

from harness.bodies import close_body, episode_seed, new_session_id  # noqa: E402


async def _close_episodes(url: str, episodes: int, at_once: int = 64) -> None:
    left = iter(range(episodes))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=at_once)) as http:

        async def play() -> None:
            for _ in left:
                sid = new_session_id()
                for path, body in (("/seed_session", episode_seed(sid)), ("/close_session", close_body(sid))):
                    async with http.post(url + path, json=body) as answer:
                        if answer.status != 200:
                            raise RuntimeError(f"{path}: {answer.status} {await answer.text()}")

        await asyncio.gather(*(play() for _ in range(at_once)))


def run_point(code_root: Path, sessions: int, think: float, history: int) -> dict:
    os.environ["PYTHONPATH"] = str(code_root)  # the app imports this tree's code, not the installed one
    app = App("inprocess")
    try:
        began = time.monotonic()
        asyncio.run(_close_episodes(app.url, history))
        history_s = time.monotonic() - began
        measured = point(app, sessions, think, max(20.0, think / 2), never_retry=True)
    finally:
        app.stop()
    return {**measured, "history": history, "history_seconds": history_s}


def render(results: dict) -> str:
    rows = [
        [
            p["round"],
            p["tree"],
            f"{p['history']:,}",
            f"{p['sessions']:,}",
            f"{p['think']:g} s",
            f"{p['slowest_health_ms']:.0f}",
            p["health_failures"],
            f"{p['server_p99_ms']:.0f}",
            f"{100 * p['success']:.2f}%",
            f"{p['peak_mb']:.0f}",
        ]
        for p in results["points"]
    ]
    header = "round | code | fences before | sessions | think | slowest health ms | health not 200 within 5 s | "
    header += "admitted p99 ms (server) | requests answered | peak MB"
    return "\n".join(
        [
            "# The one process's health checks past capacity, against its full garbage collections",
            "",
            f"{results['machine']}. `.venv/bin/python {results['command']}`. `this` is the tree the benchmark ran "
            f"from, `before` is {results['before']}. Each point: a new `finsec serve --in-process`, that many "
            "episodes seeded and closed first, then a client that never retries at the sessions and think time "
            "given, health checked every half second.",
            "",
            table(header.split(" | "), rows),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="the commit to compare against (required unless --render)")
    parser.add_argument("--points", default="80000@60,160000@60", help="SESSIONS@THINK, comma-separated")
    parser.add_argument("--history", type=int, default=60_000, help="episodes closed before each point")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default="full_collections")
    parser.add_argument("--render", action="store_true", help="only write <out>.md again from <out>.json")
    options = parser.parse_args()
    if options.render:
        write_report(f"{options.out}.md", render(json.loads((RESULTS / f"{options.out}.json").read_text())))
        return
    if not options.before:
        parser.error("--before COMMIT is required")
    specs = [(int(n), float(t)) for n, t in (spec.split("@") for spec in options.points.split(","))]
    results = {
        "machine": machine(),
        "command": " ".join(["bench/full_collections.py", *sys.argv[1:]]),
        "before": options.before,
        "points": [],
    }
    with commit_tree(options.before) as before_root:
        trees = [("before", before_root), ("this", ROOT)]
        for round_ in range(1, options.rounds + 1):
            for sessions, think in specs:
                for tree, code_root in trees if round_ % 2 else trees[::-1]:
                    measured = run_point(code_root, sessions, think, options.history)
                    results["points"].append({"round": round_, "tree": tree, **measured})
                    print(
                        f"round {round_} {tree}: {sessions} sessions at {think:g} s, slowest health "
                        f"{measured['slowest_health_ms']:.0f} ms",
                        flush=True,
                    )
                    RESULTS.mkdir(exist_ok=True)
                    (RESULTS / f"{options.out}.json").write_text(json.dumps(results, indent=1))
    write_report(f"{options.out}.md", render(results))


if __name__ == "__main__":
    main()
