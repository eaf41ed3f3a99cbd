"""deployments/cpu_policy.py: what starts inside `batch_scheduled()` runs under SCHED_BATCH, the caller gets its
own policy back, and a caller under another policy is left alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="SCHED_BATCH is Linux's")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def probe(policy: str) -> list[str]:
    """In a child set to `policy` (so the test holds whatever policy pytest runs under): its policy, then inside
    `batch_scheduled()` its own and a new process's, then its own again after."""
    script = (
        "import os, subprocess, sys; from deployments.cpu_policy import batch_scheduled, policy_of\n"
        f"os.sched_setscheduler(0, os.{policy}, os.sched_param(0))\n"
        "print(policy_of())\n"
        "with batch_scheduled():\n"
        "    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "    print(policy_of(), policy_of(child.pid)); child.kill()\n"
        "print(policy_of())"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    return out.stdout.split()


def test_a_process_started_inside_runs_batch_and_the_caller_gets_its_policy_back():
    assert probe("SCHED_OTHER") == ["SCHED_OTHER", "SCHED_BATCH", "SCHED_BATCH", "SCHED_OTHER"]


def test_a_caller_under_another_policy_is_left_alone():
    # SCHED_IDLE needs no privilege; a process may always lower its own priority.
    assert probe("SCHED_IDLE") == ["SCHED_IDLE"] * 4
