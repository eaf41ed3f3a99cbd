"""Fault scenarios, for the numbers: rollouts run while a process or a node dies (harness/fault_scenarios.py).

    .venv/bin/python bench/faults.py            # ~3 minutes; writes bench/results/faults.{md,json}
    .venv/bin/python bench/faults.py --durable  # ~2 minutes; durable sessions: bench/results/faults_durable.*

On one local cluster (2 ingress replicas, 4 shards, behind HAProxy): SIGKILL of a shard, of an ingress replica
(the driver retries 5xx, as every route is safe to repeat), of the reaper and of the document store. Then a
three-node cluster that loses a state node. For each: episodes run, episodes the fault reached (against the
share expected), masked episodes, lost sessions and how many of them were scored unmasked (must be 0, whatever
the reward: harness/fault_scenarios.py says how a lost session is told), unmasked wrong rewards (must be 0),
HTTP 500s by who sent them (the app: must be 0; HAProxy's page for a replica killed mid-request), and the
recovery time. Exits 1 when a scenario shows what must never happen.

Without `--durable` the app runs with `durable_sessions: false`, and a session whose shard life died is lost
(reported, masked). With it (the default setting), the same kills restore sessions: the report counts them
(*restored*: verified unmasked though the life that seeded them died), the clients retry 503s as a driver does
while a shard restarts, and a lost session is one the server said was lost (a tool's 404, a masked verify); the
node-loss scenario runs only without it.

Then two owners at once (harness/two_owners.py), every request of every episode sent to a server in service at
random: two `finsec serve --in-process` over one Redis (a redeploy's old and new shard lives, two servers sharing a
store), and a KubeRay NewCluster switch over Redis (two Serve apps, each its own Ray cluster: the old alone, both,
then the new alone while the old stops), and two redeploys of one Serve app over the GCS marks (new shard actors
beside the old). Split sessions, late scores and closed IDs seeded again must be 0.
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

from _common import FinsecServe, machine, write_report  # noqa: E402

from harness.fault_scenarios import THINK_SECONDS, Fault, failures, rollouts, store_forgets, summarize, wait_gone  # noqa: E402
from harness.redis_server import running_redis  # noqa: E402
from harness.two_owners import MUST_BE_ZERO, two_owners  # noqa: E402

SECONDS = 12.0
STORE_FORGETS = "mark store forgets (Redis back empty) + shard SIGKILL"


def single_node(durable: bool) -> dict:
    import ray

    from deployments.ingress import app_actors
    from deployments.local import deploy, start_ray_and_serve, stop_ray_and_serve, undeploy
    from deployments.settings import Settings
    from finsec.corpus.generate import embedded_corpus_dir
    from session_store import shard_index

    url = start_ray_and_serve()
    settings = Settings(
        app_name="faults",
        num_shards=4,
        corpus_dir=embedded_corpus_dir(),
        reaper_interval_seconds=1.0,
        durable_sessions=durable,
    )
    deploy(settings, url, replicas=2)
    app = app_actors(settings)
    results = {}
    try:

        def actor(kind: str):
            names = [
                a["name"]
                for a in ray.util.list_named_actors(all_namespaces=True)
                if a["namespace"] == app.namespace and a["name"].split(".")[0] == kind
            ]
            return ray.get_actor(names[0], namespace=app.namespace)

        def sigkill(pid: int):
            os.kill(pid, signal.SIGKILL)
            wait_gone([pid])  # the fault is over once the process is: nothing it held answers after that

        def kill(kind: str):
            sigkill(ray.get(actor(kind).pid.remote(), timeout=30))

        def kill_replica():
            from pathlib import Path as P

            title = f"ray::ServeReplica:{settings.app_name}:FinsecIngress".encode()
            sigkill(
                next(int(p.name) for p in P("/proc").iterdir() if p.name.isdigit() and _cmdline(p).startswith(title))
            )

        def shard_of(e) -> int:
            return shard_index(e.sid, settings.num_shards)

        # name: (the fault, the episodes it can reach, the shards whose process it kills, retry 5xx, their share)
        scenarios = {
            "shard SIGKILL": (lambda: kill("shard-1-of-4"), lambda e: shard_of(e) == 1, {1}, durable, 0.25),
            "ingress replica SIGKILL": (kill_replica, lambda e: True, set(), True, 0.0),
            "reaper SIGKILL": (lambda: kill("reaper"), lambda e: True, set(), False, 0.0),
            "document store SIGKILL": (lambda: kill("documents"), lambda e: True, set(), False, 0.0),
        }
        for name, (fault, exposed, killed, retry, share) in scenarios.items():
            episodes, ran = asyncio.run(rollouts(url, 16, SECONDS, fault, fault_after=3.0, retry_5xx=retry))
            ran = Fault(ran.began, ran.ended, frozenset(killed))
            results[name] = {**summarize(episodes, ran, exposed, shard_of, durable), "expected_share": share}
            print(name, results[name], flush=True)
        results[STORE_FORGETS] = {**store_forgets(url, SECONDS), "expected_share": 0.25}
        print(STORE_FORGETS, results[STORE_FORGETS], flush=True)
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
    run = subprocess.run(
        [sys.executable, "-m", "harness.fault_scenarios", "node-loss", "--seconds", str(SECONDS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=clean,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("SUMMARY ")]
    if not lines:
        raise RuntimeError("the node-loss scenario failed:\n" + run.stderr[-3000:])
    line = lines[-1]
    return json.loads(line[len("SUMMARY ") :])


def two_owners_scenario(durable: bool) -> dict:
    with running_redis() as redis:
        servers = [FinsecServe(["--in-process"], _over(redis, durable)) for _ in range(2)]
        try:
            return asyncio.run(two_owners([server.url for server in servers], workers=16, seconds=SECONDS))
        finally:
            for server in servers:
                server.stop()


def cluster_switch_scenario(durable: bool) -> dict:
    """A KubeRay NewCluster switch over Redis: the old cluster serves alone, then both do (the Service switching
    over), then the new one alone while the old is deleted (SIGTERM to its `finsec serve`)."""
    config = [str(ROOT / "configs/serve.yaml")]
    with running_redis() as redis:
        old, new = (FinsecServe(config, _over(redis, durable)) for _ in range(2))
        serving = [old.url]

        async def switch() -> dict:
            traffic = asyncio.create_task(two_owners(lambda: serving, workers=16, seconds=3 * SECONDS))
            await asyncio.sleep(SECONDS)
            serving.append(new.url)
            await asyncio.sleep(SECONDS)
            serving.remove(old.url)
            await asyncio.to_thread(old.stop)
            return await traffic

        try:
            return asyncio.run(switch())
        finally:
            old.stop()
            new.stop()


def redeploy_scenario(durable: bool) -> dict:
    """Redeploys that make new shard actors (a new session TTL each), over the GCS marks (the default store): each
    time the old shard lives serve beside the new until the old replicas are gone."""
    from deployments.local import deploy, start_ray_and_serve, stop_ray_and_serve
    from deployments.settings import Settings
    from finsec.corpus.generate import embedded_corpus_dir

    url = start_ray_and_serve()
    common = dict(app_name="faults-redeploy", num_shards=4, corpus_dir=embedded_corpus_dir(), durable_sessions=durable)

    async def redeploys() -> dict:
        traffic = asyncio.create_task(two_owners([url], workers=16, seconds=3 * SECONDS))
        for ttl in (900, 1200):
            await asyncio.sleep(SECONDS)
            await asyncio.to_thread(deploy, Settings(**common, session_ttl_seconds=ttl), url, replicas=2)
        return await traffic

    try:
        deploy(Settings(**common, session_ttl_seconds=600), url, replicas=2)
        return asyncio.run(redeploys())
    finally:
        stop_ray_and_serve()


def _over(redis, durable: bool) -> dict[str, str]:
    return {**os.environ, "FINSEC_MARK_STORE_URL": redis.url, "FINSEC_DURABLE_SESSIONS": str(durable).lower()}


OWNERS_SCENARIOS = {
    "two one-process servers": two_owners_scenario,
    "a NewCluster switch (two Ray clusters)": cluster_switch_scenario,
    "two redeploys (GCS marks)": redeploy_scenario,
}


def render_two_owners(scenarios: dict[str, dict]) -> str:
    rows = [
        f"| {name} | {c['episodes']} | {c['scored']} | **{c['split_sessions']}** | **{c['late_scores']}** | "
        f"**{c['closed_ids_seeded_again']}** | {c['app_500s']} | {c['masked']} | {c['refused']} |"
        for name, c in scenarios.items()
    ]
    return (
        "\n".join(
            [
                "",
                "## Two owners at once",
                "",
                f"16 clients, every request of every episode (seed, two parse_html_page, retrieve_information, verify, "
                "close, then a late verify and a retried seed) sent to a server in service at random. *Two one-process "
                f"servers*: two `finsec serve --in-process` over one Redis for {SECONDS:.0f} s, both in service "
                "throughout. *A NewCluster switch*: two `finsec serve configs/serve.yaml`, each its own Ray cluster, "
                f"over one Redis: {SECONDS:.0f} s the old alone, {SECONDS:.0f} s both, then {SECONDS:.0f} s the new "
                "alone while the old one stops. *Two redeploys*: one Serve app over the GCS marks (the default store), "
                f"redeployed with a new session TTL (new shard actors) after {SECONDS:.0f} s and again after "
                f"{2 * SECONDS:.0f} s, the old shard lives serving beside the new until their replicas are gone. The life that reads a record another holds takes it over; the other's "
                "next write or read of it is refused by the store and runs again from the record "
                "(docs/contract.md §C.11).",
                "",
                "| scenario | episodes | scored | **split sessions** | **late scores** | **closed IDs seeded again** | "
                "app 500s | masked | refused (lost, 404 or 503) |",
                "|---|---|---|---|---|---|---|---|---|",
                *rows,
                "",
                "- *split session*: a read that missed a document the episode stored through the other server; *late "
                "score*: a verify after the close scored unmasked; *closed ID seeded again*: a retried seed after the close "
                "answered 200. Each must be 0. Without durable sessions a hand-over loses the session (masked or refused, "
                "never scored); with them it moves whole.",
            ]
        )
        + "\n"
    )


def render(results: dict, durable: bool = False) -> str:
    mode = (
        "with durable sessions (`durable_sessions`, the default): a session whose shard died is restored"
        if durable
        else "without durable sessions (`durable_sessions: false`): a session whose shard died is lost"
    )
    out = [
        f"# Fault scenarios, {mode}",
        "",
        f"{machine()}. Rollouts (seed, parse_html_page, retrieve_information, verify, "
        f"close) from 16 concurrent clients for {SECONDS:.0f} s, half of them pausing {THINK_SECONDS} s before "
        "verify as a policy writing its answer does; the fault at 3 s. Produced by `bench/faults.py`; the same "
        "scenarios run as tests (tests/integration/test_shard_failure.py, test_node_loss.py, "
        "test_mark_store_loss.py).",
        "",
        "| fault | episodes | reached by the fault | open on what died at the fault | share of sessions on it "
        "| masked | restored | lost sessions verified (seen only by verify) | **lost, scored unmasked** | verified "
        "while it died | unmasked wrong rewards | HTTP 500s: app / HAProxy page | requests retried | recovery (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        exposed = r.get("exposed_at_the_fault", "-") if r["expected_share"] else 0
        out.append(
            f"| {name} | {r['episodes']} | {r['episodes_the_fault_reached']} | {exposed} | "
            f"{100 * r['expected_share']:.0f}% | {r['masked']} | {r.get('restored', 0)} | "
            f"{r['lost_sessions_verified']} "
            f"({r['lost_seen_only_by_verify']}) | **{r['lost_scored_unmasked']}** | "
            f"{r['verified_while_dying']} | {r['unmasked_wrong_rewards']} | {r['app_500s']} / "
            f"{r['ingress_500_pages']} | {r.get('requests_retried', 0)} | {r['recovery_seconds']} |"
        )
    out += [
        "",
        "- *reached by the fault*: episodes with a 404 session_lost, a 503, a transport error or a masked "
        "verify. *Open on what died*: episodes whose session was open on the killed shard or node at the "
        "instant of the fault. Reached can exceed it: an episode that starts on the shard while it restarts, or "
        "while the node is being removed, can get a 503 (the store is unavailable; retry) before the new "
        "incarnation answers.",
        "- *lost sessions verified*: episodes whose session was gone when their verify arrived: a stateful tool "
        "answered 404 session_lost, or the shard life that seeded them (the seed cookie's incarnation) died "
        "before their verify was sent. *Seen only by verify*: no tool call came between the loss and the "
        "verify, so the verify itself had to notice. *Lost, scored unmasked* counts those whose verify was "
        "not masked, whatever the reward (a right answer scores 1.0 on a lost session too): it must be 0. "
        "*Verified while it died*: the verify was in flight during the kill, so either answer is right.",
        *(
            [
                "- With durable sessions, *restored* counts episodes verified unmasked although the shard life that "
                "seeded them died before their verify; *lost* is what the server reported (a tool's 404 "
                "session_lost, a masked verify), and *lost, scored unmasked* a reported loss whose verify still "
                "scored. The clients retry 503s while a shard restarts, as a driver does."
            ]
            if durable
            else []
        ),
        "- *HTTP 500s*, every attempt counted (retried ones too): *app* are the app's own (must be 0); "
        "*HAProxy page* is HAProxy's fixed reply for a backend that died mid-request (Serve's HAProxy config "
        "turns 502/503/504 into it), which only a killed ingress replica causes.",
        "- *recovery*: from the fault to the end of the first clean episode that needed what was killed.",
        "- A killed ingress replica loses no session (its state is in the shards); its in-flight requests get a "
        "5xx or a dropped connection, which the driver retries.",
        "- A killed document store loses no filing text: replicas parse it again from its URL when they miss.",
    ]
    forgot = results.get(STORE_FORGETS)
    if forgot:
        out += [
            "",
            f"Mark store forgets: shard 1 was SIGKILLed, and the Redis holding the marks restarted without "
            f"persistence (empty) before the shard's next life read it; the app trusted the Redis's configuration, "
            f"so only its marker told, and the clients retried 5xx (the requests retried column). While "
            f"the loss stood, {forgot['closed_ids_tried_while_lost']} IDs closed before the fault were seeded "
            f"again: **{forgot['closed_ids_seeded_again']} accepted** (answers {forgot['closed_ids_refused_with']}:"
            f" 409 from shards that held their fences, 503 from the restarted one); "
            f"{forgot['seeds_refused_until_acknowledged']} rollout seeds were refused (503) until the loss was "
            "acknowledged 3 s later, and the first clean episode after it ended at the recovery time shown.",
        ]
    node = results.get("node loss (3-node cluster)")
    if node:
        out += [
            "",
            f"Node loss placement: {json.dumps(node.get('placement'))}, shards lost "
            f"{node.get('shards_lost')}, closed IDs still fenced: "
            f"{node.get('closed_ids_still_fenced')}.",
        ]
    return "\n".join(out) + "\n"


def main() -> int:
    durable = "--durable" in sys.argv[1:]
    results = single_node(durable)
    if not durable:  # its accounting tells a lost session by the shard life that seeded it
        results["node loss (3-node cluster)"] = node_loss()
        results["node loss (3-node cluster)"].setdefault("expected_share", 0.5)
    owners = {name: scenario(durable) for name, scenario in OWNERS_SCENARIOS.items()}
    name = "faults_durable" if durable else "faults"
    (ROOT / f"bench/results/{name}.json").write_text(json.dumps({**results, "two owners": owners}, indent=1))
    report = render(results, durable) + render_two_owners(owners)
    write_report(f"{name}.md", report)
    print(report)
    failed = {name: failures(r) for name, r in results.items() if failures(r)}
    for scenario, counts in owners.items():
        if any(counts[key] for key in MUST_BE_ZERO):
            failed[scenario] = [f"{key} {counts[key]}" for key in MUST_BE_ZERO if counts[key]]
    for name, why in failed.items():
        print(f"FAILED {name}: {'; '.join(why)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
