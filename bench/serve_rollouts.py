"""Benchmark: whole rollouts through the Serve app against the same app in one process, side by side.

    .venv/bin/pip install -e ".[bench]"
    .venv/bin/python bench/serve_rollouts.py            # ~12 minutes; --quick for a 3-minute pass

Configurations, each started by this script in its own process tree, one after the other:
- `baseline`: the app in one uvicorn process, sessions in process (deployments/inprocess.py);
- `serve-haproxy`: the Serve app from configs/serve.yaml (2 replicas, 2 shards) behind Serve's HAProxy ingress,
  which is how the project ships it (batches reach the shards over the direct transport, session_store/direct);
- `ray-hop-haproxy`: the same with `shard_transport: ray` (batches as Ray actor calls), the hop it replaced;
- `redis-haproxy`: serve-haproxy with its marks in Redis (`mark_store_url`, a private redis-server started here),
  the production store of cluster/overlays/redis;
- `affine-haproxy`: serve-haproxy with rollout-affine routing (serve_tuning.ROLLOUT_AFFINITY: HAProxy hashes the
  `/ng-rollout/<id>/` prefix), and the load generator sending each rollout under its prefix;
- `nowatch-haproxy`: serve-haproxy with the load generator sending finsec_client.client.CLIENT_HEADERS (Serve's replica
  then does not watch each request's client for a disconnect), as the project's rollout client does;
  `redis-nowatch-haproxy` is both; `redis-nowatch-quiet-haproxy` sets `RAY_event_stats=0` (every Ray process's
  event-loop statistics off, as serve_tuning has since serve_rollouts_quiet.md measured it) and
  `redis-nowatch-stats-haproxy` sets it to 1, as before;
- `serve-durable-haproxy` and `redis-nowatch-durable-haproxy`: those two with `durable_sessions` (contract §C.11):
  every open session's state written with its marks (`serve-volatile-haproxy`: without);
- `serve-nowait-haproxy`: serve-haproxy with 4,096 places a replica (`admission_running`), so that no request
  waits for one at these concurrencies: what admission's waits cost beside its middleware (not in the default run);
- `serve-proxy`: the same behind Serve's default Python proxy;
- `before-haproxy` (and `before-<shape>` for a few shapes): the code of an earlier commit (`--before`), so a
  change is measured against what it replaced in the same run. That commit must serve with today's
  `deployments.local` signatures.

`SHAPES` names each configuration's parts (a `Shape`).

The load generator (bench/loadgen.py, aiohttp) runs in its own processes and drives 8-request rollouts at each
concurrency; its CPU share is reported. Then resident memory (all processes of the configuration) at 0, 1,000 and
10,000 open sessions, and for one session vs a 16-session group parsing one real 10-K; the bytes that cross the
shard hop per request; and, with `--profile`, py-spy profiles of a replica and a shard under load.
Writes bench/results/serve_rollouts.{md,json} and serve_rollouts_{throughput,p99}.png (`--out` names another
report). The script writes the measured tables only (harness/rollout_report.py renders them); what a run says is
written by hand in bench/results/<out>.reading.md, and `--render` rewrites the report from its JSON with that
reading as its last section. A fresh run leaves the section for it, so an earlier run's reading never sits under
new figures.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import pickle
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import commit_tree, run_loadgen  # noqa: E402

from harness.ceiling import serve_floor_ms  # noqa: E402
from harness.rollout_report import (  # noqa: E402, F401 (rollouts_per_s: bench/client_cost.py takes it from here)
    CPU_LEVEL,
    SCALING,
    SCALING_CONFIGS,
    render,
    render_scaling,
    rollouts_per_s,
)


@dataclass(frozen=True)
class Shape:
    """One way of serving the app, measured side by side with the others. Its name is the one reports use."""

    in_process: bool = False  # the app in one uvicorn process (the baseline), not Serve
    uvloop: bool = False  # the one process on uvloop, the loop Serve's replicas run
    ingress: str = "haproxy"  # Serve's HAProxy ingress, or "proxy": Serve's default Python proxy
    redis: bool = False  # marks in a private redis-server, not the GCS
    actor_calls: bool = False  # shard batches as Ray actor calls (shard_transport: ray), not the direct hop
    affine: bool = False  # HAProxy routes a rollout's requests to one replica; the client sends the rollout prefix
    watch: bool = True  # the client keeps Serve's disconnect watch (no x-request-disconnect-disabled)
    batch_scheduling: bool = True  # Ray under SCHED_BATCH (deployments/cpu_policy.py)
    event_stats: bool | None = None  # Ray's event-loop statistics; None: the node tuning's default (off)
    durable: bool | None = None  # durable_sessions; None: the settings' default
    admission_running: int | None = None  # requests a replica works on at once; None: the settings' default
    before: bool = False  # on the earlier commit's code (--before)


SHAPES = {
    "baseline": Shape(in_process=True),
    "baseline-uvloop": Shape(in_process=True, uvloop=True),  # not in the default run
    "serve-haproxy": Shape(),
    "ray-hop-haproxy": Shape(actor_calls=True),
    "redis-haproxy": Shape(redis=True),
    "affine-haproxy": Shape(affine=True),
    "nowatch-haproxy": Shape(watch=False),
    "redis-nowatch-haproxy": Shape(redis=True, watch=False),
    "redis-nowatch-preempt-haproxy": Shape(redis=True, watch=False, batch_scheduling=False),
    "redis-nowatch-quiet-haproxy": Shape(redis=True, watch=False, event_stats=False),
    "redis-nowatch-stats-haproxy": Shape(redis=True, watch=False, event_stats=True),
    "serve-durable-haproxy": Shape(durable=True),
    "serve-volatile-haproxy": Shape(durable=False),
    "redis-nowatch-durable-haproxy": Shape(redis=True, watch=False, durable=True),
    "serve-nowait-haproxy": Shape(admission_running=4096),  # so many places that no request waits for one
    "serve-proxy": Shape(ingress="proxy"),
    "before-haproxy": Shape(before=True),
    "before-serve-haproxy": Shape(before=True),
    "before-redis-nowatch-haproxy": Shape(redis=True, watch=False, before=True),
}
CONFIGS = tuple(
    name
    for name in SHAPES
    if name
    not in {
        "baseline-uvloop",
        "serve-volatile-haproxy",
        "serve-nowait-haproxy",
        "before-serve-haproxy",
        "before-redis-nowatch-haproxy",
    }
)
LEVELS = (1, 16, 64, 256, 1024)


def shape_of(config: str) -> Shape:
    try:
        return SHAPES[config]
    except KeyError:
        raise SystemExit(f"no configuration {config!r}; known: {', '.join(SHAPES)}") from None


def biggest_filing() -> str:
    """The url_path of the largest real filing (a 10-K of ~2.6 MB of HTML)."""
    from _common import real_filings

    return max(real_filings(), key=lambda f: f.path.stat().st_size).url_path


# ----- the server side: one configuration per process tree ----------------------------------------------------


def serve(
    config: str, code_root: Path, port: int, corpus: str | None, replicas: int = 2, shards: int | None = None
) -> None:
    """Run one configuration until stdin closes; print one READY line with its URL first."""
    sys.path.insert(0, str(code_root))
    os.chdir(code_root)
    if corpus:
        os.environ["FINSEC_CORPUS_DIR"] = corpus
    import yaml
    from pydantic import SecretStr

    args = yaml.safe_load((code_root / "configs/serve.yaml").read_text())["applications"][0]["args"]  # its own
    from deployments.settings import Settings

    shape = shape_of(config)
    settings = Settings(
        **{
            **args,
            "app_name": f"bench-{uuid.uuid4().hex[:6]}",
            **({"num_shards": shards} if shards else {}),
            **({"shard_transport": "ray"} if shape.actor_calls else {}),
        }
    )
    if shape.admission_running is not None:
        settings = settings.model_copy(update={"admission_running": shape.admission_running})
    if shape.in_process:
        import uvicorn

        from deployments.inprocess import in_process_app

        api = in_process_app(settings).api
        server = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning"))
        print("READY " + json.dumps({"url": f"http://127.0.0.1:{port}"}), flush=True)
        if not shape.uvloop:
            asyncio.run(_until_stdin_closes(server))
        else:  # on the loop the replicas run (and `uvicorn.run` picks)
            import uvloop

            uvloop.run(_until_stdin_closes(server))
        return
    os.environ["RAY_SERVE_ENABLE_HA_PROXY"] = "1" if shape.ingress == "haproxy" else "0"
    if shape.event_stats is not None:  # set before Ray starts, so the node tuning's default stands aside
        os.environ["RAY_event_stats"] = "1" if shape.event_stats else "0"  # noqa: SIM112 (Ray spells it so)
    if shape.affine:
        from deployments.serve_tuning import ROLLOUT_AFFINITY

        os.environ.update(ROLLOUT_AFFINITY)
    if shape.durable is not None:
        settings = settings.model_copy(update={"durable_sessions": shape.durable})
    stack = ExitStack()  # what this configuration runs beside Ray, stopped with it
    if shape.redis:
        from harness.redis_server import running_redis

        redis = stack.enter_context(running_redis())
        settings = settings.model_copy(update={"mark_store_url": SecretStr(redis.url)})
    os.environ["PYTHONPATH"] = str(code_root)  # Ray workers import this code, not the installed one
    from deployments import local

    url = local.start_ray_and_serve(port, ingress=shape.ingress, batch_scheduling=shape.batch_scheduling)
    local.deploy(settings, url, replicas=replicas)
    print("READY " + json.dumps({"url": url}), flush=True)
    sys.stdin.read()
    local.undeploy(settings)
    local.stop_ray_and_serve()
    stack.close()


async def _until_stdin_closes(server) -> None:
    task = asyncio.create_task(server.serve())
    await asyncio.to_thread(sys.stdin.read)
    server.should_exit = True
    await task


class Server:
    def __init__(
        self, config: str, code_root: Path, corpus: str | None = None, replicas: int = 2, shards: int | None = None
    ):
        from finsec.net.ports import free_port

        port = free_port()
        self.process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                config,
                "--code-root",
                str(code_root),
                "--port",
                str(port),
                "--replicas",
                str(replicas),
                *(["--shards", str(shards)] if shards else []),
                *(["--corpus", corpus] if corpus else []),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for line in self.process.stdout:
            if line.startswith("READY "):
                self.url = json.loads(line[6:])["url"]
                break
        else:
            raise RuntimeError(f"{config} did not start")

    def rss_mb(self) -> float:
        return sum(_rss_kb(pid) for pid in _tree(self.process.pid)) / 1024

    def pids(self, title: str) -> list[int]:
        return [pid for pid in _tree(self.process.pid) if title in _cmdline(pid)]

    def stop(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                children[int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])].append(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


# Which part of the configuration a process is, by its command line (Ray sets actor processes' titles).
ROLES = (
    ("ServeReplica", "ingress replicas"),
    ("SessionShard", "session shards"),
    ("ShardService", "session shards"),
    ("DocumentStore", "document store"),
    ("TextCache", "document store"),
    ("Reaper", "reaper"),
    ("haproxy", "HAProxy"),
    ("HAProxyManager", "Serve's HAProxy manager"),
    ("gcs_server", "GCS"),
    ("raylet", "raylet"),
    ("ServeController", "Serve controller"),
    ("ProxyActor", "Serve proxy actor"),
    ("--serve", "the script's server process"),
)


def _role(pid: int) -> str:
    line = _cmdline(pid)
    return next((role for mark, role in ROLES if mark in line), "other Ray processes")


def cpu_times(pid: int) -> tuple[int, int]:
    """A process's user and system CPU so far, in clock ticks; (0, 0) once it has exited."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]), int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0, 0


def _cpu_ticks(pid: int) -> int:
    return sum(cpu_times(pid))


def cpu_by_role(server: Server, after: float, seconds: float) -> dict[str, float]:
    """Each role's CPU over `seconds`, starting `after` seconds from now, as a share of the whole machine."""
    time.sleep(after)
    pids = _tree(server.process.pid)
    first, began = {pid: _cpu_ticks(pid) for pid in pids}, time.monotonic()
    time.sleep(seconds)
    spent: dict[str, float] = defaultdict(float)
    for pid in pids:
        if (ticks := _cpu_ticks(pid)) >= first[pid]:  # 0 once a process has exited: leave it out
            spent[_role(pid)] += (ticks - first[pid]) / os.sysconf("SC_CLK_TCK")
    wall = time.monotonic() - began
    return {role: used / (wall * os.cpu_count()) for role, used in sorted(spent.items(), key=lambda kv: -kv[1])}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# ----- load ----------------------------------------------------------------------------------------------------


def client_flags(config: str) -> list[str]:
    """How the load generator talks to this configuration."""
    shape = shape_of(config)
    return [*(["--rollout-prefix"] if shape.affine else []), *([] if shape.watch else ["--no-disconnect-watch"])]


def load(url: str, concurrency: int, seconds: float, warmup: float, flags: list[str] = ()) -> dict:
    """Rollouts at `concurrency` from one load-generator process, so one measurement window covers all of them
    (it takes under half a core at 1024, so it is not the limit; its CPU share is reported)."""
    parts = [run_loadgen(url, concurrency, seconds, warmup, flags)]
    latencies = defaultdict(list)
    for part in parts:
        for route, samples in part["latencies"].items():
            latencies[route] += samples
    every = [x for samples in latencies.values() for x in samples]
    return {
        "concurrency": concurrency,
        "rollouts_per_s": sum(p["rollouts"] for p in parts) / seconds,
        "requests_per_s": sum(p["requests"] for p in parts) / seconds,
        "errors": sum(p["errors"] for p in parts),
        "error_samples": [e for p in parts for e in p["error_samples"]][:5],
        "client_cpu_share": sum(p["cpu_seconds"] for p in parts)
        / (max(p["wall_seconds"] for p in parts) * os.cpu_count()),
        "p50_ms": {r: 1e3 * statistics.median(s) for r, s in latencies.items() if s},
        "p99_ms": {r: 1e3 * _quantile(s, 0.99) for r, s in latencies.items() if s},
        "all_p50_ms": 1e3 * statistics.median(every) if every else None,
        "all_p99_ms": 1e3 * _quantile(every, 0.99) if every else None,
    }


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ----- memory --------------------------------------------------------------------------------------------------


async def open_sessions(url: str, n: int, task_urls: list[str], concurrency: int = 64) -> list[tuple[str, dict]]:
    """Seed and parse `n` sessions, left open; returns their (id, episode) for closing."""
    import aiohttp

    opened: list[tuple[str, dict]] = []
    counter = iter(range(n))

    async def worker():
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(base_url=url, cookie_jar=jar) as session:
            for i in counter:
                jar.clear()
                sid, episode = f"resources-session-{uuid.uuid4().hex}", {"rollout_id": f"m{i}", "attempt": 0}
                seed = {
                    "resources_session_id": sid,
                    "episode_id": episode,
                    "task_id": {"taskset": "mem", "task_id": str(i)},
                    "task_data": {},
                }
                async with session.post("/seed_session", json=seed) as r:
                    assert r.status == 200, await r.text()
                async with session.post(
                    "/parse_html_page", json={"url": task_urls[i % len(task_urls)], "key": "filing"}
                ) as r:
                    assert r.status == 200 and "SUCCESS" in (await r.json())["results"], await r.text()
                async with session.post("/retrieve_information", json={"prompt": "revenue {{filing}}"}) as r:
                    assert r.status == 200
                opened.append((sid, episode))

    await asyncio.gather(*(worker() for _ in range(min(concurrency, n))))
    return opened


async def close_sessions(url: str, sessions: list[tuple[str, dict]]) -> None:
    import aiohttp

    queue = iter(sessions)

    async def worker():
        async with aiohttp.ClientSession(base_url=url) as session:
            for sid, episode in queue:
                async with session.post("/close_session", json={"resources_session_id": sid, "episode_id": episode}):
                    pass

    await asyncio.gather(*(worker() for _ in range(64)))


def settle(server: Server, seconds: float = 3.0) -> float:
    time.sleep(seconds)
    return server.rss_mb()


def memory_curve(server: Server, counts=(1_000, 10_000)) -> dict:
    from finsec.corpus.generate import questions

    urls = sorted({q["url"] for q in questions()})
    out, opened = {"0": settle(server)}, []
    for n in counts:
        opened += asyncio.run(open_sessions(server.url, n - len(opened), urls))
        out[str(n)] = settle(server)
    asyncio.run(close_sessions(server.url, opened))
    out["after_close"] = settle(server)
    return out


def group_memory(server: Server) -> dict:
    """One session parsing a real 10-K, then 15 more on the same filing: RSS growth of each step."""
    url = "https://www.sec.gov/" + biggest_filing()
    start = settle(server)
    one = asyncio.run(open_sessions(server.url, 1, [url], 1))
    after_one = settle(server)
    group = asyncio.run(open_sessions(server.url, 15, [url], 15))
    after_group = settle(server)
    asyncio.run(close_sessions(server.url, one + group))
    return {
        "one_session_mb": after_one - start,
        "group_of_16_mb": after_group - start,
        "ratio": (after_group - start) / max(after_one - start, 1e-9),
    }


# ----- bytes across the shard hop ------------------------------------------------------------------------------


def hop_bytes(code_root: Path, corpus: str) -> None:
    """Print the bytes one rollout on a real 10-K moves across the shard hop (and the document-store hop), per
    request, as Ray would pickle them: run in process, with the store's calls pickled and counted."""
    sys.path.insert(0, str(code_root))
    os.environ["FINSEC_CORPUS_DIR"] = corpus
    import httpx

    from deployments.settings import Settings

    settings = Settings(app_name="bytes", num_shards=1)
    sizes: Counter[str] = Counter()
    route = {"name": ""}

    def count(what, value):
        sizes[f"{route['name']}"] += len(pickle.dumps(value, protocol=5))

    try:  # this code: the batched client
        from deployments.inprocess import in_process_app

        app = in_process_app(settings)
        shard = app.store.shards[0]
        original_run = shard.run

        async def run(ops):
            count("ops", ops)
            outcomes = await original_run(ops)
            count("outcomes", outcomes)
            return outcomes

        shard.run = run
        store_methods = app.documents
        for name in ("put", "touch", "get", "by_url"):
            method = getattr(store_methods, name)

            def wrapped(*args, _method=method):
                count("doc-args", args)
                result = _method(*args)
                count("doc-result", result)
                return result

            setattr(store_methods, name, wrapped)
        api = app.api
    except ImportError:  # the code before (its own module names): one call per store method, texts in the shard
        from deployments.api import create_api
        from deployments.services import build_services
        from finsec.edgar.limiter import LocalRateLimiter
        from session_store.shard import ShardService
        from session_store.store import LocalSessionStore

        class Counting(LocalSessionStore):
            async def _call(self, shard, method, *args):
                count("args", args)
                result = await super()._call(shard, method, *args)
                count("result", result)
                return result

        store = Counting([ShardService(settings.session_ttl_seconds)])
        api = create_api(settings, lambda: build_services(settings, store, LocalRateLimiter(10, 1.25)), "bytes-" * 8)

    filing = biggest_filing()

    async def rollout():
        async with (
            api.router.lifespan_context(api),
            httpx.AsyncClient(transport=httpx.ASGITransport(api), base_url="http://b") as client,
        ):
            sid, episode = "resources-session-bytes", {"rollout_id": "b", "attempt": 0}
            steps = [
                (
                    "seed_session",
                    {
                        "resources_session_id": sid,
                        "episode_id": episode,
                        "task_id": {"taskset": "b", "task_id": "b"},
                        "task_data": {},
                    },
                ),
                ("parse_html_page", {"url": "https://www.sec.gov/" + filing, "key": "filing"}),
                ("retrieve_information", {"prompt": "total revenues {{filing}}"}),
                ("retrieve_information", {"prompt": "net income {{filing}}"}),
                (
                    "verify",
                    {
                        "responses_create_params": {"input": [{"role": "user", "content": "q"}]},
                        "response": {"output": []},
                        "question": "q",
                        "expected_answer": "1",
                    },
                ),
                ("close_session", {"resources_session_id": sid, "episode_id": episode}),
            ]
            for i, (path, body) in enumerate(steps):
                route["name"] = f"{i + 1}. {path}"
                r = await client.post("/" + path, json=body)
                assert r.status_code == 200, r.text

    asyncio.run(rollout())
    print(json.dumps(dict(sizes)))


def measure_hop_bytes(code_root: Path, corpus: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--hop-bytes", "--code-root", str(code_root), "--corpus", corpus],
        capture_output=True,
        text=True,
        cwd=code_root,
        env={**os.environ, "PYTHONPATH": str(code_root)},
    )
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"error": out.stderr[-500:]}


# ----- profiles ------------------------------------------------------------------------------------------------


def profile(server: Server, seconds: float, out: Path) -> dict:
    """py-spy on one replica and one shard while loadgen runs at concurrency 64: their top frames by own time."""
    targets = {
        "replica": server.pids("ServeReplica")[:1],
        "shard": (server.pids("SessionShardActor") or server.pids("SessionShard"))[:1],
    }
    spies = {}
    out.parent.mkdir(parents=True, exist_ok=True)
    for role, pids in targets.items():
        if pids:
            path = out.with_name(f"{out.stem}-{role}.txt")
            spies[role] = (
                path,
                subprocess.Popen(
                    [
                        str(Path(sys.executable).with_name("py-spy")),
                        "record",
                        "--pid",
                        str(pids[0]),
                        "--duration",
                        str(int(seconds)),
                        "--format",
                        "raw",
                        "--output",
                        str(path),
                        "--nonblocking",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                ),
            )
    load(server.url, 64, seconds, 1.0)
    tops = {}
    for role, (path, spy) in spies.items():
        spy.wait(timeout=60)
        tops[role] = top_frames(path) if path.exists() else []
    return tops


def top_frames(path: Path, n: int = 12) -> list[tuple[str, float]]:
    own: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        total += int(count)
        own[frames[-1]] += int(count)
    return [(frame, round(100 * c / total, 1)) for frame, c in own.most_common(n)]


# ----- the run and its report ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)))
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--before", default="HEAD~1", help="the commit the before-* configurations run")
    parser.add_argument("--quick", action="store_true", help="fewer levels, shorter runs, no 10,000 sessions")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every configuration")
    parser.add_argument(
        "--throughput-only",
        action="store_true",
        help="no memory curves, group memory, hop bytes or profiles: a regression check",
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--replicas", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--shards", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="only the scaling table: SCALING_CONFIGS (or "
        "--configs) at concurrency 64 over replicas x shards (SCALING), CPU per rollout by process, "
        "in --rounds interleaved rounds",
    )
    parser.add_argument("--code-root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--hop-bytes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="serve_rollouts", help="the report's name under bench/results/")
    parser.add_argument("--render", action="store_true", help="rewrite the report and plots from the last JSON")
    options = parser.parse_args()
    if options.serve:
        return serve(options.serve, options.code_root, options.port, options.corpus, options.replicas, options.shards)
    if options.hop_bytes:
        return hop_bytes(options.code_root, options.corpus)

    from _common import DATA, machine, write_report

    if options.scaling:
        path = ROOT / "bench/results/serve_scaling.json"
        if options.render:
            results = json.loads(path.read_text())
        else:
            configs = SCALING_CONFIGS if options.configs == ",".join(CONFIGS) else tuple(options.configs.split(","))
            results = scaling(options.seconds, machine(), options.rounds, configs)
            path.write_text(json.dumps(results, indent=1))
        # A fresh run's tables never carry the reading of an earlier one: the reading is added with --render.
        print(write_report("serve_scaling.md", render_scaling(results, reading("serve_scaling", options.render))))
        return
    if options.render:
        results = json.loads((ROOT / f"bench/results/{options.out}.json").read_text())
        write_report(f"{options.out}.md", render(results, reading(options.out, True)))
        plot(results, options.out)
        return

    levels = [1, 64, 256] if options.quick else [int(x) for x in options.levels.split(",")]
    seconds = 6.0 if options.quick else options.seconds
    real = DATA.is_dir()
    configs = options.configs.split(",")
    results: dict = {
        "machine": machine(),
        "levels": levels,
        "seconds": seconds,
        "rounds": options.rounds,
        "command": " ".join(["bench/serve_rollouts.py", *sys.argv[1:]]),
        "before": options.before,
        "out": options.out,
        **run_facts(configs),
        "configs": {},
    }
    extras = not options.throughput_only
    with commit_tree(options.before) as before_root:
        runs: dict[str, list[dict]] = defaultdict(list)
        for round_ in range(options.rounds):
            # Interleaved: every configuration once a round, the order reversed every other round, so the
            # machine's drift (25-40% between passes here) falls on each configuration alike.
            for config in configs if round_ % 2 == 0 else configs[::-1]:
                root = before_root if shape_of(config).before else ROOT
                runs[config].append(run_config(config, root, levels, seconds, options, extras and round_ == 0))
        for config in configs:
            row = merge_rounds(runs[config], runs.get("baseline"))
            if extras and real and config != "serve-proxy":
                server = Server(config, before_root if shape_of(config).before else ROOT, corpus=str(DATA))
                try:
                    row["memory_group"] = group_memory(server)
                finally:
                    server.stop()
            results["configs"][config] = row
        if extras and real:
            results["hop_bytes"] = {
                "this": measure_hop_bytes(ROOT, str(DATA)),
                "before": measure_hop_bytes(before_root, str(DATA)),
            }
    (ROOT / f"bench/results/{options.out}.json").write_text(json.dumps(results, indent=1))
    write_report(f"{options.out}.md", render(results))
    plot(results, options.out)
    print(render(results))
    print(
        f"now write what this run says in bench/results/{options.out}.reading.md, then run "
        f"`.venv/bin/python bench/serve_rollouts.py --render --out {options.out}`"
    )


def reading(out: str, render: bool) -> str | None:
    """bench/results/<out>.reading.md, the reading of a run written by hand: only when rendering a run again."""
    path = ROOT / f"bench/results/{out}.reading.md"
    return path.read_text() if render and path.is_file() else None


def shard_calls(url: str) -> dict[str, int]:
    import httpx

    return httpx.get(url + "/session_counters", timeout=30).json()["shard_calls"]


def warm(server: Server) -> None:
    load(server.url, 16, 3.0, 1.0)
    time.sleep(2.0)


def steady(server: Server, level: int, seconds: float) -> dict:
    """`level` rollouts in flight for `seconds` on a warm server: rollouts/s, errors, the server's CPU per rollout
    by process (the load generator left out) and the operations each shard call carried."""
    before = shard_calls(server.url)
    sampler = ThreadPoolExecutor(1).submit(cpu_by_role, server, 4.0, max(1.0, seconds - 3))
    measured = load(server.url, level, seconds, 2.0)
    shares = sampler.result()
    after = shard_calls(server.url)
    rate = rollouts_per_s(measured)
    return {
        "rollouts_per_s": rate,
        "errors": measured["errors"],
        "cpu_ms_per_rollout": {role: share * os.cpu_count() * 1000 / rate for role, share in shares.items()}
        if rate
        else {},
        "operations_per_shard_call": (after["operations"] - before["operations"])
        / max(1, after["batches"] - before["batches"]),
    }


def scaling(seconds: float, about: str, rounds: int, configs: tuple[str, ...]) -> dict:
    """Each configuration at concurrency 64 for each (replicas, shards), in interleaved rounds (the order reversed
    every other round): rollouts/s, the server's CPU per rollout by process (the load generator left out), and how
    many operations each shard call carried."""
    cells = list(itertools.product(SCALING, configs))
    rows = []
    for round_, ((replicas, shards), config) in (
        (n, cell) for n in range(rounds) for cell in (cells if n % 2 == 0 else cells[::-1])
    ):
        server = Server(config, ROOT, replicas=replicas, shards=shards)
        try:
            warm(server)
            idle = sum(cpu_by_role(server, 0, 4.0).values())  # what the processes cost doing nothing
            measured = steady(server, CPU_LEVEL, seconds)
        finally:
            server.stop()
        per_rollout = measured["cpu_ms_per_rollout"]
        rows.append(
            {
                "round": round_ + 1,
                "config": config,
                "replicas": replicas,
                "shards": shards,
                **measured,
                "idle_cpu_share": idle,
            }
        )
        print(
            f"round {round_ + 1}:",
            config,
            replicas,
            shards,
            f"{measured['rollouts_per_s']:.1f} rollouts/s",
            f"{sum(per_rollout.values()):.1f} ms CPU a rollout",
            flush=True,
        )
    return {
        "machine": about,
        "seconds": seconds,
        "concurrency": CPU_LEVEL,
        "rounds": rounds,
        "rows": rows,
        **run_facts([]),
    }


def run_facts(configs: list[str]) -> dict:
    """What a report reads of the machine that ran it, kept in its JSON so that `--render` elsewhere or later
    reads the run's figures, not its own: the core count, and Serve's floor as serve_floor.json had it then."""
    floors = {name: serve_floor_ms(ROOT / "bench/results/serve_floor.json", name) for name in configs}
    return {"cores": os.cpu_count(), "serve_floor_ms": {name: ms for name, ms in floors.items() if ms is not None}}


def run_config(config: str, root: Path, levels: list[int], seconds: float, options, extras: bool) -> dict:
    """One round of one configuration on a fresh server: a warm-up, then each level; with `extras`, the CPU by
    process, profiles and the open-sessions memory curve too."""
    from finsec_client.summary import shard_time  # the parent's code (`--serve` may run another commit's)

    server = Server(config, root)
    try:
        row: dict = {"throughput": []}
        flags = client_flags(config)
        load(server.url, 16, 3.0, 1.0, flags)  # warm every cache the way a first GRPO step would
        time.sleep(2.0)
        row["idle_cpu_share"] = sum(cpu_by_role(server, 0, 4.0).values())  # its processes doing nothing
        for level in levels:
            if level == CPU_LEVEL:  # where the machine's two cores go, sampled inside the window
                sampler = ThreadPoolExecutor(1).submit(cpu_by_role, server, 4.0, max(1.0, seconds - 3))
            counted = shard_calls(server.url) if level == 1 else None
            row["throughput"].append(load(server.url, level, seconds, 2.0, flags))
            if counted is not None:  # one request at a time: the shard's means are each request's
                row["shard_time_at_1"] = shard_time(counted, shard_calls(server.url))
            if level == CPU_LEVEL:
                row["cpu_share_at_64"] = sampler.result()
            print(
                config,
                level,
                f"{rollouts_per_s(row['throughput'][-1]):.1f} rollouts/s",
                f"errors={row['throughput'][-1]['errors']}",
                flush=True,
            )
        if extras and options.profile and not shape_of(config).in_process and shape_of(config).ingress == "haproxy":
            row["profile"] = profile(server, 10.0, ROOT / f"bench/out/profile-{config}.txt")
        if extras and config != "serve-proxy":
            row["memory_open_sessions_mb"] = memory_curve(server, (1_000,) if options.quick else (1_000, 10_000))
        return row
    finally:
        server.stop()


def merge_rounds(rounds: list[dict], baseline: list[dict] | None) -> dict:
    """One configuration over its rounds: per level the round with the median rate (its latencies and CPU are
    reported), every round's rate, and every round's ratio to the baseline's rate in the same round."""
    row = {key: value for key, value in rounds[0].items() if key != "throughput"}
    row["throughput"] = []
    for i in range(len(rounds[0]["throughput"])):
        runs = sorted((r["throughput"][i] for r in rounds), key=rollouts_per_s)
        middle = dict(runs[len(runs) // 2])
        middle["rounds_rollouts_per_s"] = [rollouts_per_s(r["throughput"][i]) for r in rounds]
        middle["rounds_p50_ms"] = [r["throughput"][i]["p50_ms"] for r in rounds]
        if baseline:
            middle["rounds_ratio"] = [
                rollouts_per_s(r["throughput"][i]) / rollouts_per_s(b["throughput"][i])
                for r, b in zip(rounds, baseline, strict=False)
            ]
        row["throughput"].append(middle)
    if "idle_cpu_share" in rounds[0]:
        row["idle_cpu_share"] = statistics.median(r["idle_cpu_share"] for r in rounds)
    timed = [r["shard_time_at_1"] for r in rounds if r.get("shard_time_at_1")]
    if timed:
        row["shard_time_at_1"] = {k: statistics.median(t[k] for t in timed) for k in timed[0]}
    if len(rounds) > 1 and "cpu_share_at_64" in rounds[0]:
        row["cpu_share_at_64"] = {
            role: statistics.median(r.get("cpu_share_at_64", {}).get(role, 0) for r in rounds)
            for role in rounds[0]["cpu_share_at_64"]
        }
    return row


def plot(results: dict, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for metric, label, name in (
        (rollouts_per_s, "rollouts/s", "throughput"),
        (lambda t: t["all_p99_ms"] or 0, "p99 latency per request, ms", "p99"),
    ):
        figure, axes = plt.subplots(figsize=(7, 4))
        for config, row in results["configs"].items():
            axes.plot(results["levels"], [metric(t) for t in row["throughput"]], marker="o", label=config)
        axes.set_xscale("log")
        axes.set_xlabel("concurrent rollouts")
        axes.set_ylabel(label)
        axes.legend()
        axes.grid(alpha=0.3)
        figure.tight_layout()
        figure.savefig(ROOT / f"bench/results/{out}_{name}.png", dpi=110)
        plt.close(figure)


if __name__ == "__main__":
    main()
