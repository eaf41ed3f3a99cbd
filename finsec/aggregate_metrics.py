"""/aggregate_metrics (contract §D.6): statistics over verify rows, masked rows left out of quality numbers.

The rows come from the caller, so the function is total: whatever the values, it returns, and what it
returns renders as strict JSON (no NaN or infinity; Starlette renders with allow_nan=False).
- `_ng_task_index` / `_ng_rollout_index`: an int (not a bool) is used as given; anything else (a string,
  a float, a dict, a bool, null) counts as 0, the same as a missing index (§D.6's default).
- A value counts as a number when it is an int, float or bool with a finite float value; others (1e400
  parses as inf, NaN, an int too big for a float) are left out of the statistics.
- Statistics that overflow the usual way are computed another way that cannot (mean of fractions, median
  by halves, std scaled by the largest magnitude); a statistic that would still not be finite is dropped.
- `sample` (a row echoed back) has every non-finite float replaced by null.

Grounding: `grounding/checked_rollouts` counts the measured rows whose `grounded` is true or false (null means
there was nothing to check), and `grounding/grounded_rate` is the grounded share of those. Both go in
`agent_metrics` and `key_metrics`. The rate equals `mean/grounded` (a bool counts as 0/1); this block states the
denominator as well.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from typing import Any

__all__ = ["aggregate_metrics"]

_USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens")


def _finite(value: Any) -> float | None:
    if not isinstance(value, (int, float)):  # bool is an int: counts as 0/1 (§D.6)
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range
        return None
    return number if math.isfinite(number) else None


def _index(row: dict[str, Any], name: str) -> int:
    value = row.get(name, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _numbers(row: dict[str, Any]) -> dict[str, float]:
    values = {}
    for name, value in row.items():
        usable = isinstance(name, str) and not name.startswith("_") and name != "mask_sample"
        if usable and (number := _finite(value)) is not None:
            values[name] = number
    response = row.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    if isinstance(usage, dict):
        for name in _USAGE_FIELDS:
            if (number := _finite(usage.get(name))) is not None:
                values[name] = number
    return values


def _mean(values: list[float]) -> float:
    try:
        mean = statistics.fmean(values)
        if math.isfinite(mean):
            return mean
    except OverflowError:  # fsum's intermediate overflow, e.g. for [1e308, 1e308]
        pass
    return math.fsum(v / len(values) for v in values)  # each term is finite, and so is their sum


def _median(values: list[float]) -> float:
    median = statistics.median(values)
    if math.isfinite(median):
        return median
    ordered = sorted(values)  # an even count averaged two values whose sum overflowed
    middle = len(ordered) // 2
    return ordered[middle - 1] / 2 + ordered[middle] / 2


def _std(values: list[float]) -> float:
    try:
        std = statistics.pstdev(values)
        if math.isfinite(std):
            return std
    except OverflowError:
        pass
    scale = max(abs(v) for v in values)  # > 0 here: all-zero data cannot overflow
    return scale * statistics.pstdev([v / scale for v in values])  # at most `scale`: finite


_STATISTICS = (("mean", _mean), ("max", max), ("min", min), ("median", _median), ("std", _std))


def _stats(rows: list[dict[str, Any]]) -> dict[str, float]:
    columns: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        for name, value in _numbers(row).items():
            columns[name].append(value)
    out: dict[str, float] = {}
    for name, values in columns.items():
        for prefix, statistic in _STATISTICS:
            try:
                result = float(statistic(values))
            except (OverflowError, ValueError, ZeroDivisionError):  # not expected: drop, never raise
                continue
            if math.isfinite(result):
                out[f"{prefix}/{name}"] = result
    return out


def _json_safe(value: Any) -> Any:
    """`value`, or a copy with every NaN or infinity replaced by null (the C encoder and decoder walk it)."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (ValueError, TypeError, RecursionError):
        pass
    try:
        return json.loads(json.dumps(value, default=str), parse_constant=lambda _: None)
    except (ValueError, TypeError, RecursionError):
        return None


def _perf_summary(rows: list[dict[str, Any]]) -> dict[str, float] | None:
    perf = [row["ng_perf"] for row in rows if isinstance(row.get("ng_perf"), dict)]
    if not perf:
        return None
    return {"rows": len(perf), **_stats(perf)}


def _grounding(rows: list[dict[str, Any]]) -> dict[str, float]:
    checked = [row["grounded"] for row in rows if isinstance(row.get("grounded"), bool)]
    if not checked:
        return {}
    return {"grounding/checked_rollouts": len(checked), "grounding/grounded_rate": sum(checked) / len(checked)}


def aggregate_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [row for row in rows if isinstance(row, dict)]
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
        by_task[_index(row, "_ng_task_index")].append(row)
        by_repeat[_index(row, "_ng_rollout_index")].append(row)

    agent_metrics: dict[str, Any] = {}
    if measured:
        agent_metrics = {**_stats(measured), "num_repeats": len(by_repeat)}
    key_metrics = {name: value for name, value in agent_metrics.items() if name.startswith("mean/")}
    grounding = _grounding(measured)
    agent_metrics.update(grounding)
    key_metrics.update(grounding)
    if len(measured) < len(rows):
        all_tasks = {_index(row, "_ng_task_index") for row in rows}
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
            {**_stats(group), "sample": _json_safe(group[0]), "_ng_task_index": task}
            for task, group in sorted(by_task.items())
        ],
        "agent_metrics": agent_metrics,
        "key_metrics": key_metrics,
        "perf_summary": _perf_summary(rows),
        "repeat_level_metrics": [
            {**_stats(group), "_ng_rollout_index": repeat} for repeat, group in sorted(by_repeat.items())
        ],
    }
