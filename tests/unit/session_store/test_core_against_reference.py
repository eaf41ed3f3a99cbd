"""Random seeds, closes, verifies, tool calls, retires, clock jumps and shard restarts, run three ways:
against a deliberately naive reference written from docs/contract.md §C.10, against a shard that runs them
one at a time, and against a shard that runs them in random batches (as the coalescing client sends them).
All three must always agree.

The reference applies every expiry eagerly (it scans everything on every step); the core uses its expiry
index and lazy checks. Agreement means the index never changes what a client sees, and batching never changes
any operation's result. Marks (fences, expired marks) are durable: a restart loses sessions, never marks, and
an episode seed is durable too, so an episode open at a restart is lost whatever cookie comes back for it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from session_store import (
    Cached,
    Claims,
    DocumentRef,
    EpisodeSeed,
    GradeNow,
    Masked,
    MemoryMarkStore,
    Pending,
    Scored,
    SessionConflict,
    SessionLost,
    ShardConfig,
    ShardService,
    Verdict,
)

TTL, FENCE_TTL = 10.0, 15.0
IDS = ("s0", "s1", "s2")
SEEDS = [
    EpisodeSeed({"rollout_id": r, "attempt": 0}, {"taskset": "fin", "task_id": t}, d)
    for r, t, d in (("r0", "t0", "d0"), ("r1", "t0", "d0"), ("r0", "t1", "d0"), ("r0", "t0", "d1"))
]
EPISODES = [{"rollout_id": "r0", "attempt": 0}, {"rollout_id": "r1", "attempt": 0}]
CLAIMS = (None, "current", "old")
KINDS = ("episode", "agent_run")


@dataclass
class RefSession:
    start: float
    seed: EpisodeSeed | None
    docs: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, float] = field(default_factory=dict)


class Reference:
    def __init__(self) -> None:
        self.sessions: dict[str, RefSession] = {}
        self.fences: dict[str, tuple[dict | None, float, str]] = {}
        self.marks: dict[str, float] = {}

    def settle(self, now: float) -> None:
        for sid, s in list(self.sessions.items()):
            if now - s.start > TTL:
                del self.sessions[sid]
                lapse = s.start + TTL + FENCE_TTL
                self.marks[sid] = lapse
                if s.seed is not None and sid not in self.fences:
                    self.fences[sid] = (s.seed.episode_id, lapse, "evicted")
        self.fences = {k: v for k, v in self.fences.items() if v[1] > now}
        self.marks = {k: v for k, v in self.marks.items() if v > now}

    def note_lost(self, sid: str, claim: str | None, now: float) -> None:
        if claim == "old" and sid not in self.sessions and sid not in self.fences:
            self.fences[sid] = (None, now + FENCE_TTL, "lost")

    def seed_episode(self, sid: str, seed: EpisodeSeed, claim: str | None, now: float) -> str:
        self.settle(now)
        self.note_lost(sid, claim, now)
        if sid in self.fences:
            return "conflict"
        session = self.sessions.get(sid)
        if session is not None:
            return "retried" if session.seed == seed else "conflict"
        self.sessions[sid] = RefSession(now, seed)
        self.marks.pop(sid, None)
        return "created"

    def seed_agent_run(self, sid: str, claim: str | None, kind: str, now: float) -> str:
        self.settle(now)
        session = self.sessions.get(sid)
        if session is not None and session.seed is not None:
            return "conflict"
        if kind == "episode":
            self.note_lost(sid, claim, now)
        if sid in self.fences:
            return "conflict"
        self.sessions[sid] = RefSession(now, None)
        self.marks.pop(sid, None)
        return "created"

    def close(self, sid: str, episode: dict, now: float) -> str:
        self.settle(now)
        session = self.sessions.get(sid)
        if session is not None and session.seed is not None and session.seed.episode_id != episode:
            return "conflict"
        fence = self.fences.get(sid)
        if fence is not None and fence[0] is not None and fence[0] != episode:
            return "conflict"
        self.sessions.pop(sid, None)
        self.fences.setdefault(sid, (episode, now + FENCE_TTL, "closed"))
        return "ok"

    def verify(self, sid: str, digest: str, reward: float, claim: str | None, now: float) -> tuple:
        self.settle(now)
        if sid in self.marks:
            return ("masked", "session_expired")
        self.note_lost(sid, claim, now)
        if sid in self.fences:
            return ("masked", "session_lost")
        session = self.sessions.get(sid)
        if session is None:
            return ("scored", reward)
        if session.seed is None:
            del self.sessions[sid]
            return ("scored", reward)
        if digest in session.verdicts:
            return ("cached", session.verdicts[digest])
        session.verdicts[digest] = reward
        return ("scored", reward)

    def tool(self, sid: str, key: str | None, claim: str | None, now: float) -> str:
        self.settle(now)
        session = self.sessions.get(sid)
        if session is None:
            if sid not in self.marks:
                self.note_lost(sid, claim, now)
            return "lost"
        if key is not None:
            session.docs[key] = "text"
        return "ok"

    def describe(self, sid: str) -> dict:
        session, fence = self.sessions.get(sid), self.fences.get(sid)
        return {
            "open": session is not None,
            "episode": session is not None and session.seed is not None,
            "documents": sorted(session.docs) if session else [],
            "fenced": fence is not None,
            "fence_cause": fence[2] if fence else None,
            "expired": sid in self.marks,
        }


def outcome(result: tuple[bool, object]) -> object:
    ok, value = result
    if not ok:
        return {SessionConflict: "conflict", SessionLost: "lost"}[type(value)]
    if hasattr(value, "created"):
        return "created" if value.created else "retried"
    if isinstance(value, Masked):
        return ("masked", value.failure_kind)
    if isinstance(value, Scored):
        return ("scored", value.verdict.reward)
    if isinstance(value, Cached):
        return ("cached", value.verdict.reward)
    assert not isinstance(value, (GradeNow, Pending)), value
    return "ok"


class ShardsMatchReference(RuleBasedStateMachine):
    """Operations queue up; `flush` runs the queue as one batch on one shard and one at a time on its twin."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.marks = MemoryMarkStore()  # the durable store: it survives every restart
        self.twin_marks = MemoryMarkStore()
        self.config = ShardConfig(TTL, FENCE_TTL)
        self.batched = ShardService(self.config, self.marks, clock=lambda: self.now)
        self.single = ShardService(self.config, self.twin_marks, clock=lambda: self.now)
        self.old = {"batched": "never-existed", "single": "never-existed"}
        self.ref = Reference()
        self.queue: list[tuple[tuple, object, object]] = []  # (op for the batched shard, op for its twin, expected)

    def claims(self, which: str, claim: str | None, kind: str = "episode") -> Claims:
        shard = self.batched if which == "batched" else self.single
        incarnation = {None: None, "current": shard.incarnation, "old": self.old[which]}[claim]
        return Claims(incarnation, kind)

    def enqueue(self, name: str, args_for, expected) -> None:
        self.queue.append(((name, args_for("batched")), (name, args_for("single")), expected))

    @rule(sid=st.sampled_from(IDS), seed=st.sampled_from(SEEDS), claim=st.sampled_from(CLAIMS))
    def seed_episode(self, sid, seed, claim):
        self.enqueue(
            "seed_episode",
            lambda w: (sid, seed, self.claims(w, claim)),
            self.ref.seed_episode(sid, seed, claim, self.now),
        )

    @rule(sid=st.sampled_from(IDS), claim=st.sampled_from(CLAIMS), kind=st.sampled_from(KINDS))
    def seed_agent_run(self, sid, claim, kind):
        self.enqueue(
            "seed_agent_run",
            lambda w: (sid, self.claims(w, claim, kind)),
            self.ref.seed_agent_run(sid, claim, kind, self.now),
        )

    @rule(sid=st.sampled_from(IDS), episode=st.sampled_from(EPISODES))
    def close(self, sid, episode):
        self.enqueue("close", lambda w: (sid, episode), self.ref.close(sid, episode, self.now))

    @rule(
        sid=st.sampled_from(IDS),
        digest=st.sampled_from(("d0", "d1")),
        reward=st.sampled_from((0.0, 1.0)),
        claim=st.sampled_from(CLAIMS),
    )
    def verify(self, sid, digest, reward, claim):
        self.enqueue(
            "finish_verify",
            lambda w: (sid, digest, Verdict(reward), self.claims(w, claim)),
            self.ref.verify(sid, digest, reward, claim, self.now),
        )

    @rule(sid=st.sampled_from(IDS), key=st.sampled_from(("k0", "k1")), claim=st.sampled_from(CLAIMS))
    def put_document(self, sid, key, claim):
        ref = DocumentRef("digest", 4, "https://www.sec.gov/x")
        self.enqueue(
            "put_document", lambda w: (sid, key, ref, self.claims(w, claim)), self.ref.tool(sid, key, claim, self.now)
        )

    @rule(sid=st.sampled_from(IDS), claim=st.sampled_from(CLAIMS))
    def read_documents(self, sid, claim):
        self.enqueue(
            "read_documents", lambda w: (sid, ["k0"], self.claims(w, claim)), self.ref.tool(sid, None, claim, self.now)
        )

    @rule(sid=st.sampled_from(IDS))
    def retire(self, sid):
        self.ref.sessions.pop(sid, None)
        self.enqueue("retire", lambda w: (sid,), "ok")

    @precondition(lambda self: self.queue)
    @rule()
    def flush(self):
        batched_ops = [b for b, _, _ in self.queue]
        got = asyncio.run(self.batched.run(batched_ops))
        alone = [asyncio.run(self.single.run([s]))[0] for _, s, _ in self.queue]
        for (op, _, expected), b, s in zip(self.queue, got, alone, strict=False):
            assert outcome(b) == outcome(s) == expected, (op, b, s, expected)
        self.queue = []

    @precondition(lambda self: not self.queue)
    @rule(seconds=st.sampled_from((0.5, 1.0, TTL / 2, TTL, TTL + 0.5, FENCE_TTL, 2 * FENCE_TTL)))
    def advance_clock(self, seconds):
        self.now += seconds

    @precondition(lambda self: not self.queue)
    @rule()
    def reaper_tick(self):
        asyncio.run(self.batched.tick())
        asyncio.run(self.single.tick())

    @precondition(lambda self: not self.queue)
    @rule()
    def shard_restarts(self):
        """A SIGKILL: sessions are gone, marks stay in the durable store. (A session past its TTL that neither a
        request nor a tick evicted before the kill takes its expired mark with it; the shards evict at every
        batch and tick, so the model kills them after one.)"""
        asyncio.run(self.batched.tick())
        asyncio.run(self.single.tick())
        self.old = {"batched": self.batched.incarnation, "single": self.single.incarnation}
        self.batched = ShardService(self.config, self.marks, clock=lambda: self.now)
        self.single = ShardService(self.config, self.twin_marks, clock=lambda: self.now)
        for sid, session in self.ref.sessions.items():  # its durable seed says it was open, and for which episode
            if session.seed is not None:
                self.ref.fences[sid] = (session.seed.episode_id, session.start + TTL + FENCE_TTL, "lost")
        self.ref.sessions.clear()

    @invariant()
    def every_session_looks_the_same(self):
        if self.queue:
            return
        self.ref.settle(self.now)
        described = asyncio.run(self.batched.run([("describe", (sid,)) for sid in IDS]))
        for sid, (ok, seen) in zip(IDS, described, strict=False):
            assert ok and seen == self.ref.describe(sid), sid

    @invariant()
    def totals_kept_as_they_change_match_a_recount(self):
        core = self.batched._core
        sessions, marks = core._sessions.values(), core._marks.values()
        assert core.stats() == {
            "sessions": len(sessions),
            "agent_run_sessions": sum(s.episode is None for s in sessions),
            "documents": sum(len(s.documents) for s in sessions),
            "document_chars": sum(d.chars for s in sessions for d in s.documents.values()),
            "digests": len(core._refs),
            "verdicts": sum(len(s.verdicts) for s in sessions),
            "fences": sum(m.fence_until is not None for m in marks),
            "expired_marks": sum(m.expired_until is not None for m in marks),
        }
        # the stalled-session order holds the open sessions, least recently used first
        used = [core._sessions[sid].used_at for sid in core._idle]
        assert set(core._idle) == set(core._sessions) and used == sorted(used)


TestShardsMatchReference = ShardsMatchReference.TestCase
TestShardsMatchReference.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
