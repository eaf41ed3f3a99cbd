"""Random seeds, closes, verifies, tool calls, retires, clock jumps and shard restarts, run against the core and
against a deliberately naive reference model written from contract.md §C.10; the two must never disagree.

The reference applies every expiry eagerly (it scans everything on every step); the core uses its expiry
index and lazy checks. Agreement means the index never changes what a client sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from session_store.core import EpisodeSeed, SessionCore
from session_store.errors import SessionConflict, SessionLost

TTL, FENCE_TTL = 10.0, 15.0
IDS = ("s0", "s1", "s2")
SEEDS = [
    EpisodeSeed({"rollout_id": r, "attempt": 0}, {"taskset": "fin", "task_id": t}, d)
    for r, t, d in (("r0", "t0", "d0"), ("r1", "t0", "d0"), ("r0", "t1", "d0"), ("r0", "t0", "d1"))
]
EPISODES = [{"rollout_id": "r0", "attempt": 0}, {"rollout_id": "r1", "attempt": 0}]
CLAIMS = (None, "current", "old")


@dataclass
class RefSession:
    start: float
    seed: EpisodeSeed | None
    docs: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, dict] = field(default_factory=dict)


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

    def seed_agent_run(self, sid: str, now: float) -> str:
        self.settle(now)
        session = self.sessions.get(sid)
        if (session is not None and session.seed is not None) or sid in self.fences:
            return "conflict"
        self.sessions[sid] = RefSession(now, None)
        self.marks.pop(sid, None)
        return "ok"

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

    def verify(self, sid: str, digest: str, claim: str | None, now: float) -> tuple:
        self.settle(now)
        if sid in self.marks:
            return ("masked", "session_expired", None)
        self.note_lost(sid, claim, now)
        if sid in self.fences:
            return ("masked", "session_lost", None)
        session = self.sessions.get(sid)
        if session is None:
            return ("score", None, None)
        if session.seed is None:
            del self.sessions[sid]
            return ("score", None, None)
        if digest in session.verdicts:
            return ("cached", None, session.verdicts[digest])
        session.verdicts[digest] = {"verdict": digest}
        return ("score", None, None)

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


def outcome(call) -> str:
    try:
        result = call()
    except SessionConflict:
        return "conflict"
    except SessionLost:
        return "lost"
    return result


class CoreMatchesReference(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.core = SessionCore(session_ttl_seconds=TTL, fence_ttl_seconds=FENCE_TTL, clock=lambda: self.now)
        self.old_incarnation = "never-existed"
        self.ref = Reference()

    def claim(self, which: str | None) -> str | None:
        return {None: None, "current": self.core.incarnation, "old": self.old_incarnation}[which]

    @rule(sid=st.sampled_from(IDS), seed=st.sampled_from(SEEDS), claim=st.sampled_from(CLAIMS))
    def seed_episode(self, sid, seed, claim):
        got = outcome(lambda: "created" if self.core.seed_episode(sid, seed, self.claim(claim)) else "retried")
        assert got == self.ref.seed_episode(sid, seed, claim, self.now)

    @rule(sid=st.sampled_from(IDS))
    def seed_agent_run(self, sid):
        got = outcome(lambda: self.core.seed_agent_run(sid) or "ok")
        assert got == self.ref.seed_agent_run(sid, self.now)

    @rule(sid=st.sampled_from(IDS), episode=st.sampled_from(EPISODES))
    def close(self, sid, episode):
        assert outcome(lambda: self.core.close(sid, episode) or "ok") == self.ref.close(sid, episode, self.now)

    @rule(sid=st.sampled_from(IDS), digest=st.sampled_from(("d0", "d1")), claim=st.sampled_from(CLAIMS))
    def verify(self, sid, digest, claim):
        plan = self.core.begin_verify(sid, digest, self.claim(claim))
        if plan.action == "score" and plan.cache_verdict:
            self.core.record_verdict(sid, digest, {"verdict": digest})
        assert (plan.action, plan.failure_kind, plan.verdict) == self.ref.verify(sid, digest, claim, self.now)

    @rule(sid=st.sampled_from(IDS), key=st.sampled_from(("k0", "k1")), claim=st.sampled_from(CLAIMS))
    def put_document(self, sid, key, claim):
        got = outcome(lambda: self.core.put_document(sid, key, "text", self.claim(claim)) and "ok")
        assert got == self.ref.tool(sid, key, claim, self.now)

    @rule(sid=st.sampled_from(IDS), claim=st.sampled_from(CLAIMS))
    def read_documents(self, sid, claim):
        got = outcome(lambda: self.core.read_documents(sid, ["k0"], self.claim(claim)) and "ok")
        assert got == self.ref.tool(sid, None, claim, self.now)

    @rule(sid=st.sampled_from(IDS))
    def retire(self, sid):
        self.core.retire(sid)
        self.ref.sessions.pop(sid, None)

    @rule(seconds=st.sampled_from((0.5, 1.0, TTL / 2, TTL, TTL + 0.5, FENCE_TTL, 2 * FENCE_TTL)))
    def advance_clock(self, seconds):
        self.now += seconds

    @rule()
    def reaper_tick(self):
        self.core.evict_expired()

    @rule()
    def shard_restarts(self):
        self.old_incarnation = self.core.incarnation
        self.core = SessionCore(session_ttl_seconds=TTL, fence_ttl_seconds=FENCE_TTL, clock=lambda: self.now)
        self.ref = Reference()

    @invariant()
    def every_session_looks_the_same(self):
        self.ref.settle(self.now)
        for sid in IDS:
            assert self.core.describe(sid) == self.ref.describe(sid), sid
        stats = self.core.stats()
        assert stats["sessions"] == len(self.ref.sessions)
        assert stats["documents"] == sum(len(s.docs) for s in self.ref.sessions.values())


TestCoreMatchesReference = CoreMatchesReference.TestCase
TestCoreMatchesReference.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
