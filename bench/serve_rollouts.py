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
- `serve-proxy`: the same behind Serve's default Python proxy;
- `before-haproxy`: the code of the commit before this work (`--before`, default e66df0b), behind HAProxy, so the
  change is measured against what it replaced in the same run.

The load generator (bench/loadgen.py, aiohttp) runs in its own processes and drives 8-request rollouts at each
concurrency; its CPU share is reported. Then resident memory (all processes of the configuration) at 0, 1,000 and
10,000 open sessions, and for one session vs a 16-session group parsing one real 10-K; the bytes that cross the
shard hop per request; and, with `--profile`, py-spy profiles of a replica and a shard under load.
Writes bench/results/serve_rollouts.{md,json} and serve_rollouts_{throughput,p99}.png.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _common import commit_tree, run_loadgen  # noqa: E402

CONFIGS = ("baseline", "serve-haproxy", "ray-hop-haproxy", "redis-haproxy", "affine-haproxy", "nowatch-haproxy",
           "redis-nowatch-haproxy", "redis-nowatch-preempt-haproxy", "redis-nowatch-quiet-haproxy",
           "redis-nowatch-stats-haproxy", "serve-proxy", "before-haproxy")
# Not in the default run: `baseline-uvloop`, the baseline on uvloop (serve_rollouts_uvloop.md).
# A "preempt" configuration starts its cluster under the default scheduling policy, as before
# deployments/cpu_policy.py (every other one runs under SCHED_BATCH).
LEVELS = (1, 16, 64, 256, 1024)
CPU_LEVEL = 64
def biggest_filing() -> str:
    """The url_path of the largest real filing (a 10-K of ~2.6 MB of HTML)."""
    from _common import real_filings

    return max(real_filings(), key=lambda f: f.path.stat().st_size).url_path


# ----- the server side: one configuration per process tree ----------------------------------------------------


def serve(config: str, code_root: Path, port: int, corpus: str | None, replicas: int = 2,
          shards: int | None = None) -> None:
    """Run one configuration until stdin closes; print one READY line with its URL first."""
    sys.path.insert(0, str(code_root))
    os.chdir(code_root)
    if corpus:
        os.environ["FINSEC_CORPUS_DIR"] = corpus
    import yaml
    from pydantic import SecretStr

    args = yaml.safe_load((ROOT / "configs/serve.yaml").read_text())["applications"][0]["args"]
    from deployments.settings import Settings

    shape = config.removeprefix("before-")  # "before-<shape>": that shape on the earlier commit's code
    settings = Settings(**{**args, "app_name": f"bench-{uuid.uuid4().hex[:6]}",
                           **({"num_shards": shards} if shards else {}),
                           **({"shard_transport": "ray"} if shape.startswith("ray-hop") else {})})
    if config.startswith("baseline"):
        import uvicorn

        from deployments.inprocess import in_process_app

        api = in_process_app(settings).api
        server = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning"))
        print("READY " + json.dumps({"url": f"http://127.0.0.1:{port}"}), flush=True)
        if config == "baseline":
            asyncio.run(_until_stdin_closes(server))
        else:  # on the loop the replicas run (and `uvicorn.run` picks): no faster here (serve_rollouts_uvloop.md)
            import uvloop

            uvloop.run(_until_stdin_closes(server))
        return
    os.environ["RAY_SERVE_ENABLE_HA_PROXY"] = "1" if config.endswith("haproxy") else "0"
    tokens = shape.split("-")
    if "quiet" in tokens or "stats" in tokens:  # set before Ray starts, so the node tuning's default stands aside
        os.environ["RAY_event_stats"] = "1" if "stats" in tokens else "0"
    if shape.startswith("affine"):
        from deployments.serve_tuning import ROLLOUT_AFFINITY

        os.environ.update(ROLLOUT_AFFINITY)
    stack = ExitStack()  # what this configuration runs beside Ray, stopped with it
    if shape.startswith("redis"):
        from tests.redis_server import running_redis

        redis = stack.enter_context(running_redis())
        settings = settings.model_copy(update={"mark_store_url": SecretStr(redis.url)})
    os.environ["PYTHONPATH"] = str(code_root)  # Ray workers import this code, not the installed one
    from deployments import local
    known = local.start_ray_and_serve.__code__.co_varnames  # an older commit (before-haproxy) knows fewer
    url = local.start_ray_and_serve(port, **({"ingress": "haproxy" if config.endswith("haproxy") else "proxy"}
                                             if "ingress" in known else {}),
                                    **({"batch_scheduling": "preempt" not in config.split("-")}
                                       if "batch_scheduling" in known else {}))
    local.deploy(settings, url, replicas=replicas)
    print("READY " + json.dumps({"url": url}), flush=True)
    sys.stdin.read()
    local.undeploy(settings)
    stop = getattr(local, "stop_ray_and_serve", None)
    if stop:
        stop()
    else:
        import ray

        ray.shutdown()
    stack.close()


async def _until_stdin_closes(server) -> None:
    task = asyncio.create_task(server.serve())
    await asyncio.to_thread(sys.stdin.read)
    server.should_exit = True
    await task


class Server:
    def __init__(self, config: str, code_root: Path, corpus: str | None = None, replicas: int = 2,
                 shards: int | None = None):
        from finsec.net.ports import free_port

        port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", config, "--code-root", str(code_root), "--port", str(port),
             "--replicas", str(replicas), *(["--shards", str(shards)] if shards else []),
             *(["--corpus", corpus] if corpus else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
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
ROLES = (("ServeReplica", "ingress replicas"), ("SessionShard", "session shards"), ("ShardService", "session shards"),
         ("DocumentStore", "document store"), ("TextCache", "document store"), ("Reaper", "reaper"), ("haproxy", "HAProxy"), ("HAProxyManager", "Serve's HAProxy manager"),
         ("gcs_server", "GCS"), ("raylet", "raylet"), ("ServeController", "Serve controller"),
         ("ProxyActor", "Serve proxy actor"), ("--serve", "the script's server process"))


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
    return [*(["--rollout-prefix"] if config.startswith("affine") else []),
            *(["--no-disconnect-watch"] if "nowatch" in config.split("-") else [])]


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
        "client_cpu_share": sum(p["cpu_seconds"] for p in parts) / (max(p["wall_seconds"] for p in parts)
                                                                     * os.cpu_count()),
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
                seed = {"resources_session_id": sid, "episode_id": episode,
                        "task_id": {"taskset": "mem", "task_id": str(i)}, "task_data": {}}
                async with session.post("/seed_session", json=seed) as r:
                    assert r.status == 200, await r.text()
                async with session.post("/parse_html_page", json={"url": task_urls[i % len(task_urls)],
                                                                  "key": "filing"}) as r:
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
    return {"one_session_mb": after_one - start, "group_of_16_mb": after_group - start,
            "ratio": (after_group - start) / max(after_one - start, 1e-9)}


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
        async with api.router.lifespan_context(api):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(api), base_url="http://b") as client:
                sid, episode = "resources-session-bytes", {"rollout_id": "b", "attempt": 0}
                steps = [("seed_session", {"resources_session_id": sid, "episode_id": episode,
                                           "task_id": {"taskset": "b", "task_id": "b"}, "task_data": {}}),
                         ("parse_html_page", {"url": "https://www.sec.gov/" + filing, "key": "filing"}),
                         ("retrieve_information", {"prompt": "total revenues {{filing}}"}),
                         ("retrieve_information", {"prompt": "net income {{filing}}"}),
                         ("verify", {"responses_create_params": {"input": [{"role": "user", "content": "q"}]},
                                     "response": {"output": []}, "question": "q", "expected_answer": "1"}),
                         ("close_session", {"resources_session_id": sid, "episode_id": episode})]
                for i, (path, body) in enumerate(steps):
                    route["name"] = f"{i + 1}. {path}"
                    r = await client.post("/" + path, json=body)
                    assert r.status_code == 200, r.text

    asyncio.run(rollout())
    print(json.dumps(dict(sizes)))


def measure_hop_bytes(code_root: Path, corpus: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--hop-bytes", "--code-root", str(code_root), "--corpus", corpus],
                         capture_output=True, text=True, cwd=code_root, env={**os.environ, "PYTHONPATH": str(code_root)})
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"error": out.stderr[-500:]}


# ----- profiles ------------------------------------------------------------------------------------------------


def profile(server: Server, seconds: float, out: Path) -> dict:
    """py-spy on one replica and one shard while loadgen runs at concurrency 64: their top frames by own time."""
    targets = {"replica": server.pids("ServeReplica")[:1], "shard": (server.pids("SessionShardActor")
                                                                     or server.pids("SessionShard"))[:1]}
    spies = {}
    for role, pids in targets.items():
        if pids:
            path = out.with_name(f"{out.stem}-{role}.txt")
            spies[role] = (path, subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(pids[0]), "--duration",
                                                   str(int(seconds)), "--format", "raw", "--output", str(path),
                                                   "--nonblocking"], stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL))
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
    parser.add_argument("--before", default="e66df0b", help="the commit to compare with (before-haproxy)")
    parser.add_argument("--quick", action="store_true", help="fewer levels, shorter runs, no 10,000 sessions")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every configuration")
    parser.add_argument("--throughput-only", action="store_true",
                        help="no memory curves, group memory, hop bytes or profiles: a regression check")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--replicas", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--shards", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--scaling", action="store_true", help="only the scaling table: SCALING_CONFIGS (or "
                        "--configs) at concurrency 64 over replicas x shards (SCALING), CPU per rollout by process, "
                        "in --rounds interleaved rounds")
    parser.add_argument("--code-root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--hop-bytes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="serve_rollouts", help="the report's name under bench/results/")
    parser.add_argument("--render", action="store_true", help="rewrite the report and plots from the last JSON")
    options = parser.parse_args()
    if options.serve:
        return serve(options.serve, options.code_root, options.port, options.corpus, options.replicas,
                     options.shards)
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
        print(write_report("serve_scaling.md", render_scaling(results)))
        return
    if options.render:
        results = json.loads((ROOT / f"bench/results/{options.out}.json").read_text())
        write_report(f"{options.out}.md", render(results))
        plot(results, options.out)
        return

    levels = [1, 64, 256] if options.quick else [int(x) for x in options.levels.split(",")]
    seconds = 6.0 if options.quick else options.seconds
    real = DATA.is_dir()
    configs = options.configs.split(",")
    results: dict = {"machine": machine(), "levels": levels, "seconds": seconds, "rounds": options.rounds,
                     "command": " ".join(["bench/serve_rollouts.py", *sys.argv[1:]]), "before": options.before,
                     "out": options.out, **run_facts(configs),
                     "configs": {}}
    extras = not options.throughput_only
    with commit_tree(options.before) as before_root:
        runs: dict[str, list[dict]] = defaultdict(list)
        for round_ in range(options.rounds):
            # Interleaved: every configuration once a round, the order reversed every other round, so the
            # machine's drift (25-40% between passes here) falls on each configuration alike.
            for config in (configs if round_ % 2 == 0 else configs[::-1]):
                root = before_root if config.startswith("before") else ROOT
                runs[config].append(run_config(config, root, levels, seconds, options, extras and round_ == 0))
        for config in configs:
            row = merge_rounds(runs[config], runs.get("baseline"))
            if extras and real and config != "serve-proxy":
                server = Server(config, before_root if config.startswith("before") else ROOT, corpus=str(DATA))
                try:
                    row["memory_group"] = group_memory(server)
                finally:
                    server.stop()
            results["configs"][config] = row
        if extras and real:
            results["hop_bytes"] = {"this": measure_hop_bytes(ROOT, str(DATA)),
                                    "before": measure_hop_bytes(before_root, str(DATA))}
    (ROOT / f"bench/results/{options.out}.json").write_text(json.dumps(results, indent=1))
    write_report(f"{options.out}.md", render(results))
    plot(results, options.out)
    print(render(results))


# (replicas, shards): the per-core issue asks CPU per rollout to stay flat from 2 to 16 shards and 2 to 8 replicas.
SCALING = ((1, 1), (1, 2), (2, 2), (2, 8), (2, 16), (4, 16), (8, 16))
SCALING_CONFIGS = ("serve-haproxy", "ray-hop-haproxy")  # the direct transport, and actor calls beside it
SERVER_ROLES = ("ingress replicas", "session shards", "HAProxy")


def shard_calls(url: str) -> dict[str, int]:
    import httpx

    return httpx.get(url + "/session_counters", timeout=30).json()["shard_calls"]


def scaling(seconds: float, about: str, rounds: int, configs: tuple[str, ...]) -> dict:
    """Each configuration at concurrency 64 for each (replicas, shards), in interleaved rounds (the order reversed
    every other round): rollouts/s, the server's CPU per rollout by process (the load generator left out), and how
    many operations each shard call carried."""
    cells = list(itertools.product(SCALING, configs))
    rows = []
    for round_, ((replicas, shards), config) in ((n, cell) for n in range(rounds)
                                                 for cell in (cells if n % 2 == 0 else cells[::-1])):
        server = Server(config, ROOT, replicas=replicas, shards=shards)
        try:
            load(server.url, 16, 3.0, 1.0)  # warm
            time.sleep(2.0)
            idle = sum(cpu_by_role(server, 0, 4.0).values())  # what the processes cost doing nothing
            before = shard_calls(server.url)
            sampler = ThreadPoolExecutor(1).submit(cpu_by_role, server, 4.0, max(1.0, seconds - 3))
            measured = load(server.url, CPU_LEVEL, seconds, 2.0)
            shares = sampler.result()
            after = shard_calls(server.url)
        finally:
            server.stop()
        rate = rollouts_per_s(measured)
        per_rollout = {role: share * os.cpu_count() * 1000 / rate for role, share in shares.items()} if rate else {}
        batches = after["batches"] - before["batches"]
        rows.append({"round": round_ + 1, "config": config, "replicas": replicas, "shards": shards,
                     "rollouts_per_s": rate,
                     "errors": measured["errors"], "idle_cpu_share": idle,
                     "cpu_ms_per_rollout": per_rollout,
                     "operations_per_shard_call": (after["operations"] - before["operations"]) / max(1, batches)})
        print(f"round {round_ + 1}:", config, replicas, shards, f"{rate:.1f} rollouts/s",
              f"{sum(per_rollout.values()):.1f} ms CPU a rollout", flush=True)
    return {"machine": about, "seconds": seconds, "concurrency": CPU_LEVEL, "rounds": rounds, "rows": rows,
            **run_facts([])}


def run_facts(configs: list[str]) -> dict:
    """What a report reads of the machine that ran it, kept in its JSON so that `--render` elsewhere or later
    reads the run's figures, not its own: the core count, and Serve's floor as serve_floor.json had it then."""
    from ceiling import serve_floor_ms

    floors = {name: serve_floor_ms(ROOT / "bench/results/serve_floor.json", name) for name in configs}
    return {"cores": os.cpu_count(), "serve_floor_ms": {name: ms for name, ms in floors.items() if ms is not None}}


def cores_of(results: dict) -> int:
    return results.get("cores") or os.cpu_count()  # a run from before it was recorded: this machine's


def render_scaling(results: dict) -> str:
    cells: dict[tuple, list[dict]] = {}  # (config, replicas, shards) -> its rows, a round each
    for r in results["rows"]:
        cells.setdefault((r.get("config", "serve-haproxy"), r["replicas"], r["shards"]), []).append(r)

    def total(r: dict) -> float:
        return sum(r["cpu_ms_per_rollout"].values())

    def vs_2x2(r: dict, config: str) -> float | None:  # each transport against its 2 x 2 of the same round
        base = next((b for b in cells.get((config, 2, 2), []) if b.get("round") == r.get("round")), None)
        return total(r) / total(base) if base else None

    def median(values) -> float:
        return statistics.median(list(values))

    rounds = results.get("rounds", 1)
    configs = [config for config in SCALING_CONFIGS if any(key[0] == config for key in cells)]
    flags = (f" --configs {','.join(configs)}" if configs != list(SCALING_CONFIGS) else "") \
        + (f" --rounds {rounds}" if rounds > 1 else "")
    out = ["# CPU per rollout as the Serve app grows: replicas x shards", "",
           f"{results['machine']}. Produced by `.venv/bin/python bench/serve_rollouts.py --scaling{flags}`: the Serve "
           f"app behind HAProxy (configs/serve.yaml's settings, the replica and shard counts below, all on this "
           f"2-core machine: many replicas and shards by simulation) at concurrency {results['concurrency']}, "
           f"{results['seconds']:.0f} s measured each, {rounds} interleaved round(s) (the order reversed every other "
           "round; the median, with the range in brackets; a ratio is taken within each round; the columns by "
           "process are medians); `serve-haproxy` sends batches over the direct transport "
           "(as shipped), `ray-hop-haproxy` as Ray actor calls. CPU per rollout: each process's CPU over the "
           "window, over the rollouts completed in it (the load generator left out). Operations per shard call: "
           "how well the replicas' calls to a shard coalesce. Idle: the same processes' CPU over 4 s with no "
           "load, before the window (% of one core), and what that idle cost comes to per rollout at the "
           "measured rate.", "",
           "| config | replicas | shards | rollouts/s | server CPU ms per rollout (vs its 2 x 2) | replicas | "
           "shards | HAProxy | other processes | operations per shard call | idle: % of a core, ms per rollout |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {config: n for n, config in enumerate(SCALING_CONFIGS)}
    for (config, replicas, shards), runs in sorted(cells.items(), key=lambda kv: (order.get(kv[0][0], 99),
                                                                                  SCALING.index(kv[0][1:]))):
        ratios = [x for x in (vs_2x2(r, config) for r in runs) if x is not None]
        roles = [median(r["cpu_ms_per_rollout"].get(role, 0) for r in runs) for role in SERVER_ROLES]
        other = median(total(r) - sum(r["cpu_ms_per_rollout"].get(role, 0) for role in SERVER_ROLES) for r in runs)
        middle = sorted(runs, key=total)[len(runs) // 2]  # the idle column of the median round
        out.append(f"| {config} | {replicas} | {shards} | {spread([r['rollouts_per_s'] for r in runs])} | "
                   f"{spread([total(r) for r in runs])}{'; ' + spread(ratios, 'x', 2) if ratios else ''} | "
                   + " | ".join(f"{ms:.1f}" for ms in roles)
                   + f" | {other:.1f} | {median(r['operations_per_shard_call'] for r in runs):.1f} | "
                   f"{idle(middle, cores_of(results))} |")
    return "\n".join(out + ["", *SCALING_FINDINGS]) + "\n"


def idle(row: dict, cores_run: int) -> str:
    if "idle_cpu_share" not in row:
        return "-"
    cores = row["idle_cpu_share"] * cores_run
    return f"{100 * cores:.0f}%, {1000 * cores / row['rollouts_per_s']:.1f}" if row["rollouts_per_s"] else "-"


# Read off the table above by hand.
SCALING_FINDINGS = [
    "## Reading", "",
    "This run (2026-12-04 18:57 UTC, the app's code of 61c943b) measures each cell in 3 interleaved rounds; the "
    "tables before it had one window a cell, and on the same code read 2 to 16 shards at 1.22x (15:51) and 1.46x "
    "(18:06). The node tuning is as `finsec serve` sets it: SCHED_BATCH and Ray's event-loop statistics off. The "
    "app is configs/serve.yaml's (marks in the GCS), the client keeps Serve's disconnect watch.", "",
    "- Shards, 2 to 16 at 2 replicas: 1.42x (1.37-1.46x) the CPU a rollout. **Not within the 15% the issue asks.** "
    "The shards' CPU a rollout grows from 1.1 to 3.3 ms, the replicas' from 6.4 to 6.9 and the other processes' "
    "(the GCS, which takes the marks) from 1.0 to 1.4: batches of 5.2 operations at 2 shards are 1.4 at 16, so a "
    "rollout's six operations become ~4.3 calls instead of ~1.2, and each call wakes a shard process that was "
    "asleep; the idle cluster grows from 20% to 24% of a core, since every idle Ray worker wakes 100 times a "
    "second. bench/results/shard_fanout.md splits the growth with stand-in replicas: from 2 to 16 shards a bare "
    "transport that answers at once costs +0.70 ms a rollout, the app's shard over Redis marks in a plain process "
    "+1.61 ms, and the app's shard actor over GCS marks +2.44 ms, where 15% of 2 x 2 here is +1.3 ms. So a process "
    "per shard with durable marks cannot be brought within 15% on two cores by trimming its code. What would keep "
    "the CPU flat is fewer calls or fewer processes to wake (several shards' partitions in one process); neither is "
    "built: the first weakens the fence rules unless a rollout's requests reach one replica, and the second only "
    "changes what a shard count means on a machine this size. On a cluster, where shards spread over nodes and "
    "each is called by many replicas, calls come closer together and cost the back-to-back figure. Over Ray actor "
    "calls instead of the direct transport the same step read 2.36x (the one-window table of 18:06, b629575).",
    "- One replica instead of two: 1 x 1 spends 0.81x (0.79-0.84x) the CPU a rollout of 2 x 2, and two replicas "
    "reach 1.05x (1.00-1.08x) one replica's rollouts/s: on two cores a second replica buys little throughput.",
    "- Replicas, 2 to 8 at 16 shards: 1.62x (1.56-1.65x): eight replicas and sixteen shards on two cores idle at a "
    "third of a core and share it among fewer rollouts/s. On a real cluster each replica has a core of its own and "
    "that cost is a few per cent of it. `RAY_SERVE_METRICS_EXPORT_INTERVAL_MS=1000` took ~2% of a core off 8 idle "
    "replicas in one reading: too little to tune for.",
]


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
            print(config, level, f"{rollouts_per_s(row['throughput'][-1]):.1f} rollouts/s",
                  f"errors={row['throughput'][-1]['errors']}", flush=True)
        if extras and options.profile and config.endswith("haproxy"):
            row["profile"] = profile(server, 10.0, ROOT / f"bench/results/profile-{config}.txt")
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
            middle["rounds_ratio"] = [rollouts_per_s(r["throughput"][i]) / rollouts_per_s(b["throughput"][i])
                                      for r, b in zip(rounds, baseline)]
        row["throughput"].append(middle)
    if "idle_cpu_share" in rounds[0]:
        row["idle_cpu_share"] = statistics.median(r["idle_cpu_share"] for r in rounds)
    timed = [r["shard_time_at_1"] for r in rounds if r.get("shard_time_at_1")]
    if timed:
        row["shard_time_at_1"] = {k: statistics.median(t[k] for t in timed) for k in timed[0]}
    if len(rounds) > 1 and "cpu_share_at_64" in rounds[0]:
        row["cpu_share_at_64"] = {role: statistics.median(r.get("cpu_share_at_64", {}).get(role, 0) for r in rounds)
                                  for role in rounds[0]["cpu_share_at_64"]}
    return row


def spread(values: list[float] | None, unit: str = "", digits: int = 1) -> str:
    """`median` for one value, `median (min-max)` for rounds."""
    if not values:
        return ""
    middle = statistics.median(values)
    if len(values) == 1:
        return f"{middle:.{digits}f}{unit}"
    return f"{middle:.{digits}f}{unit} ({min(values):.{digits}f}-{max(values):.{digits}f}{unit})"


def rollouts_per_s(t: dict) -> float:
    """Steady-state rollouts/s: the successful requests that ended inside the window, over the 8 of a rollout.
    (Whole rollouts ending inside it come in waves at high concurrency, so requests are the smoother count.)"""
    return t["requests_per_s"] / 8


# What the profiles and the side benches led to, and what they say still limits the Serve path. Written by hand;
# the figures each line leans on are in the tables this report renders and in the reports it names.
# The direct transport against Ray actor calls (--out serve_rollouts_hop; the main report until 2026-12-04).
HOP_FINDINGS = [
    "## The shard hop: which, and why", "",
    "- Measured first (bench/results/actor_hop.md): one Ray actor call costs ~0.8 ms of CPU in the caller and "
    "~1 ms in the shard (every thread of each process), 1.7 ms p50. A threaded actor saves ~0.35 ms of latency and "
    "no CPU; compiled graphs fit static pipelines, not a replica choosing one of N shards per request. The same "
    "batch over a socket of the replica's own, pickled frames with request IDs, costs ~35 us a side and 0.06 ms "
    "p50. So: the direct transport (`session_store/direct/`), the coalescer kept, the actor kept for lifecycle, "
    "placement, restarts and for telling replicas where it listens. `shard_transport: ray` keeps the actor calls "
    "(the `ray-hop-haproxy` column).",
    "- What it bought here: at concurrency 1 a stateful route is ~2 ms faster (the latency table); the shards' CPU "
    "per rollout falls by ~40%; and batching no longer has to carry the hop, so CPU per rollout grows less from 2 "
    "to 16 shards (bench/results/serve_scaling.md: 1.00-1.43x over three runs, against 1.7-1.95x over actor "
    "calls in the two runs without an outlier). At 64 and 256 on two "
    "cores the rollouts/s of the two hops overlap: at 5 operations a call the coalescer had already shared the "
    "actor call's cost, and the replicas, not the shards, fill the machine.",
    "- Fewer operations per rollout was the third option: every tool must learn from its shard whether the session "
    "is open (a lost session is a 404 `session_lost`, contract §C.6), so a hop can only be skipped by answering "
    "without knowing, which the fault promises forbid.",
    "- Every fault, head-loss and race test passes unchanged over the direct transport; "
    "tests/unit/test_direct_transport.py covers its own failures (a shard process gone mid-batch, no answer in "
    "time, a moved shard, a stranger without the token, an oversized frame).",
    "",
    "## What still limits the per-core ratio", "",
    "- Serve's own cost per request (bench/results/serve_floor.md): a trivial route costs ~330-400 us more CPU in "
    "a Serve replica behind HAProxy than in plain uvicorn (two runs), ~2.7-3.2 ms per 8-request rollout, before "
    "any app code; ~140 us of it is the replica watching each client for a disconnect, which a client can opt out "
    "of (serve_rollouts_nowatch.md). The one-process baseline spends ~4-7 ms on a whole rollout (by run), and the "
    "load generator shares the Serve path's two cores: serve_rollouts_ceiling.md works out that even with a free "
    "hop the Serve path tops out at 0.97-0.99x of it.",
    "- Beside that, the rollout's own durable writes: each episode seed and each close writes a mark before it "
    "answers (the fence and lost-session promises); with the GCS store that is a KV put through the head's GCS, "
    "~1 ms at concurrency 1, which is why `seed_session` and `close_session` sit ~1.5 ms above "
    "`submit_final_result` where the other stateful routes sit ~0.6 ms above it once their own work is taken out "
    "(the targets table). Redis puts it at a fraction of that (bench/results/serve_rollouts_options.md).",
    "- py-spy (below) samples wall time, not CPU: on a full 2-core machine a runnable replica waiting for a core "
    "is counted too, so its shares overstate `RequestResponseCycle.send` and Ray's idle threads. A CPU-clock "
    "cProfile of both servers (concurrency 8) put the app's own code within ~10% of the baseline's per request; "
    "serve_rollouts_ceiling.md since counts the calls (~24% more a request in a replica) against /proc's CPU "
    "(~70% more): each call costs ~35% more in a replica, which cProfile's own overhead hid.",
    "",
]

def ratios(t: dict, base: float | None) -> list[float]:
    """A level's ratios to the baseline: per round when the run had rounds, else against the baseline's rate."""
    return t.get("rounds_ratio") or ([rollouts_per_s(t) / base] if base else [])


# The options of the Serve path (--out serve_rollouts_options): the Redis mark store and rollout-affine routing.
OPTIONS_FINDINGS = [
    "## Reading", "",
    "- **The Redis mark store** (`mark_store_url`, the production path of cluster/overlays/redis) is the largest "
    "lever found: 0.76x the baseline at 64 against 0.53x with the GCS store, ~12 ms of server CPU a rollout "
    "against ~16 ms. Each episode seed and close writes a mark before it answers; through the GCS that is a put "
    "to the head's GCS process (its CPU, the shards' client threads, and the wait), through Redis one pipelined "
    "command. At concurrency 1 the stateful routes then sit within ~0.9 ms of `submit_final_result` for the "
    "lifecycle routes and ~0.5 ms once each route's own work is taken out. The GCS stays the default: the "
    "embedded setup may need nothing outside Ray.",
    "- **Rollout-affine routing** (`affine-haproxy`: HAProxy hashing the `/ng-rollout/<id>/` prefix, "
    "serve_tuning.ROLLOUT_AFFINITY) does not pay here: rollouts/s and CPU per rollout sit on serve-haproxy's, "
    "within the noise. A replica's caches (texts by digest, BM25 indexes) are shared by every rollout on the "
    "same filing, and on this corpus both replicas hold every filing after the warm-up, so there is nothing "
    "for affinity to keep; hashing balances worse than `leastconn`. It would matter where every rollout reads "
    "a filing no other rollout reads (the first pass over a large live-EDGAR task set), which this bench does "
    "not build. It stays an option, off: `RAY_SERVE_HAPROXY_BALANCE_ALGORITHM=\"uri depth 2\"` in every "
    "node's environment, for clients that send the prefix (NeMo Gym 0.7's do). It weakens no promise, since "
    "no state lives in a replica.",
    "",
]

# The regression check of the state-at-scale work (--out serve_rollouts_regression), read with py-spy profiles of
# both codes at concurrency 64 (a separate pass: bench/serve_rollouts.py --configs serve-haproxy,before-haproxy
# --before e8e02ae --quick --profile --rounds 1).
REGRESSION_FINDINGS = [
    "## Reading", "",
    "- This run (2026-12-02, the direct shard transport in place) against e8e02ae, the code of the report the "
    "state-at-scale issue compared against: the medians of the per-round ratios are 0.53x against 0.55x at 64 "
    "and 0.69x against 0.66x at 256, with ranges that overlap widely. The machine was busy (the baseline moved "
    "from 139 to 186 rollouts/s between rounds, and at concurrency 1 the Serve app from 12 to 46). The earlier "
    "run of this check, on fd18a20 before the direct transport, put this code ~15% below (0.50x against 0.63x "
    "at 64): that gap is gone within this machine's noise.",
    "- CPU per rollout (round 0 only) is 18.7 against 17.7 ms, the shards 2.1 against 2.9 ms. The replicas spend "
    "more, which is the stricter grader of the reward-hacking work in `/verify`; the shards spend less, though "
    "each episode seed is now a durable mark (one GCS put more per episode), because a batch no longer pays a "
    "Ray actor call.",
    "- With the Redis mark store, the production path, the Serve app spends ~12 ms a rollout "
    "(bench/results/serve_rollouts_options.md).",
    "",
]
# The Redis store reading per ID, with no index (--out serve_rollouts_redis: --configs
# baseline,serve-haproxy,redis-haproxy --levels 1,64 --rounds 3 --throughput-only).
REDIS_FINDINGS = [
    "## Reading", "",
    "- The Redis mark store now keeps no index and a shard over it never settles: an ID the shard does not know "
    "is read (one MGET per batch) before it is decided, so every fresh episode seed reads before it writes. "
    "Against serve_rollouts_options.md, where the shards had settled from an index and read nothing: 0.74x "
    "(0.69-0.76x) at 64 against 0.76x (0.70-0.95x), and ~15 ms of server CPU a rollout against ~12 ms in a "
    "run where every configuration, the baseline included, spent more (7.1 ms against 5.8 ms for the "
    "baseline). No regression shows beyond this machine's drift.",
    "- At concurrency 1, inside the shard (a probe timing `ShardService.run`, not shipped): over Redis a seed's "
    "batch took ~0.85 ms (the read, then the group commit) and a close's ~0.6 ms; over the GCS ~1.1-1.4 ms each, "
    "though a GCS put in a tight loop on the same cluster takes ~0.6 ms: at one request at a time every "
    "process and thread on the path wakes from sleep. The ingress measured ~0.5 ms more than the shard "
    "for the hop. A durable write plus the hop is more than the target's 1 ms on this machine.",
    "",
]
# Clients that opt out of Serve's disconnect watch (--out serve_rollouts_nowatch: --configs
# baseline,serve-haproxy,nowatch-haproxy --levels 1,64 --rounds 3 --throughput-only).
NOWATCH_FINDINGS = [
    "## Reading", "",
    "- Serve's replica races each request against a task that watches its client for a disconnect (a receive "
    "task, a request task, `asyncio.wait` on both, a cancel). A request carrying `x-request-disconnect-disabled: "
    "?1` skips that and awaits the app directly: bench/serve_floor.md measures the watch at ~140 us of CPU a "
    "request on a trivial route (3 rounds, ranges apart), ~1.1 ms of an 8-request rollout. "
    "finsec_client.client.CLIENT_HEADERS holds the header; the project's rollout client sends it on every request, and "
    "`nowatch-haproxy` is serve-haproxy with the load generator sending it.",
    "- Whole rollouts do not show it cleanly. In this run (5 rounds) nowatch-haproxy read 0.60x (0.54-0.86x) "
    "against 0.66x (0.62-0.74x) at 64; in a 3-round run before it, 0.70x (0.55-0.81x) against 0.55x "
    "(0.55-0.67x), at 13.7 against 17.7 ms of server CPU a rollout. nowatch-haproxy's rounds are bimodal: "
    "over 15 fresh starts in this session they ran at either 78-90 or 104-129 rollouts/s at 64, with its two "
    "replicas using the same ~0.5 core each in both states, so the slow starts spend ~40% more CPU a request; "
    "serve-haproxy's starts spread over 80-112. A lead, not a finding: with the collector disabled in the "
    "replicas (an experiment, not shipped) four starts ran at 94-107, none slow. serve_rollouts_nowatch_redis.md "
    "has it with the Redis store.",
    "- What a client gives up: when it goes away mid-request, the request runs to its end instead of being "
    "cancelled at an await. Every contract route is safe to repeat, and the retry finds what the first did.",
    "",
]
# The two levers together (--out serve_rollouts_nowatch_redis: --configs
# baseline,nowatch-haproxy,redis-nowatch-haproxy --levels 1,64,256 --rounds 3 --throughput-only).
NOWATCH_REDIS_FINDINGS = [
    "## Reading", "",
    "- The Redis mark store with clients that skip the disconnect watch: 0.68x (0.67-0.73x) at 64 and 0.80x "
    "(0.75-0.92x) at 256, the closest the Serve path has come to the per-core targets (0.8x and 1.0x) on this "
    "machine, at ~14 ms of server CPU a rollout against the baseline's ~6.4 ms. nowatch-haproxy alone (the GCS "
    "store) read 0.54x and 0.76x here, with its bimodal starts (serve_rollouts_nowatch.md).",
    "",
]
# What two cores leave the Serve path (--out serve_rollouts_ceiling: --configs
# baseline,nowatch-haproxy,redis-nowatch-haproxy --levels 1,64,256 --rounds 3 --throughput-only).
CEILING_FINDINGS = [
    "## Reading", "",
    "- This run (2026-12-03, before deployments/cpu_policy.py: its clusters ran under the default scheduling "
    "policy; serve_rollouts_batch.md measures SCHED_BATCH) is the first with the cheaper load generator (uvloop, each rollout's cookie carried "
    "by the generator itself: bench/results/client_cost.md), which spent 1.9-2.0 ms of CPU a rollout on the "
    "shared cores where the run before spent 4.3-4.5 ms. It read the Redis store at 0.66x the baseline at 64 "
    "and 0.79x at 256, the GCS store at 0.61x and 0.75x (the run before, 2026-12-02 17:35, old client: 0.71x "
    "and 0.78x, 0.59x and 0.74x). The Serve path spent about what it spent before (9.7 ms of server CPU a "
    "rollout on Redis, 10.6 ms on the GCS, against 9.6 ms in the client check of 2026-12-02 22:05, "
    "bench/results/serve_rollouts_client.md, which read 0.89x at 64); the baseline did not: 3.9 ms a rollout "
    "here, 5.2 ms in that check, 4-7 ms in the runs before. So in this machine's fast state the one process "
    "gains a quarter and the Serve path nothing, and the ratio moves with the baseline more than with "
    "anything the Serve path changes. Two independent CPU-bound processes on the two cores each keep 0.99 of "
    "their rate alone (ad hoc, small and 400,000-entry working sets): the cores are not hyperthreads of one "
    "another. What the Serve path pays is sharing a core between processes (below).",
    "- The ceiling table is the arithmetic under the per-core targets (bench/ceiling.py), read at 64. The "
    "cluster idled at 0.19 of a core (the Serve controller's loop, the dashboard agent, the GCS and every actor "
    "process's timers; our own shards, reaper, document store and rate limiter were ~0.044 of a core of it in "
    "an ad-hoc pass by process). With the replicas running the app as cheaply as the one process (3.9 ms) and "
    "a free shard hop and free durable writes, the Serve path could reach 0.95-0.96x the baseline: **1.0x at "
    "256 is above that ceiling** on this machine. 0.8x at 64 is inside it, with 7.8-7.9 ms of server CPU a "
    "rollout to spend against 9.7 ms measured on Redis and 10.6 ms on the GCS; in the slower state of the "
    "client check the same arithmetic left 10.9 ms, and the Serve path met 0.8x.",
    "- The gap is the column 'the rest': 3.1-3.9 ms a rollout above the baseline's app, Serve's floor and the "
    "idle (4.9-7.1 ms in the run before). Of it the shards take 0.8-1.3 ms and the GCS 0.1-0.6 ms (the durable "
    "writes), and the replicas spend 7.0-7.1 ms, Serve's floor included, against the one process's 3.9 ms. In ad-hoc "
    "passes (not recorded as reports), a CPU-clock cProfile of both (concurrency 64) counted "
    "only ~24% more Python calls a request in a replica (2,087 against 1,683: Serve's wrapper, its second and "
    "third route match, the shard client), while /proc counts ~70% more user CPU (1,340 against 800 us), so each "
    "call costs ~35% more in a replica; `perf` puts the interpreter loop itself at 2.2x the CPU a request. The "
    "likely reason, not proven: six busy processes share two cores' caches, where the baseline's server has a "
    "core to itself. I found no setting that changes it: pinning each replica (and a shard beside it) to its own "
    "core read 96-100 rollouts/s against 79-96 unpinned in one ad-hoc pass of 5 alternating windows on one "
    "server, inside the machine's drift (75-108 between windows of the same shape).",
    "- bench/results/core_sharing.md measures the tax on the baseline itself: with the load generator pinned to its "
    "core instead of the other one, the same server spends ~22% more user CPU a request (~20% with system "
    "CPU). And fewer busy "
    "processes pay less of it: one replica instead of two spends ~17-23% less server CPU a rollout at the same "
    "rollouts/s (bench/results/serve_scaling.md), the cheaper shape on two cores, at the price of the second "
    "replica's failover.",
    "- Concurrency 1, from the shards' own timers (the table above). A stateful request pays its shard batch "
    "(0.22 ms mean on Redis, 0.41 ms on the GCS, where the one process's in-memory batch is 0.03 ms) and a hop "
    "around it: two processes' wake-ups, which an asyncio ping-pong between two bare processes puts at "
    "0.12-0.19 ms here (ad hoc). Seeds and closes also wait for their durable mark write before they answer "
    "(contract §C.4: a fence outlives a SIGKILL of its shard): 1.06 ms on the GCS store, 0.30 ms on Redis, and "
    "on Redis a seed first reads its ID's mark (0.32 ms), since a shard over Redis never settles. So on the GCS "
    "store a seed or close spends more than the target's 1 ms in its write alone: the target is out of reach "
    "there without giving up the durable fence. On Redis, once each route's own work (as the one process spends "
    "it) is taken out, every stateful route is within 1 ms of submit_final_result in this run: the seed at "
    "+1.0 ms, its read and its write most of that (+1.2 ms in the run before). Without taking it out, verify "
    "(+1.1 ms) and retrieve_information (+1.0 ms) stay at the line: in the one process they already sit 0.5 ms "
    "above submit_final_result, grading and BM25 being their work. A seed in one round trip (a script that "
    "writes the mark only where none exists, and returns the one that does) would save the seed's read; it "
    "means undoing a seed the core applied before the script found a mark, racing other replicas' batches on "
    "the same ID, so it is left as a lead.",
    "- The machine at concurrency 1 drifts more than under load: in an ad-hoc pass the same configuration read "
    "28.7-67.4 rollouts/s in rounds minutes apart (the Redis store), and in its fastest round every stateful "
    "route was within 1 ms of submit_final_result. The targets above therefore take each route against "
    "submit_final_result within its own round, then the median over rounds.",
    "- Measured on the way (ad hoc), kept as a lead: `RAY_SERVE_CONTROL_LOOP_INTERVAL_S=0.5` took the "
    "controller's idle from 4.1% to 1.7% of a core and the "
    "GCS's from 1.9% to 1.0%, but slows Serve's reaction to a failed replica, so it is not in the tuning. An idle "
    "async actor costs ~0.7-0.8% of a core, most of it Ray's own 10 ms signal-check timer on its main thread "
    "(`perf`); `RAY_metrics_report_interval_ms`, `RAY_event_stats=0` and the task-event interval moved it by "
    "less than the measurement's resolution.",
    "",
]
# The scheduling policy (--out serve_rollouts_batch: --configs
# baseline,redis-nowatch-preempt-haproxy,redis-nowatch-haproxy --levels 1,64,256 --rounds 3 --throughput-only).
BATCH_FINDINGS = [
    "## Reading", "",
    "- `redis-nowatch-haproxy` starts its Ray cluster under SCHED_BATCH, as `finsec serve`, the tests and the "
    "RayService's pods now do (deployments/cpu_policy.py; serve_tuning.POD_START); `redis-nowatch-preempt-haproxy` "
    "is the same app under the default policy, as before. Why: in an ad-hoc count of context switches at "
    "concurrency 64 (/proc, 8 s), the one-process baseline's server was switched out 13 times a second, having a "
    "core to itself, while the two replicas were preempted ~2,600 times a second (HAProxy ~890, the shards ~240): "
    "every request wakes HAProxy and a shard, and each wake-up cut a replica's slice short, handing it back cold "
    "caches. A SCHED_BATCH task that wakes waits for the running task's slice instead; its CPU share is the same "
    "(nice 0), and a woken task still goes to an idle core at once.",
    "- Same rounds, same app: **1.11-1.13x the rollouts/s at 64 and 1.09-1.15x at 256**, and at concurrency 1 "
    "0.96-1.02x (no core is busy there, so nothing waits). Against the one-process baseline: 0.80x at 64 "
    "(0.76-0.81x; the median round read 0.798, a hair under the target's 0.8) and 0.89x at 256 (0.81-0.89x), "
    "where the default policy read 0.71x and 0.77x. The server's CPU a rollout fell from 9.1 to 8.3 ms: the "
    "replicas 6.7 to 6.3 ms, HAProxy 0.7 to 0.4 ms. The p99s at 256 are the same or lower (retrieve_information "
    "398 to 333 ms).",
    "- By process, ad hoc (one server, 4 alternating windows of 8 s a setting, the processes' policy changed with "
    "`chrt` between windows): HAProxy alone under SCHED_BATCH +9.5%, the shards alone +2%, both +12%, both and "
    "the replicas +17%. HAProxy wakes twice a request on the replicas' cores, which is why it matters most.",
    "- The cost: under full load a woken process may wait out the running one's slice (a few ms at most) before it "
    "runs; every timer of the app and of Ray (health checks, the reaper's tick, TTLs) is measured in seconds. On "
    "KubeRay the pods' start line (POD_START) is tested in bash with a probe standing in for `ray start` "
    "(tests/unit/test_cluster_manifests.py), not on a real Kubernetes cluster; where the kernel or a seccomp "
    "profile refuses the policy, Ray starts as before and the app's start-up warning names it.",
    "",
]
# What a new user gets (--out serve_rollouts_default: --configs baseline,serve-haproxy,nowatch-haproxy --levels
# 64,256 --rounds 3 --throughput-only).
DEFAULT_FINDINGS = [
    "## Reading", "",
    "- `serve-haproxy` is the app as `finsec serve configs/serve.yaml` runs it (the GCS mark store, HAProxy, "
    "SCHED_BATCH) driven by a client that keeps Serve's disconnect watch; `nowatch-haproxy` adds the header the "
    "project's rollout client sends. Issue 18 measured the first at 0.50x the one process at 64 and 0.64x at 256; "
    "here it reads 0.74x and 0.80x, the baseline at 245 and 230 rollouts/s (its fast state: 4.1 ms of CPU a "
    "rollout). In between: the direct shard transport, group commits, the cheaper load generator and SCHED_BATCH "
    "(serve_rollouts_batch.md).",
    "",
]
UVLOOP_FINDINGS = [
    "## Reading", "",
    "- The baseline runs uvicorn on asyncio's own event loop, while Serve's replicas run uvloop, so the question "
    "was whether the ratios in the other reports favour Serve by its loop. They do not: the same one process on "
    "uvloop is 0.93x (0.90-0.95x) the asyncio baseline's rollouts/s at 64 and 1.02x (0.95-1.04x) at 256. The app's "
    "routes, not the loop, take its CPU; the asyncio baseline stays.",
    "",
]
# The main report (2026-12-04, 61c943b): the app as configs/serve.yaml ships it and in its production shape.
FINDINGS = [
    "## Reading", "",
    "- `serve-haproxy` is configs/serve.yaml as shipped (marks in the GCS), driven by a client that keeps Serve's "
    "disconnect watch; `redis-nowatch-haproxy` is the production shape (marks in Redis, as cluster/overlays/redis "
    "runs them, and the header the project's rollout client sends). Both run with the node tuning `finsec serve` "
    "sets (HAProxy, SCHED_BATCH, Ray's event-loop statistics off). The same command on ac1edf9, the code before "
    "the flat route list (bench/results/routing.md), 20 minutes earlier, read the production shape at 0.90x "
    "(0.83-1.02x) at 64 and 0.96x (0.93-1.05x) at 256, with verify +0.8 ms at concurrency 1, and the shipped "
    "shape at 0.76x and 0.87x.",
    "- The baseline runs on asyncio's own event loop, the replicas on uvloop; the one process on uvloop is no "
    "faster (0.93x at 64, 1.02x at 256: serve_rollouts_uvloop.md), so the loop does not tilt these ratios.",
    "- **Throughput, production shape: 0.84x the one process at 64 (target 0.8x: met, as in the run before) and "
    "0.93x at 256 (target 1.0x: not met; single rounds reached 0.95x here and 1.05x in the run before).** As "
    "shipped, 0.78x and 0.87x: its marks go to the GCS (~0.5 ms a durable write at concurrency 1, against ~0.13 "
    "ms on Redis; the GCS's own CPU under load) and its client keeps the disconnect watch (~140 us of replica CPU a "
    "request, serve_floor.md). Issue 18 opened at 0.50x and 0.64x for the shipped shape.",
    "- **The ceiling leaves little:** the production shape spends 7.5 ms of server CPU a rollout at 64 against "
    "the one process's 3.8: Serve's floor (HAProxy and the replica's request cycle, 1.5 ms), the cluster's idle "
    "background (0.8 ms), the shard hop and everything else (1.3 ms). With the load generator's 1.5 ms on the same "
    "two cores, the ceiling table puts the most this machine allows at 1.01x even for a free hop. Making the app "
    "itself cheaper lowers this ratio, since the one process gains it on one core: the flat routes took ~0.23 ms "
    "off both sides' rollout.",
    "- **Concurrency 1: verify +1.0, seed +0.9, retrieve +0.9 and close +0.8 ms over submit_final_result on Redis** "
    "(target within 1 ms: at the line here, met in the run before); on the GCS store seed and close +1.5 ms. Where "
    "the hop's time goes is bench/results/shard_call.md's: a wake-up of an idle process each way and the batch "
    "itself (~0.19 ms with its mark I/O: on Redis a seed reads a mark, ~0.26 ms, and writes one, ~0.13 ms).",
    "- **Memory:** a 16-session group on one real 10-K holds 1.48-1.52x one session (target under 2x); 10,000 "
    "open sessions add ~30 MB to the Serve path.",
    "- **Measured and not taken** (ad hoc, 2026-12-04; each ~1% of the server's CPU or nothing): guest halt "
    "polling (`haltpoll.guest_halt_poll_ns` 0 and 200000 alternated, two passes each) changed nothing at "
    "concurrency 1, 64 or 256, so the cost of waking a process here is not the guest's idle exit; a pipelined "
    "Redis client of our own (asyncio protocol, hiredis) costs 15-40 us less CPU a command than redis-py's pool, "
    "three commands a rollout; `RAY_enable_open_telemetry=0` takes the dashboard agent from 4.2% to 1.8% of a core "
    "at 64 (in Ray 2.60 the agent re-records every observation of Serve's per-request latency histograms, one "
    "OpenTelemetry call each) but moves metrics onto Ray's legacy exporter; `RAY_SERVE_CONTROL_LOOP_INTERVAL_S=0.5` "
    "takes the controller from 2.5% to 1.0% of a core and slows every reconciliation fivefold. An idle Ray worker "
    "wakes 100 times a second (its core worker checks for signals every 10 ms, not configurable): ~0.3% of a core "
    "a process, most of an idle shard's 0.46%.",
    "- **Profiles** (below: round 1, concurrency 64, py-spy's wall-clock samples; the raw stacks are "
    "results/profile-<config>-{replica,shard}.txt): `Worker.main_loop` and `Thread.run` are Ray's idle threads "
    "and the event loop waiting in epoll, which py-spy counts as running. What remains in a replica is Serve's "
    "request cycle and the app's own routes (BM25 scoring, strict JSON, grading), each a few per cent; in a shard, "
    "sending to its mark store (`StreamWriter.writelines` to Redis, `GcsMarkStore.write` to the GCS) and the "
    "transport's framing. serve_rollouts_hop.md has the profiles of the Ray actor hop the direct transport "
    "replaced, and why the direct transport was chosen.",
    "",
]
# Ray's event-loop statistics off (--out serve_rollouts_quiet and serve_rollouts_quiet2), before it was the default.
QUIET_FINDINGS = [
    "## Reading", "",
    "- `redis-nowatch-quiet-haproxy` is `redis-nowatch-haproxy` with `RAY_event_stats=0`: no Ray process (GCS, "
    "raylet, replicas, shards, Serve's controller) times each handler its C++ event loops run, statistics kept for "
    "debug_state.txt only. Ad hoc first, four idle actors on a fresh cluster, three passes: 0.80-0.95% of a core "
    "each with the statistics, 0.58-0.69% without, the whole cluster 6.8-8.0% against 5.3-6.0%.",
    "- Two runs of 3 rounds, minutes apart, the machine slow in the second (the baseline spent 5.9 ms a rollout "
    "against its usual ~4). At 64: 0.90x (0.77-0.94x) against 0.75x (0.75-0.76x), then 0.89x (0.76-0.91x) against "
    "0.80x (0.61-0.85x); the server's CPU a rollout 9.7 against 11.3 ms, then 11.7 against 12.5 ms; idle 0.18 "
    "against 0.21 cores, then 0.15 against 0.21. At 256 the rounds do not separate (0.92x against 0.91x, then "
    "0.79x against 0.88x), nor at concurrency 1. Round by round at 64 the quiet server did 1.25, 1.02, 1.18, "
    "1.44, 0.95 and 1.07x the rollouts/s of the other.",
    "- Kept: less CPU at every load and no behaviour given up, so it is in serve_tuning.SERVE_TUNING (`finsec "
    "serve`, the RayService's env, the start-up warning). The 0.8x target is not claimed from these runs: "
    "their ranges are wide, and the next main report decides.",
    "",
]
# A regression check beside the main report (--out serve_rollouts_check3).
CHECK3_FINDINGS = [
    "## Reading", "",
    "- Run minutes after the main report (serve_rollouts.md), which read serve-haproxy at 0.68x at 64: this code "
    "against 3fc5178's (the code of serve_rollouts_batch.md, 2026-12-03) in the same rounds. 0.77x (0.66-0.83x) "
    "against 0.75x (0.74-0.86x): no regression; the main run's low rounds were the machine's.",
    "",
]
FINDINGS_OF = {"serve_rollouts": FINDINGS, "serve_rollouts_hop": HOP_FINDINGS,
               "serve_rollouts_ceiling": CEILING_FINDINGS,
               "serve_rollouts_regression": REGRESSION_FINDINGS,
               "serve_rollouts_options": OPTIONS_FINDINGS, "serve_rollouts_redis": REDIS_FINDINGS,
               "serve_rollouts_nowatch": NOWATCH_FINDINGS, "serve_rollouts_nowatch_redis": NOWATCH_REDIS_FINDINGS,
               "serve_rollouts_batch": BATCH_FINDINGS, "serve_rollouts_default": DEFAULT_FINDINGS,
               "serve_rollouts_check3": CHECK3_FINDINGS, "serve_rollouts_quiet": QUIET_FINDINGS,
               "serve_rollouts_quiet2": QUIET_FINDINGS, "serve_rollouts_uvloop": UVLOOP_FINDINGS}


def render(results: dict) -> str:
    configs = results["configs"]
    base = {t["concurrency"]: rollouts_per_s(t) for t in configs.get("baseline", {}).get("throughput", [])}
    out = ["# Whole rollouts: the Serve app against one process", "",
           f"{results['machine']}. Each rollout is 8 requests (episode seed, sec_filing_search, parse_html_page, "
           "retrieve_information x2, submit_final_result, verify, close_session) on the embedded corpus, with the "
           f"right answer (a wrong reward counts as an error). {results['seconds']:.0f} s measured per level, from "
           "when every rollout loop has finished one rollout; the load generator (bench/loadgen.py, aiohttp) runs in its own processes. Produced by "
           f"`.venv/bin/python {results.get('command', 'bench/serve_rollouts.py')}`"
           f"{'; before-haproxy is commit ' + results['before'] if results.get('before') else ''}.", "",
           "## Throughput (rollouts/s; ratio to the one-process baseline)", "",
           f"Over {results.get('rounds', 1)} interleaved round(s) (every configuration on a fresh server each round, "
           "the order reversed every other round): the median, with the range in brackets; a ratio is taken "
           "within each round, against that round's baseline.", "",
           "| concurrency | " + " | ".join(configs) + " | load-generator CPU share |",
           "|---|" + "---|" * (len(configs) + 1)]
    for i, level in enumerate(results["levels"]):
        cells, shares = [], []
        for name, row in configs.items():
            t = row["throughput"][i]
            ratio = f"; {spread(ratios(t, base.get(level)), 'x', 2)}" if base.get(level) and name != "baseline" else ""
            errors = f", {t['errors']} errors" if t["errors"] else ""
            cells.append(f"{spread(t.get('rounds_rollouts_per_s') or [rollouts_per_s(t)])}{ratio}{errors}")
            shares.append(f"{name[:6]} {100 * t['client_cpu_share']:.0f}%")
        out.append(f"| {level} | " + " | ".join(cells) + " | " + ", ".join(shares) + " |")
    out += cpu_table(results)
    out += ceiling_table(results)
    out += ["", "## Latency per route at concurrency 1 and 256 (p50 / p99, ms)", ""]
    for level in (1, 256):
        if level not in results["levels"]:
            continue
        i = results["levels"].index(level)
        routes = list(next(iter(configs.values()))["throughput"][i]["p50_ms"])
        out += [f"concurrency {level}:", "", "| route | " + " | ".join(configs) + " |", "|---|" + "---|" * len(configs)]
        for route in routes:
            out.append(f"| {route} | " + " | ".join(
                f"{row['throughput'][i]['p50_ms'].get(route, 0):.1f} / {row['throughput'][i]['p99_ms'].get(route, 0):.1f}"
                for row in configs.values()) + " |")
        out.append("")
    out += shard_time_table(results)
    out += ["## Resident memory (MB, every process of the configuration)", "",
            "Measured after the throughput runs, so the allocators already hold what thousands of closed sessions "
            "freed and reuse it: the columns show what open sessions add on top. The group columns are a fresh "
            "server parsing the largest real 10-K: one session, then 15 more on the same filing.", "",
            "| configuration | 0 sessions | 1,000 open | 10,000 open | after closing them | one session on a 10-K "
            "| 16 sessions on it | ratio |", "|---|---|---|---|---|---|---|---|"]
    for name, row in configs.items():
        curve, group = row.get("memory_open_sessions_mb"), row.get("memory_group")
        if not curve:
            continue
        cells = [f"{curve.get(k, 0):.0f}" if k in curve else "-" for k in ("0", "1000", "10000", "after_close")]
        cells += [f"+{group['one_session_mb']:.1f}", f"+{group['group_of_16_mb']:.1f}", f"{group['ratio']:.3f}x"] \
            if group else ["-"] * 3
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    if results.get("hop_bytes"):
        out += ["", "## Bytes across the shard hop (and the document-store hop) per request, one rollout on a "
                "real 10-K", "", "| request | this code | before |", "|---|---|---|"]
        this, before = results["hop_bytes"]["this"], results["hop_bytes"]["before"]
        for route in sorted(set(this) | set(before)):
            out.append(f"| {route} | {this.get(route, 0):,} | {before.get(route, 0):,} |")
    out += targets(results)
    out += [""] + FINDINGS_OF.get(results.get("out", "serve_rollouts"), [])
    for name, row in configs.items():
        if row.get("profile"):
            out += ["", f"## Profile of {name} at concurrency 64 (py-spy, own time)", ""]
            for role, frames in row["profile"].items():
                out += [f"{role}:", ""] + [f"- {share}% {frame}" for frame, share in frames] + [""]
    return "\n".join(out) + "\n"


STATEFUL_AT_1 = ("seed_session", "close_session", "verify", "retrieve_information", "parse_html_page")


def shard_time_table(results: dict) -> list[str]:
    """At concurrency 1 each shard batch is one request's operation, and a rollout sends six (every stateful
    request): the shard's own time, and the durable mark store's inside it, set beside what each stateful route
    costs over submit_final_result, which never calls a shard."""
    if 1 not in results["levels"]:
        return []
    i = results["levels"].index(1)
    rows = {name: row for name, row in results["configs"].items() if row.get("shard_time_at_1")}
    if not rows:
        return []
    out = ["## Where a stateful request's time goes at concurrency 1", "",
           "From the shards' own timers (`/session_counters`, over each round's concurrency-1 level; medians of "
           "the rounds' means). At concurrency 1 a batch is one request's operation and a rollout makes six. The "
           "last column is each stateful route's p50 over submit_final_result's (which calls no shard); what the "
           "shard does not account for is the hop itself (two processes' wake-ups) and the route's own work.", "",
           "| config | a batch, mean ms | mark reads a rollout, mean ms | mark writes a rollout, mean ms | "
           "p50 over submit_final_result, ms |", "|---|---|---|---|---|"]
    for name, row in rows.items():
        t, over_by_route = row["shard_time_at_1"], over_submit(row["throughput"][i])
        per_rollout = 6 / t["batches"] if t["batches"] else 0.0
        over = ", ".join(f"{route.split('_')[0]} +{over_by_route[route]:.1f}" for route in STATEFUL_AT_1
                         if route in over_by_route)
        out.append(f"| {name} | {t['batch_ms']:.2f} | {t['mark_reads'] * per_rollout:.1f}, {t['mark_read_ms']:.2f} "
                   f"| {t['mark_writes'] * per_rollout:.1f}, {t['mark_write_ms']:.2f} | {over} |")
    return out + [""]


def cpu_table(results: dict) -> list[str]:
    configs = {name: row for name, row in results["configs"].items() if row.get("cpu_share_at_64")}
    if not configs or CPU_LEVEL not in results["levels"]:
        return []
    i = results["levels"].index(CPU_LEVEL)
    roles = sorted({role for row in configs.values() for role in row["cpu_share_at_64"]},
                   key=lambda role: -max(row["cpu_share_at_64"].get(role, 0) for row in configs.values()))
    out = ["", f"## Where the machine's CPU goes at concurrency {CPU_LEVEL} (share of both cores)", "",
           "| process | " + " | ".join(configs) + " |", "|---|" + "---|" * len(configs)]
    for role in [*roles, "load generator (its whole run)"]:
        cells = [row["throughput"][i]["client_cpu_share"] if role.startswith("load generator")
                 else row["cpu_share_at_64"].get(role, 0) for row in configs.values()]
        if max(cells) >= 0.005:
            out.append(f"| {role} | " + " | ".join(f"{100 * c:.0f}%" for c in cells) + " |")
    totals = [sum(row["cpu_share_at_64"].values()) + row["throughput"][i]["client_cpu_share"] for row in configs.values()]
    out.append("| **all** | " + " | ".join(f"{100 * t:.0f}%" for t in totals) + " |")
    # The same CPU per rollout: the server's cost of one episode, which a faster or slower pass does not move.
    rates = [rollouts_per_s(row["throughput"][i]) for row in configs.values()]
    out += ["", f"CPU per rollout at concurrency {CPU_LEVEL} (ms; the server's processes, the load generator left "
            "out):", "", "| process | " + " | ".join(configs) + " |", "|---|" + "---|" * len(configs)]
    for role in [*roles, "**the server**"]:
        cells = [(sum(row["cpu_share_at_64"].values()) if role == "**the server**" else
                  row["cpu_share_at_64"].get(role, 0)) * cores_of(results) * 1000 / rate if rate else 0
                 for row, rate in zip(configs.values(), rates)]
        if max(cells) >= 0.05:
            out.append(f"| {role} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
    return out


def ceiling_table(results: dict) -> list[str]:
    """What two cores leave the Serve path, from this run's costs and serve_floor's (bench/ceiling.py)."""
    from ceiling import budget_ms, ceiling, serve_floor_ms

    configs, cores = results["configs"], cores_of(results)
    if CPU_LEVEL not in results["levels"] or not configs.get("baseline", {}).get("cpu_share_at_64"):
        return []
    i = results["levels"].index(CPU_LEVEL)

    def per_rollout(row: dict, share: float) -> float:
        return share * cores * 1000 / rollouts_per_s(row["throughput"][i])

    base = configs["baseline"]
    app = per_rollout(base, sum(base["cpu_share_at_64"].values()))
    rate = rollouts_per_s(base["throughput"][i])
    out = ["", f"## How far two cores let the Serve path go (concurrency {CPU_LEVEL})", "",
           "bench/ceiling.py: with the replicas running the app as cheaply as the one process does "
           f"({app:.1f} ms of CPU a rollout here) and a free shard hop and durable writes, the Serve path still "
           "pays Serve's floor per request (bench/results/serve_floor.json: the replica's and HAProxy's CPU over "
           "plain uvicorn's) and its cluster's idle background (measured before each round's load), and shares "
           "the cores with the load generator, which the baseline does not. The ceiling is the ratio that leaves; "
           "the budgets are the server CPU a rollout (idle included) that 0.8x and 1.0x would allow.", "",
           "| config | server CPU ms a rollout | idle background: cores, ms a rollout | Serve's floor, ms a rollout "
           "| the rest over the baseline's app, ms | load generator ms a rollout | ceiling | budget at 0.8x, "
           "1.0x (ms) |", "|---|---|---|---|---|---|---|---|"]
    rows = []
    for name, row in configs.items():
        if name.startswith("baseline") or not row.get("cpu_share_at_64") or "idle_cpu_share" not in row:
            continue
        floor = (results["serve_floor_ms"].get(name) if "serve_floor_ms" in results
                 else serve_floor_ms(ROOT / "bench/results/serve_floor.json", name))
        if floor is None:
            continue
        t = row["throughput"][i]
        total, idle = per_rollout(row, sum(row["cpu_share_at_64"].values())), row["idle_cpu_share"] * cores
        idle_ms, client = idle * 1000 / rollouts_per_s(t), per_rollout(row, t["client_cpu_share"])
        rows.append(f"| {name} | {total:.1f} | {idle:.2f}, {idle_ms:.1f} | {floor:.1f} | "
                   f"{total - app - floor - idle_ms:.1f} | {client:.1f} | "
                   f"{ceiling(app, floor, client, idle, cores, rate):.2f}x | "
                   f"{budget_ms(0.8, rate, client, cores):.1f}, {budget_ms(1.0, rate, client, cores):.1f} |")
    return out + rows if rows else []  # a run from before the idle measurement has none


def over_submit(t: dict) -> dict[str, float]:
    """Each route's p50 over submit_final_result's, taken within each round (both in one window, so the machine's
    drift between rounds cancels) and then the median over rounds."""
    rounds = t.get("rounds_p50_ms") or [t["p50_ms"]]
    return {route: statistics.median(p[route] - p["submit_final_result"] for p in rounds) for route in rounds[0]
            if route != "submit_final_result" and all(route in p for p in rounds)}


def targets(results: dict) -> list[str]:
    """The issue's targets, read off this run, for each configuration behind HAProxy (the shipped ingress)."""
    configs, levels = results["configs"], results["levels"]
    served = [c for c in ("serve-haproxy", "nowatch-haproxy", "redis-haproxy", "redis-nowatch-haproxy") if c in configs]
    base = configs.get("baseline")
    if not served or not base:
        return []
    serve = configs[served[0]]
    at = {c: {t["concurrency"]: t for t in row["throughput"]} for c, row in configs.items()}
    rows = []
    for name in served:
        rows += level_targets(name, at, levels)
    group = serve.get("memory_group")
    if group:
        rows.append(("memory: a 16-session group on one filing under 2x one session", f"{group['ratio']:.3f}x",
                     group["ratio"] < 2))
    hop = results.get("hop_bytes", {}).get("this", {})
    retrieve = [v for k, v in hop.items() if "retrieve" in k]
    if retrieve:
        rows.append(("transfer: retrieve_information moves no document text once cached",
                     f"{max(retrieve):,} bytes per retrieve", max(retrieve) < 10_000))
    return ["", "## Targets", "", "Latency differences are taken within each round, then the median over rounds.", "",
            "| target | this run | met |", "|---|---|---|"] + [
        f"| {name} | {value} | {'yes' if met else 'no'} |" for name, value, met in rows]


def level_targets(name: str, at: dict, levels: list[int]) -> list[tuple[str, str, bool]]:
    rows = []
    for level, least in ((64, 0.8), (256, 1.0)):  # the per-core issue's targets, on 2 cores
        if level in levels:
            each = ratios(at[name][level], rollouts_per_s(at["baseline"][level]))
            rows.append((f"throughput at {level}: at least {least}x the baseline ({name})", spread(each, "x", 2),
                         statistics.median(each) >= least))
    if 1024 in levels and 64 in levels:
        kept = rollouts_per_s(at[name][1024]) / rollouts_per_s(at[name][64])
        errors = at[name][1024]["errors"]
        rows.append((f"no collapse: at 1024, 90% of the figure at 64, no errors ({name})",
                     f"{100 * kept:.0f}%, {errors} errors", kept >= 0.9 and errors == 0))
    if 1 in levels:
        over, alone = over_submit(at[name][1]), over_submit(at["baseline"][1])
        over = {r: v for r, v in over.items() if r in STATEFUL_AT_1}
        worst = max(over, key=over.get)
        rows.append((f"latency at 1: a stateful route's p50 within 1 ms of submit_final_result's ({name})",
                     f"worst {worst} +{over[worst]:.1f} ms (" + ", ".join(f"{r} +{v:.1f}" for r, v in over.items())
                     + ")", over[worst] <= 1.0))
        # The same difference in the one process, where there is no hop: what is left is the hop's own share.
        hop = {r: over[r] - alone[r] for r in over if r in alone}
        worst = max(hop, key=hop.get)
        rows.append((f"latency at 1: the same, less what each route costs over submit_final_result in one process "
                     f"({name})", f"worst {worst} +{hop[worst]:.1f} ms (" + ", ".join(
                         f"{r} {v:+.1f}" for r, v in hop.items()) + ")", hop[worst] <= 1.0))
    return rows


def plot(results: dict, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for metric, label, name in ((rollouts_per_s, "rollouts/s", "throughput"),
                                (lambda t: t["all_p99_ms"] or 0, "p99 latency per request, ms", "p99")):
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
