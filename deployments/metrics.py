"""/aggregate_metrics (contract §D.6): statistics over verify rows, masked rows left out of quality numbers."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

_USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens")


def _numbers(row: dict[str, Any]) -> dict[str, float]:
    values = {
        name: float(value)
        for name, value in row.items()
        if not name.startswith("_") and name != "mask_sample" and isinstance(value, (int, float))
    }
    response = row.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    if isinstance(usage, dict):
        values.update({f: float(usage[f]) for f in _USAGE_FIELDS if isinstance(usage.get(f), (int, float))})
    return values


def _stats(rows: list[dict[str, Any]]) -> dict[str, float]:
    columns: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        for name, value in _numbers(row).items():
            columns[name].append(value)
    out: dict[str, float] = {}
    for name, values in columns.items():
        out[f"mean/{name}"] = statistics.fmean(values)
        out[f"max/{name}"] = max(values)
        out[f"min/{name}"] = min(values)
        out[f"median/{name}"] = statistics.median(values)
        out[f"std/{name}"] = statistics.pstdev(values)
    return out


def _perf_summary(rows: list[dict[str, Any]]) -> dict[str, float] | None:
    perf = [row["ng_perf"] for row in rows if isinstance(row.get("ng_perf"), dict)]
    if not perf:
        return None
    return {"rows": len(perf), **_stats(perf)}


def aggregate_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {
            "group_level_metrics": [],
            "agent_metrics": {},
            "key_metrics": {},
            "perf_summary": None,
            "repeat_level_metrics": [],
        }
    measured = [row for row in rows if not row.get("mask_sample")]
    by_task: dict[int, list[dict[str, Any]]] = defaultdict(list)
    by_repeat: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in measured:
        by_task[int(row.get("_ng_task_index", 0))].append(row)
        by_repeat[int(row.get("_ng_rollout_index", 0))].append(row)

    agent_metrics: dict[str, Any] = {}
    if measured:
        agent_metrics = {**_stats(measured), "num_repeats": len(by_repeat)}
    key_metrics = {name: value for name, value in agent_metrics.items() if name.startswith("mean/")}
    if len(measured) < len(rows):
        all_tasks = {int(row.get("_ng_task_index", 0)) for row in rows}
        coverage = {
            "coverage/measured_rollouts": len(measured),
            "coverage/masked_rollouts": len(rows) - len(measured),
            "coverage/measured_tasks": len(by_task),
            "coverage/fully_masked_tasks": len(all_tasks - set(by_task)),
        }
        agent_metrics.update(coverage)
        key_metrics.update(coverage)
    return {
        "group_level_metrics": [
            {**_stats(group), "sample": group[0], "_ng_task_index": task} for task, group in sorted(by_task.items())
        ],
        "agent_metrics": agent_metrics,
        "key_metrics": key_metrics,
        "perf_summary": _perf_summary(rows),
        "repeat_level_metrics": [
            {**_stats(group), "_ng_rollout_index": repeat} for repeat, group in sorted(by_repeat.items())
        ],
    }
