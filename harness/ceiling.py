"""How far the Serve path can get on this machine: the arithmetic under the per-core targets, from measured costs.

The one-process baseline runs its server on one core while the load generator has the other. The Serve path
shares both cores with the load generator, and beside the app's own work it pays costs no code of this project
can remove: Serve's per-request floor (the replica's wrapper and the HAProxy hop, bench/serve_floor.py) and the
cluster's idle background (every Ray process's timers, the Serve controller's loop, the dashboard agent). Even
if the replicas ran the app as cheaply as the baseline does, and the shard hop and the durable writes were free,
its rate S would satisfy

    S * (app + floor + load generator) + idle <= cores

so its ratio to the baseline's measured rate B can be at most (cores - idle) / (app + floor + load generator) / B.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

REQUESTS_PER_ROLLOUT = 8
FLOOR_PROCESSES = ("ingress replicas", "HAProxy")  # the parts of serve_floor's cost that scale with requests


def serve_floor_ms(floor_json: Path, config: str) -> float | None:
    """Serve's floor per rollout (ms): the replica's and HAProxy's CPU a request over plain uvicorn's, medians of
    bench/results/serve_floor.json, for the client `config` (with or without the disconnect watch)."""
    if not floor_json.exists():
        return None
    runs = json.loads(floor_json.read_text())["runs"]
    serve = runs.get("serve-no-disconnect-watch" if "nowatch" in config else "serve")
    if not serve or not runs.get("uvicorn"):
        return None
    uvicorn = statistics.median(r["server_cpu_us_per_request"] for r in runs["uvicorn"])
    replica = statistics.median(
        sum(r["cpu_us_per_request_by_process"].get(p, 0) for p in FLOOR_PROCESSES) for r in serve
    )
    return REQUESTS_PER_ROLLOUT * (replica - uvicorn) / 1000


def ceiling(
    app_ms: float, floor_ms: float, client_ms: float, idle_cores: float, cores: int, baseline_rate: float
) -> float:
    """The largest ratio to the baseline's rate (rollouts/s) the Serve path could reach (see the docstring)."""
    return (cores - idle_cores) * 1000 / (app_ms + floor_ms + client_ms) / baseline_rate


def budget_ms(ratio: float, baseline_rate: float, client_ms: float, cores: int) -> float:
    """The server CPU per rollout (ms, idle background included) the Serve path may spend to run at `ratio` times
    the baseline's rate, once the load generator has taken its share of the cores."""
    rate = ratio * baseline_rate
    return (cores * 1000 - rate * client_ms) / rate
