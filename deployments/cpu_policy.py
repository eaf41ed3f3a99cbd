"""A local Ray cluster as a throughput workload: started under Linux's SCHED_BATCH, which every process it
forks inherits (the GCS, the raylet, each worker, so every replica and shard, and HAProxy).

Why: where replicas, HAProxy and shards share cores, every request wakes HAProxy and a shard, and under the
default policy each wake-up preempts the replica running on that core. Under load the replicas are preempted
over and over, and each time come back to caches the other process filled. A
SCHED_BATCH task that wakes waits for the running task's slice instead of cutting it short; its share of the CPU
is the same (nice 0), and a woken task still goes straight to an idle core, so a lone request waits no longer.
Measured: docs/benchmarks.md, "Why the serving defaults".
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["batch_scheduled", "policy_of"]

log = logging.getLogger(__name__)

_NAMES = {
    getattr(os, name): name
    for name in ("SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE", "SCHED_FIFO", "SCHED_RR")
    if hasattr(os, name)
}


@contextmanager
def batch_scheduled() -> Iterator[None]:
    """Run the body with this thread under SCHED_BATCH, so that the processes it starts inherit it; the thread's
    own policy is put back afterwards. Nothing changes where there is no SCHED_BATCH (macOS), where the thread
    runs under another policy than the default (real time, say: left alone), or where the kernel refuses."""
    if not hasattr(os, "SCHED_BATCH") or os.sched_getscheduler(0) != os.SCHED_OTHER:
        yield
        return
    param = os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except OSError as error:  # a seccomp profile may forbid it: run as before
        log.warning(
            "could not start the local Ray cluster under SCHED_BATCH (%s); it runs under the default scheduling policy",
            error,
        )
        yield
        return
    try:
        yield
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, param)


def policy_of(pid: int = 0) -> str:
    """The scheduling policy, by name (SCHED_OTHER, SCHED_BATCH, ...), of a process's main thread, or with 0 of
    the calling thread (a policy is a thread's own; a new thread or process takes its creator's)."""
    policy = os.sched_getscheduler(pid)
    return _NAMES.get(policy, str(policy))
