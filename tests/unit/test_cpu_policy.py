"""deployments/cpu_policy.py: what starts inside `batch_scheduled()` runs under SCHED_BATCH, the caller gets its
own policy back, and a caller under another policy is left alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from deployments.cpu_policy import batch_scheduled, policy_of

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="SCHED_BATCH is Linux's")

SLEEPER = [sys.executable, "-c", "import time; time.sleep(30)"]


def policy_of_child(start) -> str:
    child = start()
    try:
        return policy_of(child.pid)
    finally:
        child.kill()
        child.wait()


def test_a_process_started_inside_runs_batch_and_the_caller_gets_its_policy_back():
    assert policy_of() == "SCHED_OTHER"
    with batch_scheduled():
        inside = policy_of_child(lambda: subprocess.Popen(SLEEPER))
    assert inside == "SCHED_BATCH"
    assert policy_of() == "SCHED_OTHER"
    assert policy_of_child(lambda: subprocess.Popen(SLEEPER)) == "SCHED_OTHER"


def test_a_caller_under_another_policy_is_left_alone():
    # SCHED_IDLE needs no privilege; the check runs in a child so that this process keeps its own policy.
    probe = ("import os, subprocess, sys; from deployments.cpu_policy import batch_scheduled, policy_of\n"
             "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
             "with batch_scheduled():\n"
             "    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
             "    print(policy_of(), policy_of(child.pid)); child.kill()\n"
             "print(policy_of())")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.split() == ["SCHED_IDLE", "SCHED_IDLE", "SCHED_IDLE"]
