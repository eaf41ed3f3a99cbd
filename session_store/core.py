"""Every rule of the resources-sessions contract (contract.md §B, §C), pure and Ray-free.

One `SessionCore` holds the sessions of one shard. Time comes from an injected clock, so tests can jump it.

Expiry index: the session TTL is fixed for a core's life and the clock never goes back, so sessions expire in
the order they were seeded. Keeping the sessions dict in that order (a re-seed re-inserts at the end) makes it
the expiry index: an eviction pass pops from the front and costs time proportional to what it evicts, not to
what is held. Fences and expired marks are kept the same way; they are nearly in expiry order (an evicted
session's fence runs from the instant it expired, which can be a little before the fence was written), so a
pass may drop one a tick late. Every lookup checks the exact expiry, so behaviour never depends on that.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from .errors import SessionConflict, SessionLost

Clock = Callable[[], float]
JsonDict = dict[str, Any]


@dataclass(frozen=True)
class EpisodeSeed:
    """What an episode seed records (contract §C.2, Decision 4): compared as a whole to spot conflicts."""

    episode_id: JsonDict  # canonical {"rollout_id": str, "attempt": int}
    task_id: JsonDict  # {"taskset": str, "task_id": str}
    task_data_digest: str  # digest of the canonical JSON of task_data


@dataclass
class Session:
    started_at: float
    episode: EpisodeSeed | None  # None for an agent-run session
    documents: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, JsonDict] = field(default_factory=dict)  # verify-body digest -> verdict (Decision 7)


FenceCause = Literal["closed", "evicted", "lost"]


@dataclass(frozen=True)
class Fence:
    episode_id: JsonDict | None  # the closing (or evicted) episode; None when nobody can be named (lost)
    expires_at: float
    cause: FenceCause


@dataclass(frozen=True)
class VerifyPlan:
    """What /verify must do for a session (contract §C.5)."""

    action: Literal["score", "masked", "cached"]
    failure_kind: str | None = None  # for masked: session_lost or session_expired
    reason: str | None = None
    verdict: JsonDict | None = None  # for cached
    cache_verdict: bool = False  # for score: an open episode session keeps its verdict until close


@dataclass(frozen=True)
class StoredDocument:
    overwritten: bool
    keys: list[str]  # every key of the session, in insertion order


@dataclass(frozen=True)
class DocumentsView:
    age_seconds: float  # for the time budget (contract §A.15)
    keys: list[str]
    texts: dict[str, str]  # only the requested keys that exist


@dataclass(frozen=True)
class EvictionReport:
    sessions: int = 0
    fences: int = 0
    expired_marks: int = 0

    def __add__(self, other: EvictionReport) -> EvictionReport:
        return EvictionReport(
            self.sessions + other.sessions, self.fences + other.fences, self.expired_marks + other.expired_marks
        )


_FENCE_WHY = {
    "closed": "it was closed",
    "evicted": "it outlived session_ttl_seconds and was evicted",
    "lost": "the shard holding it restarted and its state is gone",
}


class SessionCore:
    def __init__(
        self,
        *,
        session_ttl_seconds: float,
        fence_ttl_seconds: float | None = None,
        clock: Clock = time.monotonic,
        incarnation: str | None = None,
    ):
        self.session_ttl = float(session_ttl_seconds)
        self.fence_ttl = float(session_ttl_seconds if fence_ttl_seconds is None else fence_ttl_seconds)
        self.clock = clock
        # Names this life of the core. Cookies carry it, so a restarted shard can tell a session it lost from
        # one it never had (ray-notes: a restarted shard comes back empty).
        self.incarnation = incarnation or uuid.uuid4().hex
        self._sessions: dict[str, Session] = {}  # in seed order: the session expiry index
        self._fences: dict[str, Fence] = {}  # in expiry order
        self._expired: dict[str, float] = {}  # evicted id -> when the mark is dropped; in that order

    # ----- seeds (§C.2, §C.3) -----

    def seed_episode(self, sid: str, seed: EpisodeSeed, claimed_incarnation: str | None = None) -> bool:
        """Create the episode session, or accept a retry of the same seed. Returns True if it was created."""
        self.evict_expired()
        session = self._open(sid)
        if session is None:
            self._note_if_lost(sid, claimed_incarnation)
        fence = self._fence(sid)
        if fence is not None:
            raise SessionConflict(
                f"Resources session {sid!r} cannot be seeded: {_FENCE_WHY[fence.cause]}, and its ID stays fenced "
                "for fence_ttl_seconds. Seed a new resources_session_id."
            )
        if session is not None:
            if session.episode is None:
                raise SessionConflict(
                    f"Resources session {sid!r} is an open agent-run session; an episode seed cannot take it over. "
                    "Seed a new resources_session_id."
                )
            if session.episode != seed:
                raise SessionConflict(_seed_conflict_message(sid, session.episode, seed))
            return False  # a retried seed: documents and time budget untouched
        self._expired.pop(sid, None)
        self._sessions[sid] = Session(started_at=self.clock(), episode=seed)
        return True

    def seed_agent_run(self, sid: str) -> None:
        """Reset the cookie's session (§C.3). A reset starts afresh, so a lost earlier life does not matter here."""
        self.evict_expired()
        session = self._open(sid)
        if session is not None and session.episode is not None:
            raise SessionConflict(
                f"Session {sid!r} holds an episode seed; an agent-run seed would wipe its documents. "
                "Close the episode with /close_session first, or call the tools without seeding."
            )
        fence = self._fence(sid)
        if fence is not None:
            raise SessionConflict(
                f"Session {sid!r} cannot be seeded: {_FENCE_WHY[fence.cause]}. Start again without the old cookie."
            )
        self._sessions.pop(sid, None)  # re-insert at the end: the expiry index stays in seed order
        self._expired.pop(sid, None)
        self._sessions[sid] = Session(started_at=self.clock(), episode=None)

    # ----- close and retire (§C.4, §C.8) -----

    def close(self, sid: str, episode_id: JsonDict) -> None:
        session = self._open(sid)
        if session is not None and session.episode is not None and session.episode.episode_id != episode_id:
            raise SessionConflict(
                f"Resources session {sid!r} was seeded for episode {session.episode.episode_id}; "
                f"a close naming episode {episode_id} is refused."
            )
        fence = self._fence(sid)
        if fence is not None and fence.episode_id is not None and fence.episode_id != episode_id:
            raise SessionConflict(
                f"Resources session {sid!r} was already closed for episode {fence.episode_id}; "
                f"a close naming episode {episode_id} is refused."
            )
        self._sessions.pop(sid, None)
        if fence is None:  # a repeated close keeps the first fence and does not extend it (Decision 2)
            self._fences[sid] = Fence(episode_id, self.clock() + self.fence_ttl, "closed")

    def retire(self, sid: str) -> None:
        """Release everything the session holds; idempotent; no fence (Decision 8)."""
        self._sessions.pop(sid, None)

    # ----- verify (§C.5, Decisions 6, 7) -----

    def begin_verify(self, sid: str, body_digest: str, claimed_incarnation: str | None = None) -> VerifyPlan:
        session = self._open(sid)
        if self._is_marked_expired(sid):
            return VerifyPlan(
                "masked",
                "session_expired",
                f"Session {sid!r} outlived session_ttl_seconds and was evicted before verify.",
            )
        if session is None:
            self._note_if_lost(sid, claimed_incarnation)
        fence = self._fence(sid)
        if fence is not None:
            return VerifyPlan("masked", "session_lost", f"Session {sid!r} is not open: {_FENCE_WHY[fence.cause]}.")
        if session is None:
            return VerifyPlan("score")  # never seeded, or an agent-run session already verified (Decision 6)
        if session.episode is None:
            del self._sessions[sid]  # verify is the agent-run session's release (legacy agents never close)
            return VerifyPlan("score")
        cached = session.verdicts.get(body_digest)
        if cached is not None:
            return VerifyPlan("cached", verdict=cached)
        return VerifyPlan("score", cache_verdict=True)

    def record_verdict(self, sid: str, body_digest: str, verdict: JsonDict) -> None:
        session = self._open(sid)
        if session is not None and session.episode is not None:
            session.verdicts[body_digest] = verdict

    # ----- the stateful tools (§C.6) -----

    def session_age(self, sid: str, claimed_incarnation: str | None = None) -> float:
        return self.clock() - self._require_open(sid, claimed_incarnation).started_at

    def put_document(self, sid: str, key: str, text: str, claimed_incarnation: str | None = None) -> StoredDocument:
        documents = self._require_open(sid, claimed_incarnation).documents
        overwritten = key in documents
        documents[key] = text
        return StoredDocument(overwritten, list(documents))

    def read_documents(
        self, sid: str, keys: list[str], claimed_incarnation: str | None = None
    ) -> DocumentsView:
        session = self._require_open(sid, claimed_incarnation)
        texts = {k: session.documents[k] for k in keys if k in session.documents}
        return DocumentsView(self.clock() - session.started_at, list(session.documents), texts)

    # ----- TTL (§C.9, Decision 10) -----

    def evict_expired(self) -> EvictionReport:
        now = self.clock()
        sessions = 0
        while self._sessions:
            sid, session = next(iter(self._sessions.items()))
            if not self._past_ttl(session, now):
                break
            self._evict(sid, session)
            sessions += 1
        fences = _drop_due(self._fences, lambda fence: fence.expires_at, now)
        marks = _drop_due(self._expired, lambda drop_at: drop_at, now)
        return EvictionReport(sessions, fences, marks)

    # ----- introspection, for the store's stats and for tests -----

    def describe(self, sid: str) -> JsonDict:
        session = self._open(sid)
        fence = self._fence(sid)
        return {
            "open": session is not None,
            "episode": session is not None and session.episode is not None,
            "documents": sorted(session.documents) if session else [],
            "fenced": fence is not None,
            "fence_cause": fence.cause if fence else None,
            "expired": self._is_marked_expired(sid),
        }

    def counts(self) -> dict[str, int]:
        return {"sessions": len(self._sessions), "fences": len(self._fences), "expired_marks": len(self._expired)}

    def stats(self) -> JsonDict:
        return {
            "sessions": len(self._sessions),
            "documents": sum(len(s.documents) for s in self._sessions.values()),
            "document_chars": sum(len(t) for s in self._sessions.values() for t in s.documents.values()),
            "fences": len(self._fences),
            "expired_marks": len(self._expired),
        }

    # ----- internals -----

    def _past_ttl(self, session: Session, now: float) -> bool:
        return now - session.started_at > self.session_ttl

    def _open(self, sid: str) -> Session | None:
        """The open session, if any. A session past its TTL is evicted here: never served between reaper ticks."""
        session = self._sessions.get(sid)
        if session is not None:
            now = self.clock()
            if self._past_ttl(session, now):
                self._evict(sid, session)
                return None
        return session

    def _evict(self, sid: str, session: Session) -> None:
        """Evict a session past its TTL. Its marks count from the instant it expired, not from when the eviction
        ran, so what the contract shows never depends on when the reaper happened to tick."""
        del self._sessions[sid]
        lapse = session.started_at + self.session_ttl + self.fence_ttl
        self._expired.pop(sid, None)
        self._expired[sid] = lapse
        if session.episode is not None and self._fence(sid) is None:
            self._fences[sid] = Fence(session.episode.episode_id, lapse, "evicted")

    def _fence(self, sid: str) -> Fence | None:
        fence = self._fences.get(sid)
        if fence is not None and fence.expires_at <= self.clock():
            del self._fences[sid]
            return None
        return fence

    def _is_marked_expired(self, sid: str) -> bool:
        drop_at = self._expired.get(sid)
        if drop_at is not None and drop_at <= self.clock():
            del self._expired[sid]
            return False
        return drop_at is not None

    def _note_if_lost(self, sid: str, claimed_incarnation: str | None) -> None:
        """A cookie from an earlier life of this core names a session that life held: fence it as lost."""
        if claimed_incarnation and claimed_incarnation != self.incarnation and self._fence(sid) is None:
            self._fences[sid] = Fence(None, self.clock() + self.fence_ttl, "lost")

    def _require_open(self, sid: str, claimed_incarnation: str | None) -> Session:
        session = self._open(sid)
        if session is not None:
            return session
        if self._is_marked_expired(sid):
            raise SessionLost(sid, _FENCE_WHY["evicted"])
        self._note_if_lost(sid, claimed_incarnation)
        fence = self._fence(sid)
        raise SessionLost(sid, _FENCE_WHY[fence.cause] if fence else "never seeded, or already released by verify")


def canonical_digest(value: Any) -> str:
    """A digest of a JSON value that ignores key order (Decision 4 compares task_data this way)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _drop_due(table: dict[str, Any], due_at: Callable[[Any], float], now: float) -> int:
    dropped = 0
    while table:
        sid, value = next(iter(table.items()))
        if due_at(value) > now:
            break
        del table[sid]
        dropped += 1
    return dropped


def _seed_conflict_message(sid: str, held: EpisodeSeed, asked: EpisodeSeed) -> str:
    differs = [
        name
        for name, a, b in (
            ("episode_id", held.episode_id, asked.episode_id),
            ("task_id", held.task_id, asked.task_id),
            ("task_data", held.task_data_digest, asked.task_data_digest),
        )
        if a != b
    ]
    return (
        f"Resources session {sid!r} is already open for episode {held.episode_id} of task {held.task_id}; "
        f"this seed differs in {', '.join(differs)}. A retried seed must repeat the original exactly; "
        "a new episode needs a new resources_session_id."
    )
