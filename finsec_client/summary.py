"""The end-of-run summary: what the episodes did (from their records) beside what the server counted
(/session_counters before and after, /aggregate_metrics over the run's verify rows)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from finsec_client.records import EpisodeRecord

__all__ = [
    "counter_delta",
    "DriverTotals",
    "group_totals",
    "KEY_METRICS_SHOWN",
    "percentile",
    "render",
    "shard_time",
    "summarize",
    "Summary",
]

# The phases /session_counters' shard_calls times: (its count, its microseconds)
_SHARD_PHASES = (("batches", "batch_us"), ("mark_reads", "mark_read_us"), ("mark_writes", "mark_write_us"))

KEY_METRICS_SHOWN = (
    "mean/reward",
    "mean/judge_rating",
    "coverage/measured_rollouts",
    "coverage/masked_rollouts",
    "coverage/fully_masked_tasks",
)


@dataclass
class DriverTotals:
    episodes: int = 0
    scored: int = 0
    masked: int = 0
    failed: int = 0
    reward_sum: float = 0.0

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.scored if self.scored else None


@dataclass
class Summary:
    episodes: int
    scored: int
    masked: dict[str, int]  # by failure_kind
    failed: dict[str, int]  # by failure.kind (transport, http, ...)
    mean_reward: float | None  # over scored episodes (masked ones are no measurement)
    by_driver: dict[str, DriverTotals]
    wall_seconds: float
    rollouts_per_second: float
    latency_ms: dict[str, dict[str, float]]  # route -> n, p50, p99
    counters: dict[str, int] = field(default_factory=dict)  # /session_counters after minus before
    shard_time: dict[str, float] = field(default_factory=dict)  # the shards' batches and mark I/O over the run
    held: dict[str, int] = field(default_factory=dict)  # what the server holds after the run
    key_metrics: dict[str, Any] = field(default_factory=dict)  # /aggregate_metrics over the verify rows
    dead_workers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be measured, and why
    retried: int = 0  # requests sent again after a 5xx or no reply
    groups: dict[str, int] = field(default_factory=dict)  # with -r K: groups played, complete, with a spread

    @property
    def completed(self) -> int:
        return self.episodes - sum(self.failed.values())

    @property
    def transport_failures(self) -> int:
        return self.failed.get("transport", 0)

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["by_driver"] = {k: {**asdict(v), "mean_reward": v.mean_reward} for k, v in self.by_driver.items()}
        row["completed"] = self.completed
        return row


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def counter_delta(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int]:
    if before is None or after is None:
        return {}
    names = sorted(set(before) | set(after))
    return {n: after.get(n, 0) - before.get(n, 0) for n in names if after.get(n, 0) != before.get(n, 0)}


def shard_time(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, float] | None:
    """Between two readings of /session_counters' shard_calls: batches, mark reads and mark writes, with the mean
    ms of each (None where either reading lacks the timers: a server from before them)."""
    if not before or not after or "batch_us" not in before or "batch_us" not in after:
        return None
    out: dict[str, float] = {}
    for count, spent in _SHARD_PHASES:
        n = after[count] - before[count]
        out[count] = n
        out[spent.replace("_us", "_ms")] = (after[spent] - before[spent]) / 1000 / n if n else 0.0
    return out


def summarize(
    records: list[EpisodeRecord],
    wall_seconds: float,
    *,
    counters_before: dict | None = None,
    counters_after: dict | None = None,
    held: dict | None = None,
    key_metrics: dict | None = None,
    shard_calls_before: dict | None = None,
    shard_calls_after: dict | None = None,
    dead_workers: list[str] | None = None,
    notes: list[str] | None = None,
    resumed: int = 0,
) -> Summary:
    """`resumed`: how many of the records (all completed) an earlier run played, left out of the rate."""
    masked: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    drivers: dict[str, DriverTotals] = defaultdict(DriverTotals)
    latencies: dict[str, list[float]] = defaultdict(list)
    reward_sum, scored, retried = 0.0, 0, 0
    for record in records:
        totals = drivers[record.driver]
        totals.episodes += 1
        if record.failure is not None:
            failed[record.failure.kind] += 1
            totals.failed += 1
        elif record.masked:
            masked[record.failure_kind or "unknown"] += 1
            totals.masked += 1
        else:
            scored += 1
            reward_sum += record.reward or 0.0
            totals.scored += 1
            totals.reward_sum += record.reward or 0.0
        for call in record.calls:
            if call["status"] is not None and not call.get("retried"):
                latencies[call["route"]].append(call["ms"])
            retried += bool(call.get("retried"))
    completed = len(records) - sum(failed.values())
    return Summary(
        episodes=len(records),
        scored=scored,
        masked=dict(masked),
        failed=dict(failed),
        mean_reward=reward_sum / scored if scored else None,
        by_driver=dict(drivers),
        wall_seconds=wall_seconds,
        rollouts_per_second=(completed - resumed) / wall_seconds if wall_seconds > 0 else 0.0,
        latency_ms={
            route: {"n": len(v), "p50": percentile(v, 0.5), "p99": percentile(v, 0.99)}
            for route, v in sorted(latencies.items())
        },
        counters=counter_delta(counters_before, counters_after),
        held=dict(held or {}),
        shard_time=shard_time(shard_calls_before, shard_calls_after) or {},
        key_metrics={k: v for k, v in (key_metrics or {}).items() if k in KEY_METRICS_SHOWN},
        dead_workers=list(dead_workers or []),
        notes=list(notes or []),
        retried=retried,
        groups=group_totals(records),
    )


def group_totals(records: list[EpisodeRecord]) -> dict[str, int]:
    """GRPO groups: how many were played, how many have every member scored, and how many of those have rewards
    that differ (a group whose members all got the same reward has no advantage to learn from)."""
    rewards: dict[tuple[str, int], list[float | None]] = defaultdict(list)
    sizes: dict[tuple[str, int], int] = {}
    for record in records:
        if record.group is not None:
            key = (record.driver, record.group)
            rewards[key].append(None if record.failure is not None or record.masked else record.reward)
            sizes[key] = record.group_size or 0
    if not rewards:
        return {}
    complete = [r for key, r in rewards.items() if len(r) == sizes[key] and None not in r]
    return {"played": len(rewards), "complete": len(complete), "with_spread": sum(len(set(r)) > 1 for r in complete)}


def _reward(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render(summary: Summary) -> str:  # noqa: C901 (one line per figure, each optional)
    lines = ["", "Rollouts"]
    add = lines.append
    add(
        f"  episodes            {summary.episodes}  (completed {summary.completed}, scored {summary.scored}, "
        f"masked {sum(summary.masked.values())}, failed {sum(summary.failed.values())})"
    )
    add(f"  mean reward         {_reward(summary.mean_reward)}  (over scored episodes)")
    for kind, n in sorted(summary.masked.items()):
        add(f"  masked {kind:<13}{n}")
    add(f"  transport failures  {summary.transport_failures}")
    for kind, n in sorted(summary.failed.items()):
        if kind != "transport":
            add(f"  failed ({kind}){' ' * max(1, 12 - len(kind))}{n}")
    add(
        f"  rollouts/s          {summary.rollouts_per_second:.1f}  ({summary.completed} completed in "
        f"{summary.wall_seconds:.1f}s)"
    )
    add(f"  requests retried    {summary.retried}  (a 5xx or no reply, sent again)")
    if summary.groups:
        g = summary.groups
        add(
            f"  groups              {g['played']} played, {g['complete']} with every member scored, "
            f"{g['with_spread']} of those with rewards that differ"
        )
    if summary.dead_workers:
        add(f"  dead workers        {len(summary.dead_workers)}: " + "; ".join(summary.dead_workers))
    if len(summary.by_driver) > 1 or summary.by_driver:
        add("")
        add(f"  {'driver':<20}{'episodes':>9}{'scored':>8}{'masked':>8}{'failed':>8}{'mean reward':>13}")
        for name, t in sorted(summary.by_driver.items()):
            add(f"  {name:<20}{t.episodes:>9}{t.scored:>8}{t.masked:>8}{t.failed:>8}{_reward(t.mean_reward):>13}")
    if summary.latency_ms:
        add("")
        add(f"  {'route':<24}{'requests':>9}{'p50 ms':>10}{'p99 ms':>10}")
        for route, row in summary.latency_ms.items():
            add(f"  {route:<24}{row['n']:>9}{row['p50']:>10.1f}{row['p99']:>10.1f}")
    if summary.key_metrics:
        add("")
        add("  server /aggregate_metrics (this run's verify rows)")
        for name, value in summary.key_metrics.items():
            add(f"    {name:<30}{value:.3f}" if isinstance(value, float) else f"    {name:<30}{value}")
    if summary.counters or summary.held:
        add("")
        add("  server /session_counters (after minus before)")
        for name, n in summary.counters.items():
            add(f"    {name:<36}{n:+d}")
        if summary.held:
            add("    held now: " + ", ".join(f"{k} {v}" for k, v in summary.held.items()))
        if shard := summary.shard_time:
            add(
                f"    shard time: {shard['batches']:,} batches at {shard['batch_ms']:.2f} ms; durable mark reads "
                f"{shard['mark_reads']:,} at {shard['mark_read_ms']:.2f} ms, writes {shard['mark_writes']:,} at "
                f"{shard['mark_write_ms']:.2f} ms (means)"
            )
    for note in summary.notes:
        add(f"  note: {note}")
    return "\n".join(lines)
