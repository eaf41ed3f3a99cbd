"""Marks in this process: the Ray-free tests' store and the single-process baseline's."""

from __future__ import annotations

import asyncio

from ..core import HEAD, Mark
from ..routing import partition
from .base import Beginning, Owners, StoreForgot, Written, marker, refused
from .records import decode, joined, parts_of

__all__ = ["MemoryMarkStore"]


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
        read = {sid: joined(self.marks[sid], self.parts.get(sid, {})) for sid in sids if sid in self.marks}
        found = {sid: mark for sid, mark in read.items() if mark is not None}
        if self.marker is None:
            raise StoreForgot(found)
        return found

    async def write(
        self,
        changes: dict[str, Mark | None],
        owners: dict[str, Owners] | None = None,
        parts: dict[str, frozenset[str] | None] | None = None,
    ) -> Written:
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
                    assert value is not None  # parts_of always writes a head
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
