"""Benchmark: what routing a request costs the app, with its routes in one flat list against included routers.

    .venv/bin/python bench/routing.py --before COMMIT     # ~3 minutes

FastAPI 0.165 keeps each `include_router` as a wrapper whose routes it matches per request through a scope
context per route, and Serve's replica matches every request once more to name its metrics route
(`get_asgi_route_name`). `deployments/asgi.py` now lays the routes out flat, a rollout's first. This measures the
app as a replica runs it, in one process with no network, for the code of `--before` (a git worktree) and this
tree, in interleaved rounds, a fresh process each:
- the app's CPU per request for each route of a rollout (the thread's CPU across the ASGI call, whole rollouts of
  bench/loadgen.py's shape on the embedded corpus, sessions in process), and per rollout;
- Serve's route-name lookup per request for the same paths.
Writes bench/results/routing.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from collections import defaultdict
from pathlib import Path

from _common import RESULTS, ROOT, commit_tree, machine, table, write_report

ROLLOUTS, WARMUP, ROUNDS = 400, 40, 3


async def _call(app, path: str, body: bytes, cookie: bytes | None) -> tuple[int, bytes | None, int]:
    """One POST through the ASGI app as uvicorn would make it; (status, the session cookie set, CPU ns)."""
    headers = [
        (b"host", b"bench"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *([(b"cookie", cookie)] if cookie else []),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    answer: dict = {}

    async def receive():
        return pending.pop() if pending else {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["cookie"] = next((v.split(b";")[0] for k, v in message["headers"] if k == b"set-cookie"), None)

    start = time.thread_time_ns()
    await app(scope, receive, send)
    return answer["status"], answer["cookie"], time.thread_time_ns() - start


async def _measure_app(root: Path) -> dict:
    import yaml

    from deployments.inprocess import in_process_app
    from deployments.settings import Settings
    from finsec.corpus.generate import questions
    from harness.episodes import rollout_steps

    args = yaml.safe_load((root / "configs/serve.yaml").read_text())["applications"][0]["args"]
    api = in_process_app(Settings(**{**args, "app_name": f"routing-{uuid.uuid4().hex[:6]}"})).api
    tasks = questions()
    per_route: dict[str, list[int]] = defaultdict(list)
    async with api.router.lifespan_context(api):
        for n in range(WARMUP + ROLLOUTS):
            cookie = None
            for route, body in rollout_steps(tasks[n % len(tasks)], n):
                status, set_cookie, ns = await _call(api, "/" + route, json.dumps(body).encode(), cookie)
                if status != 200:
                    raise RuntimeError(f"{route}: HTTP {status}")
                cookie = set_cookie or cookie
                if n >= WARMUP:
                    per_route[route].append(ns)
    return {
        "app": api,
        "per_route_us": {r: statistics.median(v) / 1e3 for r, v in per_route.items()},
        "rollout_us": sum(map(sum, per_route.values())) / ROLLOUTS / 1e3,
    }


def _lookup_us(api, paths: list[str]) -> dict[str, float]:
    from ray.serve._private.thirdparty.get_asgi_route_name import get_asgi_route_name

    out = {}
    for path in paths:
        scope = {"type": "http", "method": "POST", "path": path, "root_path": "", "headers": [], "query_string": b""}
        out[path] = (
            min(timeit.repeat(lambda scope=scope: get_asgi_route_name(api, scope), number=2000, repeat=5)) / 2000 * 1e6
        )
    return out


def child(root: Path, out: Path) -> None:
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "bench"))  # its loadgen puts its own tree first: the tree measured
    import uvloop

    measured = uvloop.run(_measure_app(root))
    paths = ["/" + r for r in measured["per_route_us"]]
    out.write_text(
        json.dumps(
            {
                "per_route_us": measured["per_route_us"],
                "rollout_us": measured["rollout_us"],
                "lookup_us": _lookup_us(measured["app"], paths),
            }
        )
    )


def run_child(root: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="routing-") as folder:
        out = Path(folder) / "result.json"
        subprocess.run(
            [sys.executable, __file__, "--child", str(root), "--out", str(out)],
            check=True,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        return json.loads(out.read_text())


def spread(values: list[float], digits: int = 1) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def lookup_per_rollout(run: dict) -> float:
    """Serve's lookups a rollout makes: retrieve_information twice, every other route once."""
    return sum(us * (2 if path == "/retrieve_information" else 1) for path, us in run["lookup_us"].items())


def report(data: dict) -> None:
    runs = data["runs"]
    routes = list(runs["this tree"][0]["per_route_us"])
    rows = []
    for route in routes:
        before = [r["per_route_us"][route] for r in runs["before"]]
        after = [r["per_route_us"][route] for r in runs["this tree"]]
        look_b = [r["lookup_us"]["/" + route] for r in runs["before"]]
        look_a = [r["lookup_us"]["/" + route] for r in runs["this tree"]]
        rows.append(
            [
                route,
                spread(before),
                spread(after),
                f"{statistics.median(after) / statistics.median(before):.2f}x",
                spread(look_b),
                spread(look_a),
            ]
        )
    before = [r["rollout_us"] for r in runs["before"]]
    after = [r["rollout_us"] for r in runs["this tree"]]
    ratios = [a / b for a, b in zip(after, before, strict=False)]
    header = [
        "route",
        f"app CPU us a request, {data['before']}",
        "this tree",
        "ratio",
        f"Serve's route lookup us, {data['before']}",
        "this tree",
    ]
    write_report(
        "routing.md",
        "\n".join(
            [
                "# Routing: the routes in one flat list against included routers",
                "",
                f"{data['machine']}. Produced by `.venv/bin/python bench/routing.py --before {data['before']}`: the app in "
                f"one process as a replica runs it (the embedded corpus, sessions in process, no network), {ROLLOUTS} whole "
                f"rollouts after {WARMUP} to warm up, each request's CPU on the thread across its ASGI call (median); Serve's "
                f"route-name lookup (`get_asgi_route_name`, which a replica runs on every request) timed on the same paths. "
                f"{ROUNDS} interleaved rounds, a fresh process each: median and range.",
                "",
                table(header, rows),
                "",
                f"A whole rollout (8 requests): {spread(before, 0)} us of app CPU before, {spread(after, 0)} us now: "
                f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}x) within rounds. Serve's lookup, in "
                f"the Serve path only, adds {spread([lookup_per_rollout(r) for r in runs['before']], 0)} us a rollout "
                f"before and {spread([lookup_per_rollout(r) for r in runs['this tree']], 0)} us now.",
            ]
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="the commit to compare with (a git worktree of it)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--render", action="store_true", help="rewrite the report from the last JSON")
    options = parser.parse_args()
    if options.child:
        child(Path(options.child), Path(options.out))
        return
    path = RESULTS / "routing.json"
    if options.render:
        report(json.loads(path.read_text()))
        return
    if not options.before:
        parser.error("--before COMMIT is required")
    runs: dict[str, list[dict]] = {"before": [], "this tree": []}
    with commit_tree(options.before) as before_root:
        for round_ in range(ROUNDS):
            order = [("before", before_root), ("this tree", ROOT)]
            for name, root in order if round_ % 2 == 0 else order[::-1]:
                runs[name].append(run_child(root))
                print(f"round {round_ + 1}: {name}: {runs[name][-1]['rollout_us']:.0f} us a rollout", flush=True)
    data = {"machine": machine(), "before": options.before, "rollouts": ROLLOUTS, "rounds": ROUNDS, "runs": runs}
    path.write_text(json.dumps(data, indent=1))
    report(data)


if __name__ == "__main__":
    main()
