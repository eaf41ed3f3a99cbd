"""One shard's service: the pure core plus per-ID locks. Ray-free; `actors.py` wraps this same class as an actor.

Seeds and closes of one ID run under that ID's lock (contract §C.1). The core's methods do not await, so today
they are atomic on the event loop anyway; the lock keeps them serialized once a step awaits (a notification,
a checkpoint write), and costs nothing measurable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .core import Clock, DocumentsView, EpisodeSeed, EvictionReport, SessionCore, StoredDocument, VerifyPlan
from .locks import KeyedLocks


@dataclass(frozen=True)
class SeedResult:
    created: bool
    incarnation: str  # goes into the session cookie (see SessionCore.incarnation)


class ShardService:
    def __init__(
        self,
        session_ttl_seconds: float,
        fence_ttl_seconds: float | None = None,
        clock: Clock | None = None,
    ):
        kwargs = {"clock": clock} if clock is not None else {}
        self._core = SessionCore(
            session_ttl_seconds=session_ttl_seconds, fence_ttl_seconds=fence_ttl_seconds, **kwargs
        )
        self._locks = KeyedLocks()

    async def seed_episode(self, sid: str, seed: EpisodeSeed, claimed_incarnation: str | None) -> SeedResult:
        async with self._locks.hold(sid):
            return SeedResult(self._core.seed_episode(sid, seed, claimed_incarnation), self._core.incarnation)

    async def seed_agent_run(self, sid: str) -> SeedResult:
        async with self._locks.hold(sid):
            self._core.seed_agent_run(sid)
            return SeedResult(True, self._core.incarnation)

    async def close(self, sid: str, episode_id: dict[str, Any]) -> None:
        async with self._locks.hold(sid):
            self._core.close(sid, episode_id)

    async def retire(self, sid: str) -> None:
        async with self._locks.hold(sid):
            self._core.retire(sid)

    async def begin_verify(self, sid: str, body_digest: str, claimed_incarnation: str | None) -> VerifyPlan:
        return self._core.begin_verify(sid, body_digest, claimed_incarnation)

    async def record_verdict(self, sid: str, body_digest: str, verdict: dict[str, Any]) -> None:
        self._core.record_verdict(sid, body_digest, verdict)

    async def session_age(self, sid: str, claimed_incarnation: str | None) -> float:
        return self._core.session_age(sid, claimed_incarnation)

    async def put_document(self, sid: str, key: str, text: str, claimed_incarnation: str | None) -> StoredDocument:
        return self._core.put_document(sid, key, text, claimed_incarnation)

    async def read_documents(self, sid: str, keys: list[str], claimed_incarnation: str | None) -> DocumentsView:
        return self._core.read_documents(sid, keys, claimed_incarnation)

    async def evict_expired(self) -> EvictionReport:
        return self._core.evict_expired()

    async def describe(self, sid: str) -> dict[str, Any]:
        return self._core.describe(sid)

    async def counts(self) -> dict[str, int]:
        """What the shard holds, in O(1): for the reaper's metrics every tick."""
        return self._core.counts()

    async def stats(self) -> dict[str, Any]:
        return {**self._core.stats(), "locks": len(self._locks), "incarnation": self._core.incarnation}
