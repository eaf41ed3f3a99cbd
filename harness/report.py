"""The reports' Markdown pieces, shared by the benchmarks (bench/_common.py re-exports them) and the report
code the tests check (harness.reward_hacking, harness.rollout_report)."""

from __future__ import annotations

import os
import platform
import time


def machine() -> str:
    return (
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}"
    )


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", " ") for cell in row) + " |")
    return "\n".join(lines)
