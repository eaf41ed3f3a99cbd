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

One owner at a time. A write may name, per ID, the owners its record may have for the write to apply (`Owners`:
a life's incarnation, or None for a record held open by no life or absent); the store checks and writes in one
step, and reports the IDs whose record another life holds (`Written.superseded`). The shard's core says why
(`core.py`, "One owner at a time").

A store that forgets. Redis can lose data while the app runs: a restart without persistence, an eviction, a
failover to an empty replica, a flush. An absent mark then proves nothing, and a closed ID would be seeded again.
So a store has a marker, a record with no expiry, written when a deployment begins the store (`begin`) and read
with every read of marks: a read that finds it gone raises `StoreForgot` (with the marks it did find), and the
shard stops deciding from absence until an operator acknowledges the loss (`acknowledge_loss`), which begins the
store again. `durability_problem` says why a store could forget before it does (Redis: an evicting
maxmemory-policy, no append-only file).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..core import HEAD, Mark
from ..routing import partition
from .records import decode, encode, joined, parts_of

log = logging.getLogger(__name__)


Beginning = Literal["new", "continued", "forgot"]  # what `begin` found: nothing, its marker, records without it


class StoreForgot(Exception):
    """The store's marker is gone: it lost data, so an ID without a mark may have had one. `found` holds the marks
    the read did find (those are still true)."""

    def __init__(self, found: dict[str, Mark] | None = None):
        super().__init__("the mark store's marker is gone: it lost data")
        self.found = found or {}


@dataclass(frozen=True)
class StoreHealth:
    """What the reaper found of the store on its tick, handed to every shard: a gone marker, or why it may forget."""

    forgot: bool = False
    durability_problem: str | None = None


Owners = tuple[str | None, ...]  # the owners a record may have for a write over it to apply


@dataclass(frozen=True)
class Written:
    """What a write left unwritten: `failed` may pass on a retry; `superseded` never will (another life holds the
    record). `forgot`: the store's marker was gone (then an absent record proves nothing: a write over it is
    taken, the writer's memory being the proof)."""

    failed: set[str] = field(default_factory=set)
    superseded: set[str] = field(default_factory=set)
    forgot: bool = False


def _owner(raw: bytes | None) -> str | None:
    mark = decode(raw) if raw is not None else None
    return mark.open_in if mark is not None else None


def refused(current: dict[str, bytes | None], owners: dict[str, Owners], forgot: bool = False) -> set[str]:
    """The IDs whose current record (raw, None when absent) has an owner their write does not accept; in a store
    that forgot, an absent record refuses nothing."""
    return {sid for sid, accepted in owners.items()
            if _owner(current.get(sid)) not in accepted and not (forgot and current.get(sid) is None)}


class MarkStore(Protocol):
    lists_marks: bool  # whether `scan` lists a shard's marks, so that the shard can settle

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        """The durable marks of these IDs (IDs with none are absent). Raises StoreForgot when the marker is gone,
        and any other error if the store cannot be read."""

    async def write(self, changes: dict[str, Mark | None], owners: dict[str, Owners] | None = None,
                    parts: dict[str, frozenset[str] | None] | None = None) -> Written:
        """Apply the changes (None deletes), as one group; a change with `owners` only over a record one of them
        holds (checked and written in one step); a change with `parts` (records.py) writes only those parts of
        its record, where one without writes it whole."""

    async def scan(self, partitions: range) -> dict[str, Mark]:
        """Every live mark of IDs in these partitions (a shard that settles loads its own once); only where
        `lists_marks`."""

    async def sweep(self, now: float) -> int:
        """Delete marks that lapsed before `now`, if the store does not expire them itself."""

    async def purge(self) -> int:
        """Delete every record of the application (marks, its cookie secret, the marker); returns how many."""

    def begin(self) -> Beginning:
        """At deploy: write the marker if the store holds no record of the app (a new store); leave a store that
        holds records without a marker as it is (it forgot). Synchronous: the application builder's."""

    def acknowledge_loss(self) -> None:
        """An operator's word that the store's loss is accepted: the marker is written again."""

    async def marker_present(self) -> bool:
        """Whether the marker is there (the reaper asks every tick)."""

    def durability_problem(self) -> str | None:
        """Why this store could forget marks it was given (evictions, no persistence), or None."""


def marker(note: str) -> bytes:
    """The marker's value: when the store was begun, and how (by a deployment, or an operator's acknowledgement)."""
    return json.dumps({"begun": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "by": note}).encode()


class MemoryMarkStore:
    """Marks in this process, begun when made. Shared by two lives of a shard in a test, it plays the durable
    store; `forget` plays a Redis restarted without persistence."""

    lists_marks = True

    def __init__(self) -> None:
        self.marks: dict[str, bytes] = {}  # each record's head
        self.parts: dict[str, dict[str, bytes]] = {}  # each record's other parts
        self.marker: bytes | None = marker("deployment")
        self.failing = False  # tests: every read and write fails, as when the store is unreachable
        # What writes have carried (tests and benchmarks: a change writes what it changed, a write is bounded).
        self.bytes_written = self.changes_written = self.largest_write = 0

    def forget(self) -> None:
        self.marks.clear()
        self.parts.clear()
        self.marker = None

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        if self.failing:
            raise ConnectionError("mark store unreachable")
        found = {sid: joined(self.marks[sid], self.parts.get(sid, {})) for sid in sids if sid in self.marks}
        found = {sid: mark for sid, mark in found.items() if mark is not None}
        if self.marker is None:
            raise StoreForgot(found)
        return found

    async def write(self, changes: dict[str, Mark | None], owners: dict[str, Owners] | None = None,
                    parts: dict[str, frozenset[str] | None] | None = None) -> Written:
        if self.failing:
            return Written(failed=set(changes))
        forgot = self.marker is None
        superseded = refused({sid: self.marks.get(sid) for sid in owners or {}}, owners or {}, forgot)
        self.changes_written += len(changes)
        self.largest_write = max(self.largest_write, len(changes))
        for sid, mark in changes.items():
            if sid in superseded:
                continue
            if mark is None:
                self.marks.pop(sid, None)
                self.parts.pop(sid, None)
                continue
            changed = (parts or {}).get(sid)
            if changed is not None and sid not in self.marks:  # parts of a record that is not there
                if not forgot:
                    superseded.add(sid)
                    continue
                changed = None  # the store forgot it: the writer's memory writes it whole
            written = parts_of(mark, changed)
            if changed is None:  # the whole record: the parts it no longer has go
                self.parts.pop(sid, None)
            kept = self.parts.setdefault(sid, {})
            for name, value in written.items():
                if name == HEAD:
                    self.marks[sid] = value
                elif value is None:
                    kept.pop(name, None)
                else:
                    kept[name] = value
                self.bytes_written += len(value or b"")
        return Written(superseded=superseded, forgot=forgot)

    async def scan(self, partitions: range) -> dict[str, Mark]:
        """In batches, the loop let through between, as the GCS store's listing is."""
        if self.failing:
            raise ConnectionError("mark store unreachable")
        mine = [sid for sid in self.marks if partition(sid) in partitions]
        found: dict[str, Mark] = {}
        for start in range(0, len(mine), 500):
            found.update(await self.read(mine[start : start + 500]))
            await asyncio.sleep(0)
        return found

    async def sweep(self, now: float) -> int:
        if self.failing:
            raise ConnectionError("mark store unreachable")
        lapsed = [sid for sid, raw in self.marks.items() if (m := decode(raw)) is None or m.drop_at <= now]
        for sid in lapsed:
            del self.marks[sid]
            self.parts.pop(sid, None)
        return len(lapsed)

    async def purge(self) -> int:
        purged = len(self.marks) + (self.marker is not None)
        self.forget()
        return purged

    def begin(self) -> Beginning:
        if self.marker is not None:
            return "continued"
        if self.marks:
            return "forgot"
        self.marker = marker("deployment")
        return "new"

    def acknowledge_loss(self) -> None:
        self.marker = marker("acknowledged")

    async def marker_present(self) -> bool:
        if self.failing:
            raise ConnectionError("mark store unreachable")
        return self.marker is not None

    def durability_problem(self) -> str | None:
        return None  # it lives as long as the process that reads it


def app_namespace(app_name: str) -> str:
    """The namespace of an application's actors and durable records."""
    return "finsec-serve." + re.sub(r"[^A-Za-z0-9_.-]", "_", app_name)


def open_mark_store(url: str | None, namespace: str) -> MarkStore:
    """The store the settings name: Redis for a `redis://` or `rediss://` URL, else the cluster's GCS."""
    if url:
        from .redis_store import RedisMarkStore

        return RedisMarkStore(url, namespace)
    from .gcs_store import GcsMarkStore

    return GcsMarkStore(namespace.encode())


__all__ = ["Beginning", "MarkStore", "MemoryMarkStore", "Owners", "StoreForgot", "StoreHealth", "Written",
           "app_namespace", "decode", "encode", "marker", "open_mark_store", "refused"]
