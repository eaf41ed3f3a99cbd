"""How long a shard's work took, summed over its life: its batches, and within them the durable mark store's
reads and writes. Whole microseconds, so the rows of several shards sum; the difference of two readings over a
window gives that window's mean (bench/serve_rollouts.py reads them to say where a request's time goes)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields

__all__ = ["PHASES", "ShardTimings", "TIMING_FIELDS"]


@dataclass
class ShardTimings:
    batch_us: int = 0  # over every batch (`ShardService.batches` counts them)
    mark_reads: int = 0
    mark_read_us: int = 0
    mark_writes: int = 0
    mark_write_us: int = 0

    @contextmanager
    def timed(self, spent: str, count: str | None = None) -> Iterator[None]:
        """Add the time the block takes to the field `spent`, and 1 to `count`, even if the block raises."""
        began = time.perf_counter_ns()
        try:
            yield
        finally:
            setattr(self, spent, getattr(self, spent) + (time.perf_counter_ns() - began) // 1000)
            if count is not None:
                setattr(self, count, getattr(self, count) + 1)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


TIMING_FIELDS = tuple(field.name for field in fields(ShardTimings))
# (phase, its count, its microseconds); a shard's stats count its batches as `batches`, beside the timings
PHASES = (
    ("batch", "batches", "batch_us"),
    ("mark_read", "mark_reads", "mark_read_us"),
    ("mark_write", "mark_writes", "mark_write_us"),
)
