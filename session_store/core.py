"""Every rule of the resources-sessions contract (docs/contract.md §B, §C), pure and Ray-free.

One `SessionCore` holds the sessions of one shard. Time comes from an injected wall clock (by default a
`SessionClock`, which never steps), so tests can jump it and fences keep their meaning across processes and
restarts.

Where each rule lives:

| rule (contract)                                   | method                                          |
|---------------------------------------------------|-------------------------------------------------|
| episode seed, retried seed, conflicts (§C.2, D4)  | `seed_episode`                                  |
| agent-run seed (§C.3)                             | `seed_agent_run`                                |
| close and its fence (§C.4, Decisions 2, 3)        | `close`, `_fence`, `_set_mark`                  |
| retire (§C.8, Decision 8)                         | `retire`                                        |
| masked verify, verdict cache (§C.5, D6, D7)       | `plan_verify`, `finish_verify`, `record_verdict`|
| stateful tools on a session not open (§C.6)       | `put_document`, `read_documents`, `check_open`  |
| what a verify's answer is grounded in             | `document_refs`, `Scored.documents`             |
| TTL eviction and expired marks (§C.9, D10)        | `evict_expired`, `_evict`, `_open`              |
| lost sessions: incarnations in cookies            | `_note_if_lost`, `mark_lost`                    |
| durable marks (fences, expired marks, seeds)      | `Mark`, `wants_mark`, `learn_mark`, `take_changes` |
| one owner per record: another life took it over   | `_change`, `forget`                             |
| documents by content, reference counts            | `DocumentRef`, `_refs`, `referenced_digests`    |

Lost sessions. A shard that restarts comes back empty under a new `incarnation`. Cookies carry the incarnation
of the shard that seeded them, so a restarted shard can tell a session it lost from one it never had, and
fences a lost ID instead of serving it empty.

Durable marks. Fences and expired marks must outlive the shard's process, or a late seed after a crash would
re-create a closed ID. The core keeps them in memory and lists every change in `take_mark_writes()`; its shell
writes those to a durable store before it answers, and hands marks it reads back to `learn_mark()` when an ID
is not open here and the core `wants_mark()` it.

Durable seeds. An episode seed is written too, as a mark that names the incarnation holding it open
(`Mark.open_in`), and deleted or replaced by a fence when the session ends. A later life of the shard that reads
it back for an ID it does not hold knows that the session was open in a life that is gone: it is lost (tools 404
`session_lost`, verify masked, seeds 409), whether or not a cookie names it.

One owner at a time. Two lives of a shard can run at once (a redeploy's old and new shard actors, two
processes over one Redis). The record of an open session names the life that holds it open (`open_in`), and
every write says which owner it expects the record to have (`take_changes`): the life that last wrote it, or
none. The store refuses a write whose expectation is wrong, so a life that read the record and took the session
over (restored it, or fenced it lost) fences out the one that held it: that one `forget`s the ID and reads it
again (a record that still names it is then another life's: what it held is gone). A verify that scores writes
the record too, so a life that was taken over never scores.

Expiry index. The session TTL is fixed for a core's life and the clock never goes back, so sessions expire in
the order they were seeded. Keeping the sessions dict in that order (a re-seed re-inserts at the end) makes it
the expiry index: an eviction pass pops from the front and costs time proportional to what it evicts. Marks are
kept the same way, nearly in order; every lookup checks the exact expiry, so behaviour never depends on that.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any, Literal

from .clock import SessionClock
from .errors import DocumentRefused, SessionConflict, SessionLost, StoreFull

__all__ = [
    "Cached",
    "canonical_digest",
    "Changes",
    "Claims",
    "Clock",
    "DOCUMENT",
    "document_part",
    "DocumentRef",
    "DocumentsView",
    "EpisodeSeed",
    "EvictionReport",
    "FenceCause",
    "GradeNow",
    "HEAD",
    "JsonDict",
    "Limits",
    "Mark",
    "Masked",
    "merge_parts",
    "NO_CLAIMS",
    "Pending",
    "Scored",
    "Seeded",
    "SeedKind",
    "Session",
    "SessionCore",
    "StoredDocument",
    "Verdict",
    "VERDICT",
    "verdict_part",
    "VerifyOutcome",
    "VerifyPlan",
]

Clock = Callable[[], float]
JsonDict = dict[str, Any]
SeedKind = Literal["episode", "agent_run"]


@dataclass(frozen=True)
class EpisodeSeed:
    """What an episode seed records (contract §C.2, Decision 4): compared as a whole to spot conflicts."""

    episode_id: JsonDict  # canonical {"rollout_id": str, "attempt": int}
    task_id: JsonDict  # {"taskset": str, "task_id": str}
    task_data_digest: str  # digest of the canonical JSON of task_data


@dataclass(frozen=True)
class Claims:
    """What the request's signed cookie says about its session: which shard life seeded it, and how."""

    incarnation: str | None = None
    kind: SeedKind | None = None


NO_CLAIMS = Claims()
_FORGOTTEN_KEPT = 65_536  # IDs a core remembers were taken from it (the oldest are dropped first)


@dataclass(frozen=True)
class DocumentRef:
    """A stored document: the digest of its text (the text itself lives once, app-wide), its length, and the URL
    it came from, so a replica can parse a filing again if the document store lost its text."""

    digest: str
    chars: int
    url: str


@dataclass(frozen=True)
class Verdict:
    """The fields that rebuild a verify row for an identical re-send (Decision 7); never the echoed trajectory."""

    reward: float
    judge_rating: int | None = None
    judge_text: str | None = None
    failure_kind: str | None = None


@dataclass
class Session:
    started_at: float
    episode: EpisodeSeed | None  # None for an agent-run session
    documents: dict[str, DocumentRef] = field(default_factory=dict)
    # body digest -> verdict, oldest first; a plain dict because an empty one is left out of garbage collections
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    judging: dict[str, float] = field(default_factory=dict)  # body digest -> when its judge lease lapses
    used_at: float = 0.0  # when a stateful tool last named it (retire_if_idle)


FenceCause = Literal["closed", "evicted", "lost"]


@dataclass(frozen=True)
class Mark:
    """What stays of an ID that is not open: a fence (closed, evicted or lost; refuses seeds), an expired mark
    (verify says session_expired), or both. This is the record that is kept durably."""

    fence_until: float | None = None
    cause: FenceCause | None = None
    episode_id: JsonDict | None = None  # the closing (or evicted) episode; None when nobody can be named
    expired_until: float | None = None
    open_in: str | None = None  # a durable seed: the incarnation that holds the session open (then fence_until
    # is when its evicted fence would lapse, the last moment anything could depend on the record)
    session: JsonDict | None = None  # with durable sessions, everything the open session holds (`_record`)

    @property
    def drop_at(self) -> float:
        return max(self.fence_until or 0.0, self.expired_until or 0.0)

    def fenced(self, now: float) -> bool:
        return self.fence_until is not None and self.fence_until > now

    def expired(self, now: float) -> bool:
        return self.expired_until is not None and self.expired_until > now


class _Marks:
    """The marks a core holds, by ID, nearly in drop order. A shard holds every closed session's fence for
    fence_ttl_seconds, so each is kept as a tuple of atoms and its episode's keys and values in one tuple: the
    garbage collector stops tracking such tuples in its first passes over them, where it would walk a Mark in every
    full collection, and those stall the shard's loop for as long as the walk takes."""

    __slots__ = ("_rows",)

    def __init__(self) -> None:
        self._rows: dict[str, tuple[Any, ...]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, sid: object) -> bool:
        return sid in self._rows

    def get(self, sid: str) -> Mark | None:
        row = self._rows.get(sid)
        return None if row is None else _unpacked(row)

    def pop(self, sid: str) -> Mark | None:
        row = self._rows.pop(sid, None)
        return None if row is None else _unpacked(row)

    def put(self, sid: str, mark: Mark) -> None:
        episode = None if mark.episode_id is None else tuple(chain.from_iterable(mark.episode_id.items()))
        self._rows[sid] = (mark.fence_until, mark.cause, episode, mark.expired_until, mark.open_in, mark.session)

    def values(self) -> list[Mark]:
        return [_unpacked(row) for row in self._rows.values()]

    def first(self) -> tuple[str, Mark]:
        sid, row = next(iter(self._rows.items()))
        return sid, _unpacked(row)


def _unpacked(row: tuple[Any, ...]) -> Mark:
    fence_until, cause, episode, expired_until, open_in, session = row
    return Mark(
        fence_until,
        cause,
        None if episode is None else dict(zip(episode[::2], episode[1::2], strict=True)),
        expired_until,
        open_in,
        session,
    )


HEAD = "m"  # a durable record's part that holds all but its documents and verdicts
DOCUMENT, VERDICT = "d:", "v:"  # the prefixes of a document's part (its key after) and a verdict's (its digest)


def document_part(key: str) -> str:
    return DOCUMENT + key


def verdict_part(body_digest: str) -> str:
    return VERDICT + body_digest


def merge_parts(first: frozenset[str] | None, then: frozenset[str] | None) -> frozenset[str] | None:
    """The parts two changes in a row changed (None: the whole record)."""
    return None if first is None or then is None else first | then


@dataclass(frozen=True)
class Changes:
    """Durable record changes, by ID: the record as it now is (None: deleted), the parts that changed (None: all),
    and the owner the stored record had before them."""

    records: dict[str, Mark | None]
    parts: dict[str, frozenset[str] | None]
    expected: dict[str, str | None]


@dataclass(frozen=True)
class Limits:
    """Bounds on what one session and one shard may hold (settings: max_*); the defaults are generous."""

    documents_per_session: int = 64
    chars_per_session: int = 200_000_000
    verdicts_per_session: int = 16
    sessions: int = 1_000_000
    marks: int = 4_000_000
    # Agent-run sessions among them: a client that drops its cookie seeds a new one each time, and must not crowd
    # out the episodes (the app has no other identity for a client: Serve's ingress passes on no address)
    agent_run_sessions: int = 250_000


@dataclass(frozen=True)
class Seeded:
    created: bool  # False for a retried episode seed
    incarnation: str  # goes into the session cookie
    started_at: float  # so is this: the time budget of the search tools needs no shard call (§A.15)


# ----- what /verify must do (§C.5): a tagged union -----


@dataclass(frozen=True)
class Masked:
    failure_kind: Literal["session_lost", "session_expired"]
    reason: str


@dataclass(frozen=True)
class Cached:
    verdict: Verdict
    documents: dict[str, DocumentRef] | None = field(default=None, compare=False)  # as Scored's, for a re-send


@dataclass(frozen=True)
class GradeNow:
    """plan_verify: grade the answer now (a plan, where Scored is an outcome)."""

    record: bool  # an open episode session: record the verdict (record_verdict) so a re-send gets it back


@dataclass(frozen=True)
class Pending:
    """An identical verify is being judged right now; ask again shortly and share its verdict."""

    retry_after: float


@dataclass(frozen=True)
class Scored:
    """finish_verify: the verdict the caller brought is the answer (and was recorded if the session is open)."""

    verdict: Verdict
    released: bool  # an agent-run session was released by this verify
    # The open session's documents before any release, for grounding the row; not part of what was decided.
    documents: dict[str, DocumentRef] | None = field(default=None, compare=False)


VerifyPlan = Masked | Cached | GradeNow | Pending
VerifyOutcome = Masked | Cached | Scored


@dataclass(frozen=True)
class StoredDocument:
    overwritten: bool
    keys: list[str]  # every key of the session, in insertion order


@dataclass(frozen=True)
class DocumentsView:
    keys: list[str]
    documents: dict[str, DocumentRef]  # only the requested keys that exist


@dataclass(frozen=True)
class EvictionReport:
    sessions: int = 0
    marks: int = 0

    def __add__(self, other: EvictionReport) -> EvictionReport:
        return EvictionReport(self.sessions + other.sessions, self.marks + other.marks)


# Keyed by Mark.cause. Every fence this core sets names a cause; one read back from a store without a known cause
# still fences (`_why`), never a 500.
_FENCE_WHY: dict[FenceCause | None, str] = {
    "closed": "it was closed",
    "evicted": "it outlived session_ttl_seconds and was evicted",
    "lost": "the shard holding it restarted (or the app was redeployed) and its state is gone",
}


def _why(cause: FenceCause | None) -> str:
    return _FENCE_WHY.get(cause, "it was fenced")


class SessionCore:
    def __init__(
        self,
        *,
        session_ttl_seconds: float,
        fence_ttl_seconds: float | None = None,
        clock: Clock | None = None,
        incarnation: str | None = None,
        limits: Limits = Limits(),
        durable_sessions: bool = False,
    ):
        self.session_ttl = float(session_ttl_seconds)
        self.fence_ttl = float(session_ttl_seconds if fence_ttl_seconds is None else fence_ttl_seconds)
        self.clock = clock or SessionClock()
        self.limits = limits
        self.incarnation = incarnation or uuid.uuid4().hex
        self._sessions: dict[str, Session] = {}  # in seed order: the session expiry index
        self._idle: OrderedDict[str, None] = OrderedDict()  # the same IDs, least recently used first (`stalled`)
        self._marks = _Marks()  # nearly in drop order
        self._mark_writes: dict[str, Mark | None] = {}  # changed since the shell last took them; None: deleted
        self._mark_parts: dict[str, frozenset[str] | None] = {}  # per change, the parts it changed (None: all)
        self._owners: dict[str, str] = {}  # ID -> the life the stored record names as holding it open
        self._expected: dict[str, str | None] = {}  # ID -> its record's owner before the changes not yet taken
        self._lapsed_owners: dict[str, str] = {}  # owners of lapsed records read since the last take
        self._forgotten: dict[str, None] = {}  # IDs taken from this life (`forget`), oldest first, until read again
        self._refs: Counter[str] = Counter()  # document digest -> how many session keys name it
        self.counters: Counter[str] = Counter()  # what the contract decided, for the operator's metrics
        self._held: Counter[str] = Counter()  # totals kept as they change, so stats() costs O(1)
        self.durable_sessions = durable_sessions
        self._restored: list[tuple[float, str]] = []  # (expiry, ID) of restored sessions, outside the seed order

    # ----- durable marks -----

    def wants_mark(self, sid: str) -> bool:
        """Whether a durable mark of `sid` could change what the core decides: it is neither open nor marked here."""
        return sid not in self._sessions and sid not in self._marks

    def learn_mark(self, sid: str, mark: Mark) -> None:
        """A mark read back from the durable store. What this core holds is newer, so it wins: so does a seed
        this life wrote (the session was released since), unless the ID was taken from this life since (`forget`):
        what this life held of it is gone. Another life's seed is a lost session, or restored:
        StoreFull when the shard holds as many sessions as it may."""
        if not self.wants_mark(sid):
            return
        if mark.drop_at <= self.clock():
            if mark.open_in not in (None, self.incarnation):  # lapsed, but stored until the store drops it
                self._lapsed_owners[sid] = mark.open_in
            return
        forgotten = sid in self._forgotten
        self._forgotten.pop(sid, None)
        if mark.open_in is not None:
            if mark.open_in == self.incarnation and not forgotten:
                return
            # Another life's: this one takes it over, and its write fences that life out.
            if mark.session is not None and self.durable_sessions:
                self._check_capacity("restore it")  # a restore is a session like any other
                self._owners[sid] = mark.open_in
                self._restore(sid, mark.session)
                return
            self._owners[sid] = mark.open_in
            # The episode stays named: a close for another episode is 409 in every life (§C.4).
            self._set_mark(sid, Mark(fence_until=mark.fence_until, cause="lost", episode_id=mark.episode_id))
            return
        self._marks.put(sid, mark)
        self._count_mark(mark, +1)

    def take_changes(self) -> Changes:
        """The record changes since the last take: for each, the record as it now is, the parts that changed, and
        the owner the record had before (None: held open by no life): the store writes a change only over that
        owner, or over this life."""
        changes = Changes(self._mark_writes, self._mark_parts, self._expected)
        self._mark_writes, self._mark_parts, self._expected = {}, {}, {}
        self._lapsed_owners.clear()
        return changes

    def take_mark_writes(self) -> dict[str, Mark | None]:
        return self.take_changes().records

    def forget(self, sid: str) -> None:
        """Another life holds the ID's record now (the store refused a write over it): drop what this life held
        of it, writing nothing. The next operation on it reads the record again."""
        self._drop_session(sid)
        held = self._marks.pop(sid)
        if held is not None:
            self._count_mark(held, -1)
        for kept in (self._owners, self._mark_writes, self._mark_parts, self._expected):
            kept.pop(sid, None)
        # A record read back that still names this life is no longer this life's to trust: what it held is gone.
        self._forgotten.pop(sid, None)
        self._forgotten[sid] = None
        if len(self._forgotten) > _FORGOTTEN_KEPT:
            del self._forgotten[next(iter(self._forgotten))]
        self.counters["superseded"] += 1

    # ----- seeds (§C.2, §C.3) -----

    def seed_episode(self, sid: str, seed: EpisodeSeed, claims: Claims = NO_CLAIMS) -> Seeded:
        """Create the episode session, or accept a retry of the same seed."""
        self.evict_expired()
        session = self._open(sid)
        if session is None:
            self._note_if_lost(sid, claims)
        fence = self._fence(sid)
        if fence is not None:
            self._conflict("fenced")
            raise SessionConflict(
                f"Resources session {sid!r} cannot be seeded: {_why(fence.cause)}, and its ID stays fenced "
                "for fence_ttl_seconds. Seed a new resources_session_id."
            )
        if session is not None:
            if session.episode is None:
                self._conflict("episode_seed_on_agent_run")
                raise SessionConflict(
                    f"Resources session {sid!r} is an open agent-run session; an episode seed cannot take it over. "
                    "Seed a new resources_session_id."
                )
            if session.episode != seed:
                self._conflict("seed_mismatch")
                raise SessionConflict(_seed_conflict_message(sid, session.episode, seed))
            self.counters["seeds.episode.retried"] += 1
            self._write_session(sid, session, frozenset())  # a retry of a seed another life has closed is 409
            return Seeded(False, self.incarnation, session.started_at)  # documents and time budget untouched
        self._check_capacity()
        self._clear_expired_mark(sid)
        started = self.clock()
        self._sessions[sid] = session = Session(started_at=started, episode=seed, used_at=started)
        self._idle[sid] = None
        self._write_session(sid, session)  # the durable seed
        self.counters["seeds.episode.created"] += 1
        return Seeded(True, self.incarnation, started)

    def seed_agent_run(self, sid: str, claims: Claims = NO_CLAIMS) -> Seeded:
        """Reset the cookie's session (§C.3). A reset starts afresh, so a lost agent-run life does not matter;
        a lost episode does: its ID is fenced, and the reset is refused like any agent-run seed on an episode."""
        self.evict_expired()
        session = self._open(sid)
        if session is not None and session.episode is not None:
            self._conflict("agent_run_seed_on_episode")
            raise SessionConflict(
                f"Session {sid!r} holds an episode seed; an agent-run seed would wipe its documents. "
                "Close the episode with /close_session first, or call the tools without seeding."
            )
        if session is None and claims.kind == "episode":
            self._note_if_lost(sid, claims)
        fence = self._fence(sid)
        if fence is not None:
            self._conflict("fenced")
            raise SessionConflict(
                f"Session {sid!r} cannot be seeded: {_why(fence.cause)}. Start again without the old cookie."
            )
        if session is None:
            self._check_capacity()
            if self._held["agent_run_sessions"] >= self.limits.agent_run_sessions:
                raise StoreFull(
                    "This shard holds as many agent-run sessions as it may (max_agent_run_sessions_per_shard). "
                    "Send the session cookie back to go on with yours, verify or close the ones you are done "
                    "with, or seed episodes; retry shortly."
                )
        self._release(sid)  # re-insert at the end: the expiry index stays in seed order
        self._clear_expired_mark(sid)
        started = self.clock()
        self._sessions[sid] = session = Session(started_at=started, episode=None, used_at=started)
        self._idle[sid] = None
        self._held["agent_run_sessions"] += 1
        self._write_session(sid, session)
        self.counters["seeds.agent_run"] += 1
        return Seeded(True, self.incarnation, started)

    # ----- close and retire (§C.4, §C.8) -----

    def close(self, sid: str, episode_id: JsonDict) -> None:
        session = self._open(sid)
        if session is not None and session.episode is not None and session.episode.episode_id != episode_id:
            self._conflict("close_names_another_episode")
            raise SessionConflict(
                f"Resources session {sid!r} was seeded for episode {_show(session.episode.episode_id)}; this close "
                f"names episode {_show(episode_id)}. Close it with episode_id {_show(session.episode.episode_id)}, "
                "or seed and close a new resources_session_id for this episode."
            )
        fence = self._fence(sid)
        if fence is not None and fence.episode_id is not None and fence.episode_id != episode_id:
            self._conflict("close_names_another_episode")
            raise SessionConflict(
                f"Resources session {sid!r} belongs to episode {_show(fence.episode_id)} and is not open: "
                f"{_why(fence.cause)}. This close names episode {_show(episode_id)}. Repeat the close with "
                f"episode_id {_show(fence.episode_id)}, or use a new resources_session_id for this episode."
            )
        if fence is None and session is None and sid not in self._marks and len(self._marks) >= self.limits.marks:
            raise StoreFull("This shard holds as many fences as it may (max_marks_per_shard); retry shortly.")
        self._release(sid)
        self.counters["closes"] += 1
        if fence is None:  # a repeated close keeps the first fence and does not extend it (Decision 2)
            held = self._marks.get(sid) or Mark()
            self._set_mark(
                sid, replace(held, fence_until=self.clock() + self.fence_ttl, cause="closed", episode_id=episode_id)
            )

    def retire(self, sid: str) -> None:
        """Release everything the session holds; idempotent; no fence (Decision 8)."""
        self._release(sid)

    def retire_if_idle(self, sid: str, idle_seconds: float) -> float:
        """Retire an agent-run session no stateful tool has named for `idle_seconds`. Returns 0 when nothing is left
        to retire, else how long until it would be idle. An MCP session's end uses this: its calls may go on through
        other replicas by the cookie, which its replica never sees, and those calls pass here."""
        session = self._open(sid)
        if session is None or session.episode is not None:
            return 0.0
        idle_in = session.used_at + idle_seconds - self.clock()
        if idle_in > 0:
            return idle_in
        self._release(sid)
        return 0.0

    def mark_lost(self, sid: str) -> None:
        """The session's state is gone although its shard is not (a document whose text could not be recovered):
        release it and fence it as lost, so its verify is masked and no late seed revives it."""
        self._release(sid)
        if self._fence(sid) is None:
            self._set_mark(
                sid,
                replace(
                    self._marks.get(sid) or Mark(),
                    fence_until=self.clock() + self.fence_ttl,
                    cause="lost",
                    episode_id=None,
                ),
            )

    # ----- verify (§C.5, Decisions 6, 7) -----

    def plan_verify(
        self, sid: str, body_digest: str, claims: Claims = NO_CLAIMS, lease_seconds: float = 120.0
    ) -> VerifyPlan:
        """For a costly or stochastic grader: what to do before grading. An identical verify in flight holds a
        lease, so its twins wait for its verdict instead of judging again (Decision 7 with a stochastic judge)."""
        masked = self._masked(sid, claims)
        if masked is not None:
            return masked
        session = self._sessions.get(sid)
        if session is None:
            self.counters["verifies.scored"] += 1
            return GradeNow(record=False)  # never seeded, or an agent-run session already verified (Decision 6)
        if session.episode is None:
            self._release(sid)  # verify is the agent-run session's release (legacy agents never close)
            self.counters["verifies.scored"] += 1
            return GradeNow(record=False)
        cached = self._cached(sid, session, body_digest)
        if cached is not None:
            return cached
        now = self.clock()
        lapse = session.judging.get(body_digest)
        if lapse is not None and lapse > now:
            return Pending(retry_after=min(0.25, lapse - now))
        session.judging[body_digest] = now + lease_seconds
        self._write_session(sid, session, frozenset())  # scored only while this life holds the record (see above)
        self.counters["verifies.scored"] += 1
        return GradeNow(record=True)

    def record_verdict(self, sid: str, body_digest: str, verdict: Verdict | None) -> None:
        """Keep the verdict of a planned verify (None: grading failed, nothing to keep) and end its lease."""
        session = self._open(sid)
        if session is not None and session.episode is not None:
            session.judging.pop(body_digest, None)
            if verdict is not None:
                self._keep_verdict(sid, session, body_digest, verdict)

    def finish_verify(self, sid: str, body_digest: str, verdict: Verdict, claims: Claims = NO_CLAIMS) -> VerifyOutcome:
        """For a cheap, deterministic grader: the caller graded first, so one call settles the verify."""
        masked = self._masked(sid, claims)
        if masked is not None:
            return masked
        session = self._sessions.get(sid)
        if session is not None and session.episode is not None:
            cached = self._cached(sid, session, body_digest)
            if cached is not None:
                return cached
            self._keep_verdict(sid, session, body_digest, verdict)
        documents = dict(session.documents) if session is not None else None
        released = session is not None and session.episode is None
        if released:
            self._release(sid)
        self.counters["verifies.scored"] += 1
        return Scored(verdict, released, documents)

    # ----- the stateful tools (§C.6) -----

    def check_open(self, sid: str, claims: Claims = NO_CLAIMS) -> None:
        self._write_session(sid, self._require_open(sid, claims), frozenset())  # only while this life holds it

    def document_refs(self, sid: str) -> dict[str, DocumentRef] | None:
        """The open session's documents, or None. No side effects (no 404 counted, nothing fenced): grounding
        asks this before a verify decides what the session is."""
        session = self._open(sid)
        return None if session is None else dict(session.documents)

    def now(self, sid: str) -> float:
        """This shard's clock, which every session's start and budget here are timed by (`sid` routes the call)."""
        return self.clock()

    def started_at(self, sid: str) -> float | None:
        """When the open session was seeded, or None: a session that is not open has no time budget (§A.15).
        No side effects: the search tools ask this only to confirm a budget their cookie says is spent."""
        session = self._open(sid)
        return None if session is None else session.started_at

    def put_document(self, sid: str, key: str, ref: DocumentRef, claims: Claims = NO_CLAIMS) -> StoredDocument:
        session = self._require_open(sid, claims)
        documents = session.documents
        held = documents.get(key)
        if held is None and len(documents) >= self.limits.documents_per_session:
            raise DocumentRefused(
                f"ERROR: this session already holds {len(documents)} documents, the most it may "
                f"(max_documents_per_session). Overwrite an existing key instead: {', '.join(documents)}."
            )
        chars = sum(d.chars for d in documents.values()) - (held.chars if held else 0) + ref.chars
        if chars > self.limits.chars_per_session:
            raise DocumentRefused(
                f"ERROR: storing this document would put {chars:,} characters in this session, over its "
                f"{self.limits.chars_per_session:,}-character limit (max_session_chars). Overwrite a key "
                "you no longer need instead."
            )
        if held is not None:
            self._unref(held.digest)
        documents[key] = ref
        self._refs[ref.digest] += 1
        self._held.update(documents=0 if held else 1, document_chars=ref.chars - (held.chars if held else 0))
        # Its own part, or (not durable) none: the owner is checked all the same (_require_open's callers do).
        self._write_session(sid, session, frozenset({document_part(key)}) if self.durable_sessions else frozenset())
        return StoredDocument(held is not None, list(documents))

    def read_documents(self, sid: str, keys: list[str], claims: Claims = NO_CLAIMS) -> DocumentsView:
        session = self._require_open(sid, claims)
        self._write_session(sid, session, frozenset())  # read only while this life holds the record: never split
        return DocumentsView(list(session.documents), {k: session.documents[k] for k in keys if k in session.documents})

    # ----- TTL (§C.9, Decision 10) -----

    def evict_expired(self) -> EvictionReport:
        now = self.clock()
        sessions = 0
        while self._restored and self._restored[0][0] < now:
            _, sid = heapq.heappop(self._restored)
            session = self._sessions.get(sid)
            if session is not None and self._past_ttl(session, now):
                self._evict(sid, session)
                sessions += 1
        while self._sessions:
            sid, session = next(iter(self._sessions.items()))
            if not self._past_ttl(session, now):
                break
            self._evict(sid, session)
            sessions += 1
        marks = 0
        while self._marks:
            sid, mark = self._marks.first()
            if mark.drop_at > now:
                break
            self._set_mark(sid, None)
            marks += 1
        return EvictionReport(sessions, marks)

    def referenced_digests(self) -> set[str]:
        """The document texts some session here still names: the document store keeps these."""
        return set(self._refs)

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

    def inspect(self, sid: str) -> JsonDict:
        """What the session inspector shows of an ID, read from memory alone (it restores, evicts and writes
        nothing): while open, its kind, seed, age, last use, documents and verdicts; else its fence or mark."""
        now, session, fence = self.clock(), self._sessions.get(sid), self._fence(sid)
        shown: JsonDict = {"id": sid, "open": session is not None, "fence_cause": fence.cause if fence else None}
        if session is None:
            return {**shown, "expired": self._is_marked_expired(sid)}
        seed = session.episode
        return {
            **shown,
            "kind": "agent_run" if seed is None else "episode",
            "episode_id": seed.episode_id if seed else None,
            "task_id": seed.task_id if seed else None,
            "age_seconds": now - session.started_at,
            "idle_seconds": now - session.used_at,
            "ttl_left_seconds": session.started_at + self.session_ttl - now,
            "documents": [
                {"key": key, "url": ref.url, "chars": ref.chars, "digest": ref.digest}
                for key, ref in session.documents.items()
            ],
            "verdicts": [
                {"reward": v.reward, "failure_kind": v.failure_kind, "judge_rating": v.judge_rating}
                for v in session.verdicts.values()
            ],
        }

    def stalled(self, idle_seconds: float, limit: int = 20, most: int = 10_000) -> JsonDict:
        """Open sessions no stateful call has named for `idle_seconds`: how many (counted up to `most`) and the
        `limit` idlest, in time proportional to those counted."""
        now, count = self.clock(), 0
        idlest: list[JsonDict] = []
        for sid in self._idle:
            session = self._sessions[sid]
            idle = now - session.used_at
            if idle < idle_seconds or count >= most:
                break
            if self._past_ttl(session, now):
                continue  # its eviction is due, not a stall
            count += 1
            if len(idlest) < limit:
                kind = "agent_run" if session.episode is None else "episode"
                idlest.append({"id": sid, "kind": kind, "idle_seconds": idle})
        return {"count": count, "idlest": idlest}

    def counts(self) -> dict[str, int]:
        return {"sessions": len(self._sessions), "marks": len(self._marks), "digests": len(self._refs)}

    def stats(self) -> JsonDict:
        """What the shard holds, from totals kept as they change (O(1): the counters route asks every shard).
        A fence or expired mark counts until the eviction pass drops its record, at most a batch or tick late."""
        held = self._held
        return {
            "sessions": len(self._sessions),
            "agent_run_sessions": held["agent_run_sessions"],
            "documents": held["documents"],
            "document_chars": held["document_chars"],
            "digests": len(self._refs),
            "fences": held["fences"],
            "expired_marks": held["expired_marks"],
            "verdicts": held["verdicts"],
        }

    # ----- internals -----

    def _past_ttl(self, session: Session, now: float) -> bool:
        return now - session.started_at > self.session_ttl

    def _open(self, sid: str) -> Session | None:
        """The open session, if any. A session past its TTL is evicted here: never served between reaper ticks."""
        session = self._sessions.get(sid)
        if session is not None and self._past_ttl(session, self.clock()):
            self._evict(sid, session)
            return None
        return session

    def _evict(self, sid: str, session: Session) -> None:
        """Evict a session past its TTL. Its marks count from the instant it expired, not from when the eviction
        ran, so what the contract shows never depends on when the reaper happened to tick."""
        self._release(sid)
        self.counters["evicted"] += 1
        lapse = session.started_at + self.session_ttl + self.fence_ttl
        mark = replace(self._marks.get(sid) or Mark(), expired_until=lapse)
        if session.episode is not None and self._fence(sid) is None:
            mark = replace(mark, fence_until=lapse, cause="evicted", episode_id=session.episode.episode_id)
        self._set_mark(sid, mark)

    def _release(self, sid: str) -> None:
        session = self._sessions.get(sid)
        if session is not None and (session.episode is not None or self.durable_sessions):
            self._change(sid, None)  # its durable record goes (a fence set next replaces it)
        self._drop_session(sid)

    def _drop_session(self, sid: str) -> None:
        session = self._sessions.pop(sid, None)
        self._idle.pop(sid, None)
        if session is not None:
            self._held["agent_run_sessions"] -= session.episode is None
            for ref in session.documents.values():
                self._unref(ref.digest)
            self._held.subtract(  # a mapping: typeshed's subtract takes no keywords (the runtime does)
                {
                    "documents": len(session.documents),
                    "verdicts": len(session.verdicts),
                    "document_chars": sum(d.chars for d in session.documents.values()),
                }
            )

    def _change(self, sid: str, mark: Mark | None, parts: frozenset[str] | None = None) -> None:
        """List a change of the ID's durable record (`parts`: the only parts it changed; None: the whole record),
        noting the owner the record had before the first change."""
        if sid not in self._expected:
            self._expected[sid] = self._owners.get(sid, self._lapsed_owners.get(sid))
        self._mark_parts[sid] = merge_parts(self._mark_parts[sid], parts) if sid in self._mark_writes else parts
        self._mark_writes[sid] = mark
        if mark is not None and mark.open_in is not None:
            self._owners[sid] = mark.open_in
        else:
            self._owners.pop(sid, None)

    def _unref(self, digest: str) -> None:
        self._refs[digest] -= 1
        if self._refs[digest] <= 0:
            del self._refs[digest]

    def _set_mark(self, sid: str, mark: Mark | None) -> None:
        held = self._marks.pop(sid)  # re-insert at the end: the marks stay nearly in drop order
        if held is not None:
            self._count_mark(held, -1)
        if mark is not None and (mark.fence_until is not None or mark.expired_until is not None):
            self._marks.put(sid, mark)
            self._change(sid, mark)
            self._count_mark(mark, +1)
        else:
            self._change(sid, None)

    def _count_mark(self, mark: Mark, sign: int) -> None:
        self._held["fences"] += sign * (mark.fence_until is not None)
        self._held["expired_marks"] += sign * (mark.expired_until is not None)

    def _fence(self, sid: str) -> Mark | None:
        mark = self._marks.get(sid)
        return mark if mark is not None and mark.fenced(self.clock()) else None

    def _is_marked_expired(self, sid: str) -> bool:
        mark = self._marks.get(sid)
        return mark is not None and mark.expired(self.clock())

    def _clear_expired_mark(self, sid: str) -> None:
        """ "A new agent-run seed for the ID clears the mark" (§C.3); so does a new episode seed of an unfenced ID."""
        mark = self._marks.get(sid)
        if mark is not None:
            self._set_mark(sid, replace(mark, expired_until=None) if mark.fenced(self.clock()) else None)

    def _note_if_lost(self, sid: str, claims: Claims) -> None:
        """A cookie from another life of this shard names a session that life held: fence it as lost."""
        if claims.incarnation and claims.incarnation != self.incarnation and self._fence(sid) is None:
            self._set_mark(
                sid,
                replace(
                    self._marks.get(sid) or Mark(),
                    fence_until=self.clock() + self.fence_ttl,
                    cause="lost",
                    episode_id=None,
                ),
            )

    def _masked(self, sid: str, claims: Claims) -> Masked | None:
        session = self._open(sid)
        if self._is_marked_expired(sid):
            self.counters["verifies.masked.session_expired"] += 1
            return Masked(
                "session_expired", f"Session {sid!r} outlived session_ttl_seconds and was evicted before verify."
            )
        if session is None:
            self._note_if_lost(sid, claims)
        fence = self._fence(sid)
        if fence is not None:
            self.counters["verifies.masked.session_lost"] += 1
            return Masked("session_lost", f"Session {sid!r} is not open: {_why(fence.cause)}.")
        return None

    def _cached(self, sid: str, session: Session, body_digest: str) -> Cached | None:
        verdict = session.verdicts.get(body_digest)
        if verdict is None:
            return None
        self._write_session(sid, session, frozenset())  # given back only while this life holds the record
        self.counters["verifies.cached"] += 1
        return Cached(verdict, dict(session.documents))

    def _keep_verdict(self, sid: str, session: Session, body_digest: str, verdict: Verdict) -> None:
        held = len(session.verdicts)
        session.verdicts[body_digest] = verdict
        parts = {verdict_part(body_digest)}
        while len(session.verdicts) > self.limits.verdicts_per_session:  # the oldest is judged again if re-sent
            oldest = next(iter(session.verdicts))
            del session.verdicts[oldest]
            parts.add(verdict_part(oldest))
        self._held["verdicts"] += len(session.verdicts) - held
        # The verdict's part, or (not durable) no part at all: the owner is checked all the same (see _cached).
        self._write_session(sid, session, frozenset(parts) if self.durable_sessions else frozenset())

    # ----- durable sessions -----

    def _write_session(self, sid: str, session: Session, parts: frozenset[str] | None = None) -> None:
        """The open session's durable record: an episode's seed always (so a later life knows it is lost), and,
        with durable sessions, everything the session holds, for a later life to restore. `parts`: the only ones
        that changed (`HEAD`, a document's, a verdict's; none: the owner is checked, nothing written); None: all."""
        if session.episode is None and not self.durable_sessions:
            return
        self._change(
            sid,
            Mark(
                fence_until=session.started_at + self.session_ttl + self.fence_ttl,
                episode_id=session.episode.episode_id if session.episode else None,
                open_in=self.incarnation,
                session=_record(session) if self.durable_sessions else None,
            ),
            parts,
        )

    def _restore(self, sid: str, record: JsonDict) -> None:
        """An open session of an earlier life, as its record has it; this life holds it from now on."""
        session = _session(record)
        session.used_at = self.clock()  # the record keeps no use: a restore counts as one
        self._sessions[sid] = session
        self._idle[sid] = None
        self._held["agent_run_sessions"] += session.episode is None
        for ref in session.documents.values():
            self._refs[ref.digest] += 1
        self._held.update(
            documents=len(session.documents),
            verdicts=len(session.verdicts),
            document_chars=sum(d.chars for d in session.documents.values()),
        )
        self.counters["restored"] += 1
        if self._past_ttl(session, self.clock()):
            self._evict(sid, session)
            return
        heapq.heappush(self._restored, (session.started_at + self.session_ttl, sid))
        # Now held open by this life: written whole (the take-over's change is the whole record; an earlier
        # version wrote records in one piece).
        self._write_session(sid, session)

    def _require_open(self, sid: str, claims: Claims) -> Session:
        session = self._open(sid)
        if session is not None:  # the caller checks the record's owner as it writes (or writes nothing)
            session.used_at = self.clock()
            self._idle.move_to_end(sid)
            return session
        self.counters["session_lost"] += 1
        if self._is_marked_expired(sid):
            raise SessionLost(sid, _FENCE_WHY["evicted"])
        self._note_if_lost(sid, claims)
        fence = self._fence(sid)
        raise SessionLost(sid, _why(fence.cause) if fence else "never seeded, or already released by verify")

    def _check_capacity(self, to: str = "seed it") -> None:
        if len(self._sessions) >= self.limits.sessions:
            raise StoreFull(
                f"This shard holds as many sessions as it may (max_sessions_per_shard), too many to {to} "
                "now; retry shortly."
            )

    def _conflict(self, reason: str) -> None:
        self.counters[f"conflicts.{reason}"] += 1


def _record(session: Session) -> JsonDict:
    """What a session holds, as JSON: its start, its seed, its documents by key and its verdicts by body digest."""
    episode = session.episode
    return {
        "started_at": session.started_at,
        "episode": None if episode is None else [episode.episode_id, episode.task_id, episode.task_data_digest],
        "documents": {key: [ref.digest, ref.chars, ref.url] for key, ref in session.documents.items()},
        "verdicts": [
            [digest, v.reward, v.judge_rating, v.judge_text, v.failure_kind] for digest, v in session.verdicts.items()
        ],
    }


def _session(record: JsonDict) -> Session:
    episode = record.get("episode")
    return Session(
        started_at=float(record["started_at"]),
        episode=None if episode is None else EpisodeSeed(*episode),
        documents={key: DocumentRef(*ref) for key, ref in record.get("documents", {}).items()},
        verdicts={digest: Verdict(*verdict) for digest, *verdict in record.get("verdicts", [])},
    )


def canonical_digest(value: Any) -> str:
    """A digest of a JSON value that ignores key order (Decision 4 compares task_data this way). ASCII escapes,
    so any string, even one with an unpaired surrogate, has a digest."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _show(episode_id: JsonDict) -> str:
    return json.dumps(episode_id, sort_keys=True)


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
        f"Resources session {sid!r} is already open for episode {_show(held.episode_id)} of task "
        f"{_show(held.task_id)}; this seed differs in {', '.join(differs)}. A retried seed must repeat the original "
        "exactly; a new episode needs a new resources_session_id."
    )
