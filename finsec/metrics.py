"""The replicas' operator metrics, through Ray's metrics API: each node's metrics-export port (8080 under KubeRay)
serves them with a `ray_` prefix, counters with `_total`, histograms as `_bucket`, `_sum` and `_count`. The
shards' session events are the reaper's (session_store/ray_actors.py); these are what a replica sees, as
"exported as: what; labels":

- `ray_finsec_verifies_total`: /verify rows, counted after grading; `outcome` (scored, masked), `failure_kind`
- `ray_finsec_rewards_total`: the rewards of scored /verify rows, summed: over `ray_finsec_verifies_total` with
  `outcome="scored"`, the mean reward (a histogram's `_sum` would not do: Ray exports bucket midpoints)
- `ray_finsec_verify_reward`: the reward of each scored /verify row, by bucket: the rewards' distribution
- `ray_finsec_sec_fetches_total`: reads of SEC documents and data; `source` (live, mirror), `status` (200, 404,
  429, ..., error, refused)
- `ray_finsec_retries_total`: requests sent again; `target` (sec, sec_api, web_search, judge), `reason` (a status,
  or transport)
- `ray_finsec_rate_limit_wait_seconds`: the wait for an SEC rate-limit slot
- `ray_finsec_model_call_seconds`: one judge or retrieval-model call; `model` (judge, retrieval), `outcome` (ok,
  error)
- `ray_finsec_cache_lookups_total`: a replica's caches; `cache` (texts, indexes, verdicts), `result` (hit, miss)
- `ray_finsec_unavailable_total`: 503s; `cause` (actor_unreachable, store_full, not_durable, marks_unreadable,
  store_forgot, store_unsafe, judge_busy, admission_waited, admission_memory, internal, ...)
- `ray_finsec_admission_wait_seconds`: how long a request that found no free place waited for one; `outcome`
  (admitted, refused): waits that grow towards `admission_wait_seconds` say the replicas need more cores
- `ray_finsec_request_seconds`: a rollout route's calls, from arrival to the reply's end (admission's wait
  included); `route` (/seed_session, /parse_html_page, ..., the tools and lifecycle routes)
- `ray_finsec_event_loop_lag_seconds`: how late a replica's event loop wakes a task that sleeps half a second: the
  wait every request has behind work that holds the loop

Every metric also has `app`. A replica exports them through Ray (deployments/observability/ray_metrics.py);
outside a Ray worker (the one-process app, the Ray-free tests) they are counted in memory instead
(`Metrics.counted`), so both paths run the same code. Label values come from fixed vocabularies,
never from a request, so the series stay few.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["DEFINITIONS", "exported_names", "Metrics", "NO_METRICS", "REWARDS", "SECONDS"]

log = logging.getLogger(__name__)

SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
REWARDS = [0.25, 0.5, 0.75, 1.0]  # a reward is in [0, 1]; binary ones fall in the first and last buckets

# name -> (kind, description, labels besides app)
DEFINITIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "finsec_verifies": (
        "counter",
        "/verify rows by outcome and failure_kind, counted after grading",
        ("outcome", "failure_kind"),
    ),
    "finsec_rewards": (
        "counter",
        'The rewards of scored /verify rows, summed: over ray_finsec_verifies_total{outcome="scored"}, the mean reward',
        (),
    ),
    "finsec_verify_reward": ("histogram", "The reward of each scored /verify row, by bucket", ()),
    "finsec_sec_fetches": (
        "counter",
        "Reads of SEC documents and data, by source and HTTP status",
        ("source", "status"),
    ),
    "finsec_retries": ("counter", "Requests sent again after a retryable failure", ("target", "reason")),
    "finsec_rate_limit_wait_seconds": ("histogram", "Seconds waited for an SEC rate-limit slot", ()),
    "finsec_model_call_seconds": ("histogram", "Seconds of one judge or retrieval-model call", ("model", "outcome")),
    "finsec_cache_lookups": ("counter", "Replica cache lookups, by cache and result", ("cache", "result")),
    "finsec_unavailable": ("counter", "503 answers, by cause", ("cause",)),
    "finsec_admission_wait_seconds": (
        "histogram",
        "Seconds a request that found no free place waited for one",
        ("outcome",),
    ),
    "finsec_request_seconds": (
        "histogram",
        "A rollout route's calls, from arrival to the reply's end (admission's wait included)",
        ("route",),
    ),
    "finsec_event_loop_lag_seconds": (
        "histogram",
        "How late a replica's event loop woke a task sleeping half a second",
        (),
    ),
}


def exported_names() -> list[str]:
    """The names a Prometheus scrape shows for these metrics (one per counter, `_count` for a histogram)."""
    return sorted(
        f"ray_{name}_total" if kind == "counter" else f"ray_{name}_count" for name, (kind, _, _) in DEFINITIONS.items()
    )


class Metrics:
    """One per replica (and per in-process app)."""

    def __init__(self, app: str, *, exporter: Callable[[], dict[str, Any]] | None = None):
        """`exporter`: the exported metric of each name in DEFINITIONS (an object with `inc` and `observe`), made
        on first use; a name it has none for, or no exporter, is counted in memory."""
        self._app = app
        self.counted: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()  # not exported
        self._exporter = exporter
        self._exported: dict[str, Any] | None = None if exporter else {}
        self._lock = threading.Lock()  # tools and offloaded work record from worker threads too

    # ----- what the code records --------------------------------------------------------------------------

    def verify(self, outcome: str, failure_kind: str | None, reward: float | None = None) -> None:
        self._add("finsec_verifies", outcome=outcome, failure_kind=failure_kind or "none")
        if outcome == "scored" and isinstance(reward, (int, float)):
            self._observe("finsec_verify_reward", float(reward))
            if reward > 0:  # a Ray counter refuses an increment of 0
                self._add("finsec_rewards", amount=float(reward))

    def sec_fetch(self, source: str, status: int | str) -> None:
        self._add("finsec_sec_fetches", source=source, status=str(status))

    def retry(self, target: str, reason: int | str) -> None:
        self._add("finsec_retries", target=target, reason=str(reason))

    def rate_limit_wait(self, seconds: float) -> None:
        self._observe("finsec_rate_limit_wait_seconds", seconds)

    def model_call(self, model: str, ok: bool, seconds: float) -> None:
        self._observe("finsec_model_call_seconds", seconds, model=model, outcome="ok" if ok else "error")

    def cache_lookup(self, cache: str, hit: bool) -> None:
        self._add("finsec_cache_lookups", cache=cache, result="hit" if hit else "miss")

    def unavailable(self, cause: str) -> None:
        self._add("finsec_unavailable", cause=cause)

    def admission_wait(self, seconds: float, admitted: bool) -> None:
        self._observe("finsec_admission_wait_seconds", seconds, outcome="admitted" if admitted else "refused")

    def request(self, route: str, seconds: float) -> None:
        self._observe("finsec_request_seconds", seconds, route=route)

    def loop_lag(self, seconds: float) -> None:
        self._observe("finsec_event_loop_lag_seconds", seconds)

    # ----- where it goes ----------------------------------------------------------------------------------

    def count(self, name: str, **labels: str) -> float:
        """What was recorded in memory (outside Ray) under these labels, summed over the others."""
        wanted = set(labels.items())
        return sum(n for (metric, tags), n in self.counted.items() if metric == name and wanted <= set(tags))

    def _add(self, name: str, amount: float = 1, **labels: str) -> None:
        metric = self._metric(name)
        if metric is None:
            with self._lock:
                # a Counter sums floats too (the rewards); typeshed types its counts as int
                self.counted[(name, tuple(sorted(labels.items())))] += amount  # type: ignore[assignment]
        else:
            metric.inc(amount, tags={"app": self._app, **labels})

    def _observe(self, name: str, value: float, **labels: str) -> None:
        metric = self._metric(name)
        if metric is None:
            with self._lock:
                self.counted[(name, tuple(sorted(labels.items())))] += 1
        else:
            metric.observe(value, tags={"app": self._app, **labels})

    def _metric(self, name: str):
        if self._exported is None:
            assert self._exporter is not None  # __init__ leaves _exported None only with an exporter
            self._exported = self._exporter()
        return self._exported.get(name)


NO_METRICS = Metrics("none")  # for components built without a replica's metrics (tests, tools)
