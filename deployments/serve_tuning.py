"""The environment every node of a finsec-serve cluster runs with, which a serve config cannot carry (Serve reads
it when a node's proxy and replicas start): the one source for `finsec serve` (deployments/local.py), the
RayService's pod env (cluster/base/rayservice.yaml, compared by tests/unit/test_cluster_manifests.py) and the
cluster docs. Measured in bench/results/serve_rollouts.md."""

from __future__ import annotations

import os

SERVE_TUNING = {
    # Serve's HAProxy ingress: replicas listen on their own ports behind it (the default Python proxy took ~7 ms
    # a request and collapsed under load).
    "RAY_SERVE_ENABLE_HA_PROXY": "1",
    # Requests on the replica's own event loop, not handed to a second loop in another thread: our handlers never
    # block (CPU-heavy work goes to worker threads), and the hand-off cost ~20% of throughput here.
    "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0",
    # Serve turns each request's HAProxy log line into its serve_num_http_* metrics in an actor (its CPU is in the
    # report's CPU table). HAProxy's own exporter (per-backend rates, latencies, statuses) stays on.
    "RAY_SERVE_HAPROXY_METRICS_ENABLED": "0",
}


def haproxy_threads(cpus: int | None = None) -> str:
    """HAProxy's threads on a node of `cpus` CPUs: a quarter of them, 1 to 4 (Serve starts 4, which on a small
    node compete with the replicas for cores; a choice, not measured)."""
    return str(min(4, max(1, (cpus or os.cpu_count() or 1) // 4)))


def node_env(cpus: int | None = None) -> dict[str, str]:
    """The whole tuning for a node of `cpus` CPUs."""
    return {**SERVE_TUNING, "RAY_SERVE_HAPROXY_NBTHREAD": haproxy_threads(cpus)}
