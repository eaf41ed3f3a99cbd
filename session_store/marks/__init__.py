"""Where fences and expired marks are kept durably, so they outlive a shard's process (contract §C.4, §C.9).

A shard writes every changed mark here before it answers the requests that changed it. Until it has settled
(loaded every mark of its IDs, `ShardService.settle`) it reads the mark of an ID it does not know before it
decides a seed, a close or a verify for it; after that, its memory is complete and it reads nothing. `MemoryMarkStore` is the Ray-free
store of the unit tests and the single-process baseline; the cluster's store is Ray's GCS key-value store
(`ray_actors.GcsMarkStore`), measured at ~0.1-0.35 ms a write from a shard on this machine.
"""

from __future__ import annotations

import json
import logging
from typing import Callable, Protocol

from .core import Mark

log = logging.getLogger(__name__)


class MarkStore(Protocol):
    async def read(self, sids: list[str]) -> dict[str, Mark]:
        """The durable marks of these IDs (IDs with none are absent). Raises if the store cannot be read."""

    async def write(self, changes: dict[str, Mark | None]) -> set[str]:
        """Apply the changes (None deletes); returns the IDs whose change could not be written."""

    async def scan(self, wanted: Callable[[str], bool] | None = None) -> dict[str, Mark]:
        """Every mark of the application whose ID is `wanted` (a shard that settles loads its own once)."""

    async def sweep(self, now: float) -> int:
        """Delete marks that lapsed before `now` (the orphans of a shard that died holding them)."""


def encode(mark: Mark) -> bytes:
    return json.dumps({"fence_until": mark.fence_until, "cause": mark.cause, "episode_id": mark.episode_id,
                       "expired_until": mark.expired_until}).encode()


def decode(raw: bytes) -> Mark | None:
    try:
        fields = json.loads(raw)
        return Mark(fields["fence_until"], fields["cause"], fields["episode_id"], fields["expired_until"])
    except (ValueError, KeyError, TypeError):
        log.warning("ignoring an unreadable durable mark: %r", raw[:200])
        return None


class MemoryMarkStore:
    """Marks in this process. Shared by two lives of a shard in a test, it plays the durable store."""

    def __init__(self) -> None:
        self.marks: dict[str, bytes] = {}
        self.failing = False  # tests: every read and write fails, as when the store is unreachable

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        if self.failing:
            raise ConnectionError("mark store unreachable")
        found = {sid: decode(self.marks[sid]) for sid in sids if sid in self.marks}
        return {sid: mark for sid, mark in found.items() if mark is not None}

    async def write(self, changes: dict[str, Mark | None]) -> set[str]:
        if self.failing:
            return set(changes)
        for sid, mark in changes.items():
            if mark is None:
                self.marks.pop(sid, None)
            else:
                self.marks[sid] = encode(mark)
        return set()

    async def scan(self, wanted: Callable[[str], bool] | None = None) -> dict[str, Mark]:
        if self.failing:
            raise ConnectionError("mark store unreachable")
        return await self.read([sid for sid in self.marks if wanted is None or wanted(sid)])

    async def sweep(self, now: float) -> int:
        if self.failing:
            raise ConnectionError("mark store unreachable")
        lapsed = [sid for sid, raw in self.marks.items() if (m := decode(raw)) is None or m.drop_at <= now]
        for sid in lapsed:
            del self.marks[sid]
        return len(lapsed)
