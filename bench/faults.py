"""Fault scenarios, for the numbers: rollouts run while a process or a node dies (tests/fault_scenarios.py).

    .venv/bin/python bench/faults.py            # ~3 minutes; writes bench/results/faults.{md,json}

On one local cluster (2 ingress replicas, 4 shards, behind HAProxy): SIGKILL of a shard, of an ingress replica
(the driver retries 5xx, as every route is safe to repeat), of the reaper and of the document store. Then a
three-node cluster that loses a state node. For each: episodes run, episodes the fault reached (against the
share expected), masked episodes, unmasked wrong rewards (must be 0), HTTP 500s, and the recovery time.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import machine, write_report  # noqa: E402

from tests.fault_scenarios import rollouts, summarize  # noqa: E402

SECONDS = 12.0


def single_node() -> dict:
    import ray

    from deployments.corpus.generate import embedded_corpus_dir
    from deployments.ingress import app_actors
    from deployments.local import deploy, start_ray_and_serve, stop_ray_and_serve, undeploy
    from deployments.settings import Settings
    from session_store import shard_index

    url = start_ray_and_serve()
    settings = Settings(app_name="faults", num_shards=4, corpus_dir=embedded_corpus_dir(), reaper_interval_seconds=1.0)
    deploy(settings, url, replicas=2)
    app = app_actors(settings)
    results = {}
    try:
        def actor(kind: str):
            names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                     if a["namespace"] == app.namespace and a["name"].split(".")[0] == kind]
            return ray.get_actor(names[0], namespace=app.namespace)

        def kill(kind: str):
            os.kill(ray.get(actor(kind).pid.remote(), timeout=30), signal.SIGKILL)

        def kill_replica():
            from pathlib import Path as P

            title = f"ray::ServeReplica:{settings.app_name}:FinsecIngress".encode()
            pid = next(int(p.name) for p in P("/proc").iterdir()
                       if p.name.isdigit() and _cmdline(p).startswith(title))
            os.kill(pid, signal.SIGKILL)

        scenarios = {
            "shard SIGKILL": (lambda: kill("shard-1-of-4"), lambda e: shard_index(e.sid, 4) == 1, False, 0.25),
            "ingress replica SIGKILL": (kill_replica, lambda e: True, True, 0.0),
            "reaper SIGKILL": (lambda: kill("reaper"), lambda e: True, False, 0.0),
            "document store SIGKILL": (lambda: kill("documents"), lambda e: True, False, 0.0),
        }
        for name, (fault, exposed, retry, share) in scenarios.items():
            episodes, at = asyncio.run(rollouts(url, 16, SECONDS, fault, fault_after=3.0, retry_5xx=retry))
            results[name] = {**summarize(episodes, at, exposed), "expected_share": share}
            print(name, results[name], flush=True)
    finally:
        undeploy(settings)
        stop_ray_and_serve()
    return results


def _cmdline(path) -> bytes:
    try:
        return (path / "cmdline").read_bytes()
    except OSError:
        return b""


def node_loss() -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "FINSEC_"))}  # not this cluster's
    run = subprocess.run([sys.executable, "-m", "tests.fault_scenarios", "node-loss", "--seconds", str(SECONDS)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, env=clean)
    lines = [line for line in run.stdout.splitlines() if line.startswith("SUMMARY ")]
    if not lines:
        raise RuntimeError("the node-loss scenario failed:\n" + run.stderr[-3000:])
    line = lines[-1]
    return json.loads(line[len("SUMMARY "):])


def render(results: dict) -> str:
    out = ["# Fault scenarios", "", f"{machine()}. Rollouts (seed, parse_html_page, retrieve_information, verify, "
           f"close) from 16 concurrent clients for {SECONDS:.0f} s; the fault at 3 s. Produced by "
           "`bench/faults.py`; the same scenarios run as tests (tests/integration/test_shard_failure.py, "
           "test_node_loss.py).", "",
           "| fault | episodes | reached by the fault | open on what died at the fault | share of sessions on it "
           "| masked | unmasked wrong rewards | HTTP 500s | requests retried | recovery (s) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        exposed = r.get("exposed_at_the_fault", "-") if r["expected_share"] else 0
        out.append(f"| {name} | {r['episodes']} | {r['episodes_the_fault_reached']} | {exposed} | "
                   f"{100 * r['expected_share']:.0f}% | {r['masked']} | {r['unmasked_wrong_rewards']} | "
                   f"{r['server_errors_500']} | {r.get('requests_retried', 0)} | {r['recovery_seconds']} |")
    out += ["", "- *reached by the fault*: episodes with a 404 session_lost, a 503, a transport error or a masked "
            "verify. *Open on what died*: episodes whose session was open on the killed shard or node at the "
            "instant of the fault. Reached can exceed it: an episode that starts on the shard while it restarts, or "
            "while the node is being removed, can get a 503 (the store is unavailable; retry) before the new "
            "incarnation answers. None of them gets an unmasked reward.",
            "- *recovery*: from the fault to the end of the first clean episode that needed what was killed.",
            "- A killed ingress replica loses no session (its state is in the shards); its in-flight requests get a "
            "5xx or a dropped connection, which the driver retries.",
            "- A killed document store loses no filing text: replicas parse it again from its URL when they miss."]
    node = results.get("node loss (3-node cluster)")
    if node:
        out += ["", f"Node loss placement: {json.dumps(node.get('placement'))}, shards lost "
                f"{node.get('shards_lost')}, closed IDs still fenced: "
                f"{node.get('closed_ids_still_fenced')}."]
    return "\n".join(out) + "\n"


def main() -> None:
    results = single_node()
    results["node loss (3-node cluster)"] = node_loss()
    results["node loss (3-node cluster)"].setdefault("expected_share", 0.5)
    (ROOT / "bench/results/faults.json").write_text(json.dumps(results, indent=1))
    write_report("faults.md", render(results))
    print(render(results))


if __name__ == "__main__":
    main()
