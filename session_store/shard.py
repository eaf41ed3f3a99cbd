"""One shard's service: the pure core run a batch at a time, with its marks kept durably. Ray-free; the
shard actor (`ray_actors.SessionShardActor`) is this class with a durable mark store (`marks/`).

A batch is the operations that concurrent requests of one ingress replica sent to this shard while its previous
call was in flight (`batching.py`). The core runs them in order, one after the other, with no await in between,
so the operations of one ID are serialized as contract §C.1 asks of its per-ID lock, and a batch gives each
operation exactly the result it would have had alone. Around the run:
- before it, the durable marks of IDs the core does not know are read, so a restarted shard still refuses a
  late seed of an ID it closed in a previous life, and reports lost a session a previous life held open. Once
  the shard has *settled* (`settle`: it loaded every mark of the partitions it owns, at a time no other
  deployment of the app can still be writing any), its memory is complete and nothing is read on the request
  path any more;
- after it, every mark the run changed is written, and only then are the results returned. An operation whose
  mark could not be written answers "unavailable" (503), never a 200 the store could forget;
- when the store forgot (its marker is gone, `marks/`) or may forget (the reaper's tick says why), an ID the shard
  does not hold and finds no mark of is *unproven*: nothing is decided from the mark's absence. A seed or close of
  it is 503 until an operator acknowledges the loss; a verify of it is masked session_lost, never scored.
Batches of several replicas (and the reaper's tick) run concurrently on the actor's loop, so a mark change stays
*pending* until a write of it succeeds: an operation on an ID with a pending change (its own, an earlier batch's
still in flight, or one whose write failed) answers only once that change is durable. Writes go one at a time,
each taking the pending changes of the IDs it was asked for and others up to `_WRITE_CHUNK`, so an ID's last write is
its newest mark, and no write (a settle's restores, say) holds the lock for long.

One owner at a time (`core.py`): each write expects the owner the record had before its changes, or this life.
When another life has taken the record over, the store skips the write; the shard forgets the ID and runs the
operations that touched it once more, from the record as it now is (a durable session is restored here, a
closed one is fenced). An operation that meets another life again answers as on a lost session: never scored.
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import logging
from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from .clock import SessionClock
from .core import EvictionReport, Limits, Masked, SessionCore, merge_parts
from .errors import DocumentRefused, SessionConflict, SessionLost, StoreFull, StoreUnavailable
from .marks import MarkStore, MemoryMarkStore, Owners, StoreForgot, StoreHealth, Written
from .operations import OPERATIONS, Operation
from .routing import owned_partitions
from .timings import ShardTimings

__all__ = ["FORGOT", "Op", "Outcome", "ShardConfig", "ShardService", "TickReport"]

log = logging.getLogger(__name__)

Op = tuple[str, tuple]  # a core method and its arguments; the session ID always comes first
Outcome = tuple[bool, Any]  # (True, result) or (False, the session error to raise at the caller)

_SESSION_ERRORS = (SessionConflict, SessionLost, DocumentRefused, StoreFull)
FORGOT = (
    "The mark store lost records (its marker is gone: a restart without persistence, an eviction, a failover "
    "to an empty replica or a flush), so IDs it fenced can no longer be proven fenced. No new session is seeded "
    "until an operator acknowledges the loss (`finsec store acknowledge-loss`)."
)
_RUN = 5_000  # marks sorted at once while settling
_WRITE_CHUNK = 1_000  # changes a write takes beyond those it was asked for
_LEARN = 250  # marks learned (sessions restored) between yields to the loop while settling
_ABSENT = object()
_SUPERSEDED: Outcome = (False, None)  # a marker, compared by identity


def _taken_over(op: Op) -> Outcome:
    """The answer of an operation that met another life's record twice: a lost session's, never scored."""
    name, args = op
    why = "another life of its shard holds it now (a redeploy, or two servers over one mark store)"
    operation = OPERATIONS.get(name)
    if operation is not None and operation.unproven == "mask":
        return True, Masked("session_lost", f"Session {args[0]!r} cannot be scored here: {why}.")
    if operation is not None and operation.unproven == "refuse":
        return False, StoreUnavailable(f"Session {args[0]!r} is held by {why}; retry the request.", "superseded")
    return False, SessionLost(args[0], why)


def _drop_at(item: tuple[str, Any]) -> float:
    return item[1].drop_at


@dataclass(frozen=True)
class ShardConfig:
    session_ttl_seconds: float
    fence_ttl_seconds: float | None = None
    limits: Limits = Limits()
    check_durability: bool = True  # a new life asks the store whether it may forget before it first reads it
    durable_sessions: bool = False  # every open session's state kept with the marks, restored by a later life


@dataclass(frozen=True)
class TickReport:
    """What one reaper tick did on a shard and what the shard holds afterwards."""

    evicted: EvictionReport
    counts: dict[str, int]
    referenced_digests: set[str]
    counters: dict[str, int]
    incarnation: str
    timings: dict[str, int] = field(default_factory=dict)  # batches and ShardTimings, summed over this life
    clock_step: float = 0.0  # how far this node's wall clock is from the shard's clock (a step being absorbed)


class ShardService:
    def __init__(
        self, config: ShardConfig, marks: MarkStore | None = None, clock=None, place: tuple[int, int] = (0, 1)
    ):
        self._clock = clock or SessionClock()
        self._core = SessionCore(
            session_ttl_seconds=config.session_ttl_seconds,
            fence_ttl_seconds=config.fence_ttl_seconds,
            limits=config.limits,
            clock=self._clock,
            durable_sessions=config.durable_sessions,
        )
        self._marks = marks if marks is not None else MemoryMarkStore()
        self._pending: dict[str, Any] = {}  # mark changes not yet known durable (None deletes), by ID
        self._expected: dict[str, str | None] = {}  # per pending ID: the owner its stored record has
        self._parts: dict[str, frozenset[str] | None] = {}  # per pending ID: the parts to write (None: all)
        self._superseded: dict[str, int] = {}  # ID -> when (in `_forgets`) another life's record made it forgotten
        self._forgets = 0
        self._running: Counter[int] = Counter()  # batches in flight, by the `_forgets` they started at
        self._write_lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._batches = self._operations = 0  # how well the ingress replicas' calls coalesce
        self._timings = ShardTimings()
        self._place = place  # (this shard's index, the shard count): which IDs are this shard's
        self._complete = False  # whether memory holds every durable mark of this shard's IDs
        self._health = StoreHealth()  # the store's marker as last seen (by a read or the reaper), and its config
        self._check_durability = config.check_durability  # until done: a life may start after the config changed

    @property
    def incarnation(self) -> str:
        return self._core.incarnation

    async def run(self, ops: list[Op]) -> list[Outcome]:
        self._batches += 1
        self._operations += len(ops)
        with self._timings.timed("batch_us"):
            outcomes = await self._run(ops)
            again = [i for i, outcome in enumerate(outcomes) if outcome is _SUPERSEDED]
            if again:  # once more, from the records as they are now
                for i, outcome in zip(again, await self._run([ops[i] for i in again]), strict=False):
                    outcomes[i] = _taken_over(ops[i]) if outcome is _SUPERSEDED else outcome
            return outcomes

    async def _run(self, ops: list[Op]) -> list[Outcome]:
        """The operations' outcomes; _SUPERSEDED for one whose ID another life took over while it ran."""
        began = self._forgets
        self._running[began] += 1
        try:
            outcomes = await self._run_once(ops)
            return [
                _SUPERSEDED if args and self._superseded.get(args[0], -1) >= began else outcome
                for (_, args), outcome in zip(ops, outcomes, strict=False)
            ]
        finally:
            self._running[began] -= 1
            if not self._running[began]:
                del self._running[began]
                oldest = min(self._running, default=self._forgets)
                self._superseded = {sid: n for sid, n in self._superseded.items() if n >= oldest}

    async def _run_once(self, ops: list[Op]) -> list[Outcome]:
        self._core.evict_expired()  # costs what it evicts; keeps expired marks durable between reaper ticks
        self._take_changes()
        unreadable, unproven, full = await self._learn_marks(ops)
        outcomes: list[Outcome] = []
        depends: list[set[str]] = []  # per operation: the IDs whose durable write its answer relies on
        for name, args in ops:
            sid = args[0] if args else None
            op = OPERATIONS.get(name)
            if op is None:
                outcomes.append((False, StoreUnavailable(f"unknown session-store operation {name!r}", "internal")))
            elif op.needs_marks and sid in unreadable:
                outcomes.append(
                    (
                        False,
                        StoreUnavailable(
                            "The session store could not read its fence records; retry the request shortly.",
                            "marks_unreadable",
                        ),
                    )
                )
            elif op.needs_marks and sid in full:
                outcomes.append((False, full[sid]))
            elif sid in unproven and op.unproven:
                outcomes.append(self._unproven(op))
            else:
                outcomes.append(self._apply(op, args))
            changed = self._take_changes()
            depends.append(set(changed) | ({sid} if sid in self._pending else set()))
        failed = await self._make_durable(set().union(*depends))
        for i, ids in enumerate(depends):
            if ids & failed:
                outcomes[i] = (
                    False,
                    StoreUnavailable(
                        "The session store could not record this durably; retry the request shortly.", "not_durable"
                    ),
                )
        return outcomes

    def _take_changes(self) -> set[str]:
        """Move the core's changes to the pending ones; returns the IDs changed."""
        changes = self._core.take_changes()
        for sid, owner in changes.expected.items():
            self._expected.setdefault(sid, owner)  # pending already: the stored record is still the older one's
        for sid, parts in changes.parts.items():
            self._parts[sid] = merge_parts(self._parts[sid], parts) if sid in self._pending else parts
        self._pending.update(changes.records)
        return set(changes.records)

    def _apply(self, op: Operation, args: tuple) -> Outcome:
        try:
            return True, op.run(self._core, *args)
        except _SESSION_ERRORS as error:
            return False, error
        except Exception as error:  # a bug must not take the batch, or the request, down with a 500
            log.exception("session-store operation %s failed", op.name)
            return False, StoreUnavailable(
                f"The session store failed on {op.name} ({type(error).__name__}).", "internal"
            )

    def _unproven(self, op: Operation) -> Outcome:
        problem = self.store_problem()
        # _learn_marks finds IDs unproven only with a problem, and nothing awaits between it and here
        assert problem is not None
        if op.unproven == "mask":
            self._core.counters["verifies.masked.unproven"] += 1
            return True, Masked("session_lost", "The session cannot be proven intact: " + problem)
        return False, StoreUnavailable(problem, "store_forgot" if self._health.forgot else "store_unsafe")

    def store_problem(self) -> str | None:
        """Why this shard decides nothing from the absence of a mark, or None."""
        if self._health.forgot:
            return FORGOT
        if self._health.durability_problem:
            return (
                f"The mark store may forget fences ({self._health.durability_problem}), so no new session is "
                "seeded until it is configured not to."
            )
        return None

    def _saw_marker(self, present: bool) -> None:
        if present == self._health.forgot:
            (log.info if present else log.error)("the mark store's marker is %s", "back" if present else "gone")
            self._health = StoreHealth(not present, self._health.durability_problem)

    async def _learn_marks(self, ops: list[Op]) -> tuple[set[str], set[str], dict[str, StoreFull]]:
        """Read the marks of IDs the core does not know; returns the IDs whose read failed, those whose absent
        mark proves nothing (the store forgot, or may forget), and those whose session the shard has no room to
        restore (503 until it has)."""
        if self._complete:
            return set(), set(), {}
        wanted = sorted(
            {
                args[0]
                for name, args in ops
                if (op := OPERATIONS.get(name)) and op.needs_marks and self._core.wants_mark(args[0])
            }
        )
        if not wanted:
            return set(), set(), {}
        try:
            if self._check_durability:
                problem = await asyncio.to_thread(self._marks.durability_problem)
                self._health, self._check_durability = StoreHealth(self._health.forgot, problem), False
            with self._timings.timed("mark_read_us", "mark_reads"):
                found = await self._marks.read(wanted)
            self._saw_marker(True)
        except StoreForgot as forgot:
            found = forgot.found
            self._saw_marker(False)
        except Exception:
            log.warning("could not read %d durable marks", len(wanted), exc_info=True)
            return set(wanted), set(), {}
        full = {}
        for sid, mark in found.items():
            try:
                self._core.learn_mark(sid, mark)
            except StoreFull as error:
                full[sid] = error
        unproven = set(wanted) - found.keys() if self.store_problem() else set()
        return set(), unproven, full

    async def _make_durable(self, ids: set[str]) -> set[str]:
        """Write the pending mark changes if any of `ids` has one; returns those of `ids` still not durable."""
        if not ids & self._pending.keys():
            return set()
        async with self._lock():
            wanted = ids & self._pending.keys()  # the previous holder may have written them
            if not wanted:
                return set()
            writes = {sid: self._pending[sid] for sid in wanted}
            for sid in islice(self._pending.keys() - wanted, max(0, _WRITE_CHUNK - len(wanted))):
                writes[sid] = self._pending[sid]
            owners: dict[str, Owners] = {sid: (self._expected.get(sid), self.incarnation) for sid in writes}
            try:
                with self._timings.timed("mark_write_us", "mark_writes"):
                    written = await self._marks.write(writes, owners, {sid: self._parts.get(sid) for sid in writes})
            except Exception:
                log.warning("could not write %d durable marks", len(writes), exc_info=True)
                written = Written(failed=set(writes))
            if written.forgot:
                self._saw_marker(False)
            for sid in writes.keys() - written.failed - written.superseded:
                if self._pending.get(sid, _ABSENT) is writes[sid]:  # not changed again meanwhile
                    del self._pending[sid]
                    self._expected.pop(sid, None)
                    self._parts.pop(sid, None)
                else:
                    self._expected[sid] = writes[sid].open_in if writes[sid] is not None else None
            for sid in written.superseded:
                self._forget(sid)
            return wanted & written.failed

    def _forget(self, sid: str) -> None:
        """Another life holds the ID's record: drop it here, and mark the operations in flight on it."""
        for pending in (self._pending, self._expected, self._parts):
            pending.pop(sid, None)
        self._core.forget(sid)
        self._superseded[sid] = self._forgets
        self._forgets += 1

    def _lock(self) -> asyncio.Lock:
        """The mark-write lock of the running loop (an actor has one loop; tests run several in turn)."""
        loop = asyncio.get_running_loop()
        if self._write_lock is None or self._write_lock[0] is not loop:
            self._write_lock = (loop, asyncio.Lock())
        return self._write_lock[1]

    async def tick(self, health: StoreHealth | None = None) -> TickReport:
        """One reaper tick: evict what outlived its TTL, drop lapsed marks, report what is held. `health` is
        what the reaper found of the store."""
        if health is not None:
            self._saw_marker(not health.forgot)
            self._health = StoreHealth(self._health.forgot, health.durability_problem)
        evicted = self._core.evict_expired()
        self._take_changes()
        for _ in range(len(self._pending) // _WRITE_CHUNK + 1):  # also retries what failed before
            chunk = set(islice(self._pending, _WRITE_CHUNK))
            if not chunk or await self._make_durable(chunk):
                break  # nothing left, or the store fails: the next tick tries again
            await asyncio.sleep(0)  # requests' batches go between the chunks
        return TickReport(
            evicted,
            self._core.counts(),
            self._core.referenced_digests(),
            dict(self._core.counters),
            self._core.incarnation,
            {"batches": self._batches, **self._timings.as_dict()},
            self._clock_step(),
        )

    def _clock_step(self) -> float:
        return round(self._clock.step(), 3) if isinstance(self._clock, SessionClock) else 0.0

    async def settle(self) -> int:
        """Load every durable mark of this shard's IDs; from then on memory is complete. Call it only when no
        other deployment of the app can still write marks (the reaper does, once the app runs only this one).
        Returns how many marks were loaded (0 when already settled). Over a store that does not list its marks,
        nothing: the shard keeps reading the marks of IDs it does not know, which is always right."""
        if self._complete or not self._marks.lists_marks:
            return 0
        # Marks hold no reference cycles, so the collector has nothing to find in them, but a full collection
        # walks every object: with many marks loaded, one blocked the loop for long (bench/state_scale.py).
        # Off while loading; the loaded marks are then frozen out of every later collection.
        gc.disable()
        try:
            return await self._load_marks()
        finally:
            gc.freeze()
            gc.enable()

    async def _load_marks(self) -> int:
        mine = await self._marks.scan(owned_partitions(*self._place))
        # The core drops marks in drop order. One sort of a large share of marks holds the loop too long (and
        # even listing them at once does; as a settle at 4M marks measured), so: sorted runs of a
        # few thousand, merged lazily, the loop let through between.
        items, runs = iter(mine.items()), []
        while run := sorted(islice(items, _RUN), key=_drop_at):
            runs.append(run)
            await asyncio.sleep(0)
        for n, (sid, mark) in enumerate(heapq.merge(*runs, key=_drop_at), 1):
            try:
                self._core.learn_mark(sid, mark)
            except StoreFull:  # no room to restore it: lost, never scored (nothing reads it again once settled)
                self._core.learn_mark(sid, replace(mark, session=None))
            if n % _LEARN == 0:
                await asyncio.sleep(0)
        self._complete = True
        return len(mine)

    async def stalled(self, idle_seconds: float, limit: int) -> dict[str, Any]:
        return self._core.stalled(idle_seconds, limit)

    async def stats(self) -> dict[str, Any]:
        return {
            **self._core.stats(),
            "batches": self._batches,
            "operations": self._operations,
            **self._timings.as_dict(),
            "settled": int(self._complete),
            "reads_marks_per_id": int(not self._marks.lists_marks),
            "store_problem": self.store_problem(),
            "clock_step": self._clock_step(),
            "incarnation": self._core.incarnation,
            "counters": dict(self._core.counters),
        }
