"""The `SessionStore` interface the ingress talks to, and its in-process implementation.

A store routes each session ID to one shard (a `ShardService`, in process or behind a Ray actor) and makes
one call there; the ingress never learns which implementation it holds (design principle 2).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import Any

from .core import DocumentsView, EpisodeSeed, EvictionReport, StoredDocument, VerifyPlan
from .routing import shard_index
from .shard import SeedResult, ShardService


class SessionStore(ABC):
    num_shards: int

    @abstractmethod
    async def _call(self, shard: int, method: str, *args: Any) -> Any:
        """Run `method` on shard `shard` and return its result, raising the shard's own session errors."""

    async def _on(self, sid: str, method: str, *args: Any) -> Any:
        return await self._call(shard_index(sid, self.num_shards), method, sid, *args)

    async def _on_all(self, method: str) -> list[Any]:
        return await asyncio.gather(*(self._call(k, method) for k in range(self.num_shards)))

    async def seed_episode(self, sid: str, seed: EpisodeSeed, claimed_incarnation: str | None) -> SeedResult:
        return await self._on(sid, "seed_episode", seed, claimed_incarnation)

    async def seed_agent_run(self, sid: str) -> SeedResult:
        return await self._on(sid, "seed_agent_run")

    async def close(self, sid: str, episode_id: dict[str, Any]) -> None:
        await self._on(sid, "close", episode_id)

    async def retire(self, sid: str) -> None:
        """`retire_session_state` (contract §C.8, Decision 8)."""
        await self._on(sid, "retire")

    async def begin_verify(self, sid: str, body_digest: str, claimed_incarnation: str | None) -> VerifyPlan:
        return await self._on(sid, "begin_verify", body_digest, claimed_incarnation)

    async def record_verdict(self, sid: str, body_digest: str, verdict: dict[str, Any]) -> None:
        await self._on(sid, "record_verdict", body_digest, verdict)

    async def session_age(self, sid: str, claimed_incarnation: str | None) -> float:
        return await self._on(sid, "session_age", claimed_incarnation)

    async def put_document(self, sid: str, key: str, text: str, claimed_incarnation: str | None) -> StoredDocument:
        return await self._on(sid, "put_document", key, text, claimed_incarnation)

    async def read_documents(self, sid: str, keys: list[str], claimed_incarnation: str | None) -> DocumentsView:
        return await self._on(sid, "read_documents", keys, claimed_incarnation)

    async def describe(self, sid: str) -> dict[str, Any]:
        return await self._on(sid, "describe")

    async def evict_expired(self) -> EvictionReport:
        reports = await self._on_all("evict_expired")
        return sum(reports, EvictionReport())

    async def stats(self) -> dict[str, Any]:
        """Totals over every shard, plus each shard's own row."""
        rows = await self._on_all("stats")
        totals = {k: sum(row[k] for row in rows) for k in rows[0] if k != "incarnation"}
        return {**totals, "shards": rows}


class LocalSessionStore(SessionStore):
    """Shards as plain objects in this process: for the Ray-free tests and the single-process baseline."""

    def __init__(self, shards: list[ShardService]):
        self._shards = shards
        self.num_shards = len(shards)

    async def _call(self, shard: int, method: str, *args: Any) -> Any:
        return await getattr(self._shards[shard], method)(*args)
