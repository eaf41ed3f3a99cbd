"""The `SessionStore` interface the ingress talks to, and its in-process implementation.

A store routes each session ID to one shard (`routing.shard_index`) and makes one call there per request; calls
that concurrent requests make to one shard are coalesced into one batch (`batching.Coalescer`). The ingress
never learns which implementation it holds (design principle 2).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import partial
from typing import Any

from . import operations
from .batching import Coalescer
from .core import (
    NO_CLAIMS,
    Claims,
    DocumentRef,
    DocumentsView,
    EpisodeSeed,
    Seeded,
    StoredDocument,
    Verdict,
    VerifyOutcome,
    VerifyPlan,
)
from .operations import Operation
from .routing import shard_index
from .shard import Op, Outcome, ShardService, TickReport

__all__ = ["CLOCK_READ_EVERY_SECONDS", "LocalSessionStore", "SessionStore"]

CLOCK_READ_EVERY_SECONDS = 30.0  # how long a shard's clock is read through one offset: it slews at most 1%


class SessionStore(ABC):
    num_shards: int

    def __init__(self, num_shards: int, monotonic: Callable[[], float] = time.monotonic):
        self.num_shards = num_shards
        self._coalescers = [Coalescer(partial(self._send, k)) for k in range(num_shards)]
        self._monotonic = monotonic
        self._clock_offsets: dict[int, tuple[float, float]] = {}  # shard -> (its clock - ours, when we read it)

    @abstractmethod
    async def _send(self, shard: int, ops: list[Op]) -> list[Outcome]:
        """Run one batch on shard `shard`; raises StoreUnavailable when the shard cannot be reached."""

    @abstractmethod
    async def _each_shard(self, method: str, *args: Any) -> list[Any]:
        """Call `method` on every shard directly (not batched): stats, reaper ticks, stalled sessions."""

    async def _on(self, sid: str, op: Operation, *args: Any) -> Any:
        ok, value = await self._coalescers[shard_index(sid, self.num_shards)].submit((op.name, (sid, *args)))
        if ok:
            return value
        raise value

    async def seed_episode(self, sid: str, seed: EpisodeSeed, claims: Claims = NO_CLAIMS) -> Seeded:
        return await self._on(sid, operations.SEED_EPISODE, seed, claims)

    async def seed_agent_run(self, sid: str, claims: Claims = NO_CLAIMS) -> Seeded:
        return await self._on(sid, operations.SEED_AGENT_RUN, claims)

    async def close(self, sid: str, episode_id: dict[str, Any]) -> None:
        await self._on(sid, operations.CLOSE, episode_id)

    async def retire(self, sid: str) -> None:
        """`retire_session_state` (contract §C.8, Decision 8)."""
        await self._on(sid, operations.RETIRE)

    async def retire_if_idle(self, sid: str, idle_seconds: float) -> float:
        return await self._on(sid, operations.RETIRE_IF_IDLE, idle_seconds)

    async def mark_lost(self, sid: str) -> None:
        await self._on(sid, operations.MARK_LOST)

    async def plan_verify(self, sid: str, body_digest: str, claims: Claims, lease_seconds: float) -> VerifyPlan:
        return await self._on(sid, operations.PLAN_VERIFY, body_digest, claims, lease_seconds)

    async def record_verdict(self, sid: str, body_digest: str, verdict: Verdict | None) -> None:
        await self._on(sid, operations.RECORD_VERDICT, body_digest, verdict)

    async def finish_verify(self, sid: str, body_digest: str, verdict: Verdict, claims: Claims) -> VerifyOutcome:
        return await self._on(sid, operations.FINISH_VERIFY, body_digest, verdict, claims)

    async def check_open(self, sid: str, claims: Claims) -> None:
        await self._on(sid, operations.CHECK_OPEN, claims)

    async def document_refs(self, sid: str) -> dict[str, DocumentRef] | None:
        return await self._on(sid, operations.DOCUMENT_REFS)

    async def started_at(self, sid: str) -> float | None:
        return await self._on(sid, operations.STARTED_AT)

    async def shard_now(self, sid: str) -> float:
        """The clock of the shard that holds `sid`, which timed its session's start: a budget judged by it is not
        moved by this node's clock being skewed or stepped. Read through an offset to this process's monotonic
        clock, renewed by one batched call per shard every CLOCK_READ_EVERY_SECONDS."""
        k = shard_index(sid, self.num_shards)
        offset, read_at = self._clock_offsets.get(k, (0.0, None))
        if read_at is None or self._monotonic() - read_at > CLOCK_READ_EVERY_SECONDS:
            before = self._monotonic()
            shard_now = await self._on(sid, operations.NOW)
            after = self._monotonic()
            offset, read_at = shard_now - (before + after) / 2, after
            self._clock_offsets[k] = (offset, read_at)
        return self._monotonic() + offset

    async def put_document(self, sid: str, key: str, ref: DocumentRef, claims: Claims) -> StoredDocument:
        return await self._on(sid, operations.PUT_DOCUMENT, key, ref, claims)

    async def read_documents(self, sid: str, keys: list[str], claims: Claims) -> DocumentsView:
        return await self._on(sid, operations.READ_DOCUMENTS, keys, claims)

    async def describe(self, sid: str) -> dict[str, Any]:
        return await self._on(sid, operations.DESCRIBE)

    async def inspect(self, sid: str) -> dict[str, Any]:
        """The session inspector's view of an ID (`SessionCore.inspect`)."""
        return await self._on(sid, operations.INSPECT)

    async def stalled(self, idle_seconds: float, limit: int = 20) -> dict[str, Any]:
        """Open sessions no stateful call has named for `idle_seconds`, over every shard: how many, the idlest."""
        rows = await self._each_shard("stalled", idle_seconds, limit)
        idlest = sorted((s for row in rows for s in row["idlest"]), key=lambda s: -s["idle_seconds"])[:limit]
        return {"count": sum(row["count"] for row in rows), "idlest": idlest}

    async def tick(self) -> list[TickReport]:
        return await self._each_shard("tick")

    async def stats(self) -> dict[str, Any]:
        """Totals over every shard (counters summed), plus each shard's own row."""
        rows = await self._each_shard("stats")
        totals = {
            k: sum(row[k] for row in rows)
            for k in rows[0]
            if k not in ("incarnation", "counters", "store_problem", "clock_step")
        }
        counters: dict[str, int] = {}
        for row in rows:
            for name, n in row["counters"].items():
                counters[name] = counters.get(name, 0) + n
        problem = next((row["store_problem"] for row in rows if row.get("store_problem")), None)
        return {**totals, "counters": counters, "store_problem": problem, "shards": rows}


class LocalSessionStore(SessionStore):
    """Shards as plain objects in this process: for the Ray-free tests and the single-process baseline."""

    def __init__(self, shards: list[ShardService], monotonic: Callable[[], float] = time.monotonic):
        self.shards = shards
        super().__init__(len(shards), monotonic)

    async def _send(self, shard: int, ops: list[Op]) -> list[Outcome]:
        return await self.shards[shard].run(ops)

    async def _each_shard(self, method: str, *args: Any) -> list[Any]:
        return await asyncio.gather(*(getattr(s, method)(*args) for s in self.shards))
