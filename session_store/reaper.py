"""The reaper's tick: enforce the session TTL on every shard and sweep the documents nobody names (contract §C.9).

Sessions past their TTL are also refused on access by the core itself; the reaper is what releases the memory of
sessions nobody touches again, drops fences and expired marks once they lapse (Decision 10), and tells the
document store which texts shards still reference. Pure: the actor in `ray_actors.py` runs it on a timer, with
shard and document-store clients that are actor handles, and publishes what it reports as Ray metrics.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .clock import SLEW, SessionClock
from .core import EvictionReport
from .documents import SweepReport
from .marks import MarkStore, StoreHealth
from .shard import TickReport

__all__ = ["CLOCK_STEP_ALARM_SECONDS", "DocumentSweeps", "Reaper", "ReaperStatus", "run_every", "ShardTicks"]

log = logging.getLogger(__name__)

CLOCK_STEP_ALARM_SECONDS = 1.0  # NTP slews at most 0.5 ms a second: a gap past this is a step


class ShardTicks(Protocol):
    async def tick(self, health: StoreHealth | None = None) -> TickReport: ...

    async def stalled(self, idle_seconds: float, limit: int) -> dict[str, Any]: ...

    async def settle(self) -> int: ...


class DocumentSweeps(Protocol):
    async def sweep(self, referenced: set[str]) -> SweepReport: ...


@dataclass
class ReaperStatus:
    ticks: int = 0
    evicted: EvictionReport = field(default_factory=EvictionReport)
    held: dict[str, int] = field(default_factory=dict)  # sessions, marks, digests over the shards that answered
    counters: Counter[str] = field(default_factory=Counter)  # session counters summed over shard lives
    documents: SweepReport | None = None
    shards_unreachable: int = 0
    durable_marks_swept: int = 0
    store: StoreHealth | None = None  # the mark store's marker and configuration as last checked
    clock_step: float = 0.0  # the largest gap between a node's wall clock and its session clock, in seconds
    stalled: int | None = None  # open sessions idle for stalled_after_seconds, over the shards that answered


class Reaper:
    def __init__(
        self,
        shards: Sequence[ShardTicks],
        documents: DocumentSweeps | None = None,
        *,
        marks: MarkStore | None = None,
        sweep_marks_every: int = 120,
        clock=None,
        check_durability: bool = True,
        stalled_after_seconds: float | None = None,
    ):
        self._shards = shards
        self._stalled_after = stalled_after_seconds
        self._documents = documents
        self._marks, self._clock = marks, clock or SessionClock()
        self._check_durability = check_durability
        self._sweep_marks_every = sweep_marks_every
        self._last: dict[int, TickReport] = {}  # per shard: its report of the previous tick
        self.status = ReaperStatus()

    async def settle(self) -> None:
        """Tell every shard it may load its marks and trust its memory: no other deployment is writing any."""
        await asyncio.gather(*(s.settle() for s in self._shards), return_exceptions=True)

    async def tick(self) -> tuple[EvictionReport, Counter[str], Counter[str]]:
        """One pass; returns what it evicted, and the increments since the previous tick of the shards' counters
        and of their timings (batches, mark reads and writes, and the microseconds each took)."""
        health = await self._store_health()
        reports = await asyncio.gather(*(s.tick(health) for s in self._shards), return_exceptions=True)
        answered = {k: r for k, r in enumerate(reports) if isinstance(r, TickReport)}
        for k, r in enumerate(reports):
            if not isinstance(r, TickReport):
                log.warning("reaper: shard %d did not answer its tick: %r", k, r)
        evicted = sum((r.evicted for r in answered.values()), EvictionReport())
        increments: Counter[str] = Counter()
        timings: Counter[str] = Counter()
        for k, report in answered.items():
            before = self._last.get(k)
            if before is not None and before.incarnation != report.incarnation:
                before = None  # another life's report: this one's counts start from zero
            increments.update(_since(before.counters if before is not None else {}, report.counters))
            timings.update(_since(before.timings if before is not None else {}, report.timings))
            self._last[k] = report
        status = self.status
        status.ticks += 1
        status.evicted = status.evicted + evicted
        status.counters.update(increments)
        status.shards_unreachable = len(self._shards) - len(answered)
        status.held = {
            name: sum(r.counts.get(name, 0) for r in answered.values()) for name in ("sessions", "marks", "digests")
        }
        self._note_clock_steps({k: r.clock_step for k, r in answered.items()})
        if self._stalled_after is not None:
            status.stalled = await self._count_stalled(self._stalled_after)
        # A shard that did not answer may name texts nobody else does: sweep only on a full view.
        if self._documents is not None and len(answered) == len(self._shards):
            referenced = set().union(*(r.referenced_digests for r in answered.values()))
            try:
                status.documents = await self._documents.sweep(referenced)
            except Exception as error:  # a document store that restarts is swept next tick
                log.warning("reaper: the document store did not answer its sweep: %r", error)
        # A lapse is judged by this process's clock: held off while some clock is stepped, so no step sweeps fences.
        if self._marks is not None and status.ticks % self._sweep_marks_every == 0 and not self._stepped():
            try:
                status.durable_marks_swept += await self._marks.sweep(self._clock())
            except Exception as error:  # not worth failing the tick for: orphaned marks only take room
                log.warning("reaper: sweeping lapsed durable marks failed: %r", error)
        return evicted, increments, timings

    async def _count_stalled(self, idle_seconds: float) -> int:
        counts = await asyncio.gather(*(s.stalled(idle_seconds, 0) for s in self._shards), return_exceptions=True)
        return sum(c["count"] for c in counts if isinstance(c, dict))

    def _note_clock_steps(self, steps: dict[int, float]) -> None:
        """A node's wall clock stepped: its shard's session clock absorbs it slowly, so no session is evicted and no
        fence lapses at once; the operator is told, once per step."""
        own = self._clock.step() if isinstance(self._clock, SessionClock) else 0.0
        worst = max([own, *steps.values()], key=abs)
        alarming = abs(worst) > CLOCK_STEP_ALARM_SECONDS
        if alarming and abs(worst - self.status.clock_step) > CLOCK_STEP_ALARM_SECONDS:
            where = {k: f"{v:+.1f} s" for k, v in steps.items() if abs(v) > CLOCK_STEP_ALARM_SECONDS}
            log.error(
                "reaper: a wall clock stepped (shards %s, reaper %+.1f s). Sessions and fences keep their "
                "times: each shard's session clock absorbs the step at %.0f%% of real time",
                where or "none",
                own,
                100 * SLEW,
            )
        self.status.clock_step = worst

    def _stepped(self) -> bool:
        return abs(self.status.clock_step) > CLOCK_STEP_ALARM_SECONDS

    async def _store_health(self) -> StoreHealth | None:
        """The store's marker and configuration, for every shard; None when the store could not be asked (the
        shards keep what they saw)."""
        if self._marks is None:
            return None
        try:
            present = await self._marks.marker_present()
            problem = await asyncio.to_thread(self._marks.durability_problem) if self._check_durability else None
        except Exception as error:
            log.warning("reaper: could not check the mark store: %r", error)
            return None
        health = StoreHealth(forgot=not present, durability_problem=problem)
        if health != self.status.store and (health.forgot or problem):
            log.error(
                "reaper: the mark store %s; new sessions are refused until this is resolved",
                "lost its marker (it forgot records): acknowledge with `finsec store acknowledge-loss`"
                if health.forgot
                else f"may forget marks: {problem}",
            )
        self.status.store = health
        return health


def _since(before: dict[str, int], now: dict[str, int]) -> dict[str, int]:
    """A shard's running totals less those of its previous report (of the same life: a new life starts at 0)."""
    return {name: n - before.get(name, 0) for name, n in now.items()}


async def run_every(interval_seconds: float, tick: Callable[[], Awaitable[object]]) -> None:
    """Tick forever, the first time soon after start (shards settle then); a failing tick (a shard restarting)
    is logged and tried again next time."""
    delay = min(interval_seconds, 2.0)
    while True:
        await asyncio.sleep(delay)
        delay = interval_seconds
        try:
            await tick()
        except Exception:
            log.exception("reaper tick failed; trying again next tick")
