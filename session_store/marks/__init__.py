"""Where fences, expired marks and episode seeds are kept durably, so they outlive a shard's process and the
cluster's head (contract §C.4, §C.9).

A shard writes every changed mark here before it answers the requests that changed it: each batch's changes go
together (group commit). Until it has settled (loaded every mark of the partitions it owns,
`ShardService.settle`) it reads the mark of an ID it does not know before it decides a seed, a close or a verify
for it; after that, its memory is complete and it reads nothing. A store that cannot list a shard's marks cheaply
(`lists_marks` False: Redis) is read per ID for the shard's whole life instead.

The stores:
- `MemoryMarkStore`: this process; the Ray-free tests and the single-process baseline.
- `gcs_store.GcsMarkStore`: Ray's GCS key-value store, the embedded default (no external dependency; a few thousand
  writes/s, and gone with the head unless the GCS itself is fault tolerant).
- `redis_store.RedisMarkStore`: Redis, for clusters (`mark_store_url`): native expiry, group commits in one
  command, reads per ID, and it outlives the Ray cluster.
`open_mark_store` picks one from the settings.
"""

from __future__ import annotations

import json
import logging
from typing import Protocol

from ..core import Mark
from ..routing import partition

log = logging.getLogger(__name__)


class MarkStore(Protocol):
    lists_marks: bool  # whether `scan` lists a shard's marks, so that the shard can settle

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        """The durable marks of these IDs (IDs with none are absent). Raises if the store cannot be read."""

    async def write(self, changes: dict[str, Mark | None]) -> set[str]:
        """Apply the changes (None deletes), as one group; returns the IDs whose change could not be written."""

    async def scan(self, partitions: range) -> dict[str, Mark]:
        """Every live mark of IDs in these partitions (a shard that settles loads its own once); only where
        `lists_marks`."""

    async def sweep(self, now: float) -> int:
        """Delete marks that lapsed before `now`, if the store does not expire them itself."""

    async def purge(self) -> int:
        """Delete every record of the application (marks and its cookie secret); returns how many."""


def encode(mark: Mark) -> bytes:
    return json.dumps([mark.fence_until, mark.cause, mark.episode_id, mark.expired_until, mark.open_in],
                      separators=(",", ":")).encode()


def decode(raw: bytes) -> Mark | None:
    try:
        fence_until, cause, episode_id, expired_until, open_in = json.loads(raw)
        return Mark(fence_until, cause, episode_id, expired_until, open_in)
    except (ValueError, TypeError):
        log.warning("ignoring an unreadable durable mark: %r", raw[:200])
        return None


class MemoryMarkStore:
    """Marks in this process. Shared by two lives of a shard in a test, it plays the durable store."""

    lists_marks = True

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

    async def scan(self, partitions: range) -> dict[str, Mark]:
        if self.failing:
            raise ConnectionError("mark store unreachable")
        return await self.read([sid for sid in self.marks if partition(sid) in partitions])

    async def sweep(self, now: float) -> int:
        if self.failing:
            raise ConnectionError("mark store unreachable")
        lapsed = [sid for sid, raw in self.marks.items() if (m := decode(raw)) is None or m.drop_at <= now]
        for sid in lapsed:
            del self.marks[sid]
        return len(lapsed)

    async def purge(self) -> int:
        purged = len(self.marks)
        self.marks.clear()
        return purged


def open_mark_store(url: str | None, namespace: str) -> MarkStore:
    """The store the settings name: Redis for a `redis://` or `rediss://` URL, else the cluster's GCS."""
    if url:
        from .redis_store import RedisMarkStore

        return RedisMarkStore(url, namespace)
    from .gcs_store import GcsMarkStore

    return GcsMarkStore(namespace.encode())


__all__ = ["MarkStore", "MemoryMarkStore", "decode", "encode", "open_mark_store"]
