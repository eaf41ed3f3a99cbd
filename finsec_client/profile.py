"""Reward profiles: what each task of one or more runs teaches a policy, read from the run files alone.

Per task: its episodes, pass@1 and the unbiased pass@k (Chen et al., 2021: the chance that at least one of k
episodes drawn without replacement from the n played passes), the mean and spread of its reward, the share of its
episodes masked (not measurements: they count in no rate), its tool calls, and its GRPO groups whose rewards are
all equal (no advantage to learn from). An episode passes when its reward reaches `threshold`; masked and failed
episodes are left out of every rate. `select` picks the tasks whose pass@1 lies in a range: a curriculum by
measured difficulty.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from finsec_client.records import EpisodeRecord
from finsec_client.tasks import Task

__all__ = [
    "Selection",
    "TaskProfile",
    "as_json",
    "by_difficulty",
    "from_json",
    "pass_at_k",
    "profile",
    "render",
    "render_difficulty",
    "select",
]


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k): of n episodes with c passing, the chance that k drawn without replacement hold a
    pass. Computed as a product, without the binomials' huge numbers."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c})")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


@dataclass
class TaskProfile:
    taskset: str
    task_id: str
    question: str
    episodes: int = 0  # scored: the ones every rate counts
    masked: int = 0
    failed: int = 0  # no verify row (a transport failure)
    passed: int = 0
    pass_at: dict[int, float] = field(default_factory=dict)
    mean_reward: float | None = None
    std_reward: float | None = None
    tool_calls: float | None = None  # per scored episode
    groups: int = 0
    flat_groups: int = 0  # groups whose scored rewards are all equal

    @property
    def key(self) -> tuple[str, str]:
        return self.taskset, self.task_id

    @property
    def masked_share(self) -> float:
        played = self.episodes + self.masked
        return self.masked / played if played else 0.0


def profile(
    records: Iterable[EpisodeRecord], ks: Iterable[int] = (1, 4, 8), threshold: float = 1.0
) -> list[TaskProfile]:
    """One profile per task, hardest (lowest pass@1) first."""
    by_task: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        by_task[(record.taskset, record.task_id)].append(record)
    profiles = []
    for (taskset, task_id), played in by_task.items():
        scored = [r for r in played if r.outcome == "scored" and r.reward is not None]
        rewards = [float(r.reward) for r in scored if r.reward is not None]
        one = TaskProfile(taskset, task_id, played[0].question, episodes=len(scored))
        one.masked = sum(r.outcome == "masked" for r in played)
        one.failed = sum(r.outcome == "failed" for r in played)
        one.passed = sum(reward >= threshold for reward in rewards)
        one.pass_at = {k: pass_at_k(len(rewards), one.passed, k) for k in sorted(set(ks)) if 1 <= k <= len(rewards)}
        if rewards:
            one.mean_reward = statistics.fmean(rewards)
            one.std_reward = statistics.pstdev(rewards)
            one.tool_calls = statistics.fmean(len(r.tools) for r in scored)
        groups: dict[int, list[float]] = defaultdict(list)
        for record in scored:
            if record.group is not None and record.reward is not None:
                groups[record.group].append(float(record.reward))
        one.groups = len(groups)
        one.flat_groups = sum(len(set(rewards)) == 1 for rewards in groups.values() if len(rewards) > 1)
        profiles.append(one)
    return sorted(profiles, key=lambda p: (p.pass_at.get(1, math.inf), p.taskset, p.task_id))


@dataclass(frozen=True)
class Selection:
    tasks: list[Task]
    left_out: dict[str, int]  # reason -> tasks


def select(tasks: Iterable[Task], profiles: Iterable[TaskProfile], low: float, high: float) -> Selection:
    """The tasks whose measured pass@1 lies in [low, high]; the others counted by why they were left out."""
    measured = {p.key: p.pass_at.get(1) for p in profiles}
    chosen, left_out = [], {"too hard": 0, "too easy": 0, "not measured": 0}
    for task in tasks:
        rate = measured.get((task.taskset, task.task_id))
        if rate is None:
            left_out["not measured"] += 1
        elif rate < low:
            left_out["too hard"] += 1
        elif rate > high:
            left_out["too easy"] += 1
        else:
            chosen.append(task)
    return Selection(chosen, left_out)


def as_json(profiles: list[TaskProfile], threshold: float) -> dict[str, Any]:
    rows = []
    for p in profiles:
        row = asdict(p)
        row["pass_at"] = {str(k): v for k, v in p.pass_at.items()}
        row["masked_share"] = p.masked_share
        rows.append(row)
    return {"threshold": threshold, "tasks": rows}


def from_json(data: dict[str, Any]) -> list[TaskProfile]:
    profiles = []
    for row in data.get("tasks", []):
        row = {k: v for k, v in row.items() if k != "masked_share"}
        row["pass_at"] = {int(k): float(v) for k, v in row.get("pass_at", {}).items()}
        profiles.append(TaskProfile(**row))
    return profiles


def render(profiles: list[TaskProfile], ks: Iterable[int], threshold: float) -> str:
    ks = sorted(set(ks))
    lines = [
        f"{len(profiles)} tasks; an episode passes at reward >= {threshold:g}; masked and failed episodes count in no "
        "rate. Hardest first.",
        "",
        " | ".join(["task", "scored", *(f"pass@{k}" for k in ks), "mean", "std", "masked", "tools", "flat groups"]),
    ]
    for p in profiles:
        cells = [
            f"{p.taskset}/{p.task_id}",
            str(p.episodes),
            *(f"{p.pass_at[k]:.2f}" if k in p.pass_at else "-" for k in ks),
            "-" if p.mean_reward is None else f"{p.mean_reward:.2f}",
            "-" if p.std_reward is None else f"{p.std_reward:.2f}",
            f"{p.masked_share:.0%}",
            "-" if p.tool_calls is None else f"{p.tool_calls:.1f}",
            f"{p.flat_groups}/{p.groups}" if p.groups else "-",
        ]
        lines.append(" | ".join(cells))
    never = sum(1 for p in profiles if p.episodes and p.passed == 0)
    always = sum(1 for p in profiles if p.episodes and p.passed == p.episodes)
    groups, flat = sum(p.groups for p in profiles), sum(p.flat_groups for p in profiles)
    lines += [
        "",
        f"never passed: {never} tasks; always passed: {always}; GRPO groups with no variance: {flat} of {groups}",
    ]
    return "\n".join(lines) + "\n"


def by_difficulty(tasks: Iterable[Task], profiles: Iterable[TaskProfile]) -> list[dict[str, Any]]:
    """Measured pass@1 by kind and difficulty (a task row's `kind` and `difficulty`: documents, facts, operations):
    per group, its tasks, how many were measured, and their mean pass@1; easiest groups first."""
    measured = {p.key: p.pass_at.get(1) for p in profiles}
    groups: dict[tuple, list[float | None]] = defaultdict(list)
    for task in tasks:
        given = task.data.get("difficulty")
        shape: dict[str, Any] = given if isinstance(given, dict) else {}
        key = (
            str(task.data.get("kind", "-")),
            *(int(shape[k]) if isinstance(shape.get(k), int) else 0 for k in ("documents", "facts", "operations")),
        )
        groups[key].append(measured.get((task.taskset, task.task_id)))
    rows = []
    for (kind, documents, facts, operations), rates in groups.items():
        known = [r for r in rates if r is not None]
        rows.append(
            {
                "kind": kind,
                "documents": documents,
                "facts": facts,
                "operations": operations,
                "tasks": len(rates),
                "measured": len(known),
                "pass_at_1": statistics.fmean(known) if known else None,
            }
        )
    return sorted(rows, key=lambda r: (r["documents"], r["operations"], r["facts"], r["kind"]))


def render_difficulty(rows: list[dict[str, Any]]) -> str:
    lines = [
        "kind | documents | facts | operations | tasks | measured | pass@1",
        *(
            f"{r['kind']} | {r['documents']} | {r['facts']} | {r['operations']} | {r['tasks']} | {r['measured']} | "
            + ("-" if r["pass_at_1"] is None else f"{r['pass_at_1']:.2f}")
            for r in rows
        ),
    ]
    return "\n".join(lines) + "\n"
