"""The environment every node of a finsec-serve cluster runs with, which a serve config cannot carry (Serve reads
it when a node's proxy and replicas start): the one source for `finsec serve` (deployments/local.py), the
RayService's pod env (cluster/base/rayservice.yaml, compared by tests/unit/cluster/test_cluster_manifests.py) and the
cluster docs; and the scheduling policy every node starts Ray under (POD_START). Each was chosen by the
whole-rollout benchmark (bench/serve_rollouts.py; docs/benchmarks.md, "Why the serving defaults")."""

from __future__ import annotations

import os
from collections.abc import Mapping

from deployments.cpu_policy import policy_of

__all__ = [
    "BATCH_COST",
    "haproxy_threads",
    "missing",
    "MISSING_COST",
    "node_env",
    "POD_START",
    "preempting",
    "ROLLOUT_AFFINITY",
    "SERVE_TUNING",
    "warning",
]

SERVE_TUNING = {
    # Serve's HAProxy ingress: replicas listen on their own ports behind it (the default Python proxy added far
    # more latency a request and collapsed under load).
    "RAY_SERVE_ENABLE_HA_PROXY": "1",
    # Requests on the replica's own event loop, not handed to a second loop in another thread: our handlers never
    # block (CPU-heavy work goes to worker threads), and the hand-off between the two loops took a large share of
    # the replica's CPU.
    "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0",
    # Serve turns each request's HAProxy log line into its serve_num_http_* metrics in an actor (its CPU is in the
    # report's CPU table). HAProxy's own exporter (per-backend rates, latencies, statuses) stays on.
    "RAY_SERVE_HAPROXY_METRICS_ENABLED": "0",
    # Ray's statistics of its own event loops: every Ray process (replicas and shards too) times each handler its C++
    # loops run, for debug_state.txt only (their metrics export is off by default). Off: less idle CPU in every
    # Ray process, and less CPU a rollout under load.
    "RAY_event_stats": "0",
}


# Rollout-affine routing, an option (off by default): HAProxy hashes the path up to its second slash, so every
# request of one rollout under `/ng-rollout/<id>/` (contract §A.0) reaches one replica, whose caches then serve
# the whole episode. Requests without the prefix are hashed by their route instead: only for clients that use it.
# Measured not to pay where rollouts share filings, hence off.
ROLLOUT_AFFINITY = {"RAY_SERVE_HAPROXY_BALANCE_ALGORITHM": "uri depth 2"}


# What goes wrong when each is missing (the start-up warning quotes these; docs/benchmarks.md has the figures).
MISSING_COST = {
    "RAY_SERVE_ENABLE_HA_PROXY": "Serve's default Python proxy, which collapses under load to a small fraction of "
    "the rollouts/s the app serves behind HAProxy",
    "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "a second event loop per replica, and every request handed "
    "between the two loops costs replica CPU and throughput",
    "RAY_SERVE_HAPROXY_METRICS_ENABLED": "Serve parsing a HAProxy log line per request, CPU taken from the replicas",
    "RAY_event_stats": "Ray timing every handler of its event loops in every process: more server CPU a rollout "
    "under load and more idle CPU",
}


def missing(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The tuning this environment lacks (variable -> what that costs); empty when it runs as measured."""
    values = os.environ if env is None else env
    return {name: MISSING_COST[name] for name, value in SERVE_TUNING.items() if values.get(name) != value}


# Beside the environment, how every node starts Ray: under SCHED_BATCH (deployments/cpu_policy.py), which each of
# its processes inherits, so that a wake-up of HAProxy or a shard waits for a replica's slice instead of preempting
# it. `finsec serve` starts its cluster so. A KubeRay pod runs KubeRay's own `ray start` (KUBERAY_GEN_RAY_START_CMD,
# given to the container's command by the RayService's ray.io/overwrite-container-cmd annotation) from a shell that
# first puts itself under SCHED_BATCH; if the kernel refuses, Ray starts as it would have, and says so.
POD_START = (
    "ulimit -n 65536; chrt --batch --pid 0 $$ || echo 'finsec-serve: Ray starts under the default "
    'scheduling policy\' >&2; eval "$KUBERAY_GEN_RAY_START_CMD"'
)
BATCH_COST = (
    "every wake-up of HAProxy or a shard preempts a replica, which then comes back to cold caches: "
    "fewer rollouts/s where they share cores"
)


def preempting() -> bool:
    """Whether this thread runs under Linux's default policy, whose wake-ups preempt, rather than SCHED_BATCH. When
    Serve builds the app from a config, that thread is a Ray worker's, which has its node's policy."""
    return hasattr(os, "SCHED_BATCH") and policy_of() == "SCHED_OTHER"  # macOS has no such policy: nothing to ask


def warning(env: dict[str, str] | None = None) -> str | None:
    """One start-up warning naming what is missing and its cost; None when nothing is."""
    named = [f"{name}={SERVE_TUNING[name]} (without it: {cost})" for name, cost in missing(env).items()]
    if preempting():
        named.append(f"Ray under SCHED_BATCH (`chrt --batch 0 ray start ...`; without it: {BATCH_COST})")
    if not named:
        return None
    return (
        f"finsec-serve runs without the Serve tuning it is measured with: {'; '.join(named)}. Set them on every "
        "node before `ray start` (KubeRay: the RayService's env and start command), or start with "
        "`finsec serve`, which does. The measurements: docs/benchmarks.md."
    )


def haproxy_threads(cpus: int | None = None) -> str:
    """HAProxy's threads on a node of `cpus` CPUs: a quarter of them, 1 to 4 (Serve starts 4, which on a small
    node compete with the replicas for cores; a choice, not measured)."""
    return str(min(4, max(1, (cpus or os.cpu_count() or 1) // 4)))


def node_env(cpus: int | None = None) -> dict[str, str]:
    """The whole tuning for a node of `cpus` CPUs."""
    return {**SERVE_TUNING, "RAY_SERVE_HAPROXY_NBTHREAD": haproxy_threads(cpus)}
