"""The pure session core against docs/contract.md §C.10 (row by row) and the Decisions it implements."""

from __future__ import annotations

import dataclasses
import gc

import pytest

from session_store import (
    Cached,
    Claims,
    DocumentRef,
    DocumentRefused,
    EpisodeSeed,
    GradeNow,
    Limits,
    Masked,
    Pending,
    Scored,
    SessionConflict,
    SessionLost,
    StoreFull,
    Verdict,
    canonical_digest,
)
from session_store.core import SessionCore

TTL = 100.0
WIN = Verdict(1.0, 2, "right")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def seed(rollout: str = "r1", attempt: int = 0, task: str = "t1", data: dict | None = None) -> EpisodeSeed:
    return EpisodeSeed(
        {"rollout_id": rollout, "attempt": attempt},
        {"taskset": "fin", "task_id": task},
        canonical_digest(data if data is not None else {"question": "q"}),
    )


def ep(rollout: str = "r1", attempt: int = 0) -> dict:
    return {"rollout_id": rollout, "attempt": attempt}


def doc(text: str) -> DocumentRef:
    """A stored document whose digest is its text, so tests can read it back from the view."""
    return DocumentRef(text, len(text), f"https://www.sec.gov/{text}")


def texts(core: SessionCore, sid: str, keys: list[str]) -> dict[str, str]:
    return {k: ref.digest for k, ref in core.read_documents(sid, keys).documents.items()}


def lost(incarnation: str, kind: str = "episode") -> Claims:
    return Claims(incarnation, kind)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def core(clock: Clock) -> SessionCore:
    return SessionCore(session_ttl_seconds=TTL, clock=clock)


def test_canonical_digest_ignores_key_order_and_takes_any_string() -> None:
    assert canonical_digest({"a": 1, "b": [1, 2]}) == canonical_digest({"b": [1, 2], "a": 1})
    assert canonical_digest({"a": 1}) != canonical_digest({"a": 2})
    assert canonical_digest({"broken emoji": "\ud83d"})  # an unpaired surrogate still has a digest


# ----- row "never seeded" -----


def test_never_seeded_episode_seed_creates(core: SessionCore) -> None:
    assert core.seed_episode("s", seed()).created is True
    assert core.describe("s")["open"] and core.describe("s")["episode"]


def test_never_seeded_tools_are_lost(core: SessionCore) -> None:
    with pytest.raises(SessionLost):
        core.put_document("s", "k", doc("text"))
    with pytest.raises(SessionLost):
        core.read_documents("s", ["k"])


def test_never_seeded_verify_is_scored(core: SessionCore) -> None:
    assert core.plan_verify("s", "d") == GradeNow(record=False)
    assert core.finish_verify("s", "d", WIN) == Scored(WIN, released=False)


def test_never_seeded_close_fences_with_callers_episode(core: SessionCore) -> None:
    core.close("s", ep("r1"))
    assert core.describe("s")["fenced"]
    with pytest.raises(SessionConflict):
        core.seed_episode("s", seed())  # the racing late seed is refused (§C.4)
    with pytest.raises(SessionConflict):
        core.close("s", ep("other"))  # Decision 3: the fence records the closing episode
    core.close("s", ep("r1"))


# ----- row "open episode" -----


def test_retried_seed_keeps_documents_and_budget(core: SessionCore, clock: Clock) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", doc("text"))
    clock.advance(30)
    again = core.seed_episode("s", seed())
    assert again.created is False and again.started_at == 1000.0  # the time budget keeps running
    assert texts(core, "s", ["k"]) == {"k": "text"}


@pytest.mark.parametrize(
    "other",
    [seed(rollout="r2"), seed(attempt=1), seed(task="t2"), seed(data={"question": "another"})],
    ids=["episode", "attempt", "task", "task_data"],
)
def test_conflicting_episode_seed_is_refused_and_changes_nothing(core: SessionCore, other: EpisodeSeed) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", doc("text"))
    with pytest.raises(SessionConflict):
        core.seed_episode("s", other)
    assert texts(core, "s", ["k"]) == {"k": "text"}


def test_agent_run_seed_on_episode_session_is_refused_and_documents_survive(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", doc("text"))
    with pytest.raises(SessionConflict):
        core.seed_agent_run("s")
    assert texts(core, "s", ["k"]) == {"k": "text"}


def test_verify_keeps_episode_session_and_caches_verdict(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    assert core.plan_verify("s", "digest") == GradeNow(record=True)
    core.record_verdict("s", "digest", WIN)
    assert core.describe("s")["open"]
    assert core.plan_verify("s", "digest") == Cached(WIN)  # Decision 7
    assert core.finish_verify("s", "digest", Verdict(0.0)) == Cached(WIN)  # a re-send never re-scores
    assert core.plan_verify("s", "other-body") == GradeNow(record=True)  # a different body is judged afresh


def test_identical_verifies_in_flight_share_one_judge_call(core: SessionCore, clock: Clock) -> None:
    core.seed_episode("s", seed())
    assert core.plan_verify("s", "d", lease_seconds=30) == GradeNow(record=True)
    assert isinstance(core.plan_verify("s", "d", lease_seconds=30), Pending)  # its twin waits
    core.record_verdict("s", "d", WIN)
    assert core.plan_verify("s", "d") == Cached(WIN)
    core.plan_verify("s", "d2", lease_seconds=30)
    core.record_verdict("s", "d2", None)  # the judge failed: nothing kept, the lease ends at once
    assert core.plan_verify("s", "d2", lease_seconds=30) == GradeNow(record=True)
    clock.advance(31)
    assert core.plan_verify("s", "d2") == GradeNow(record=True)  # a lease that lapsed (its replica died) is taken


def test_close_releases_and_fences(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", doc("text"))
    core.finish_verify("s", "d", WIN)
    core.close("s", ep())
    assert core.describe("s") == {
        "open": False,
        "episode": False,
        "documents": [],
        "fenced": True,
        "fence_cause": "closed",
        "expired": False,
    }
    assert core.stats()["documents"] == 0


def test_close_naming_another_episode_is_refused_even_after_verify(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.finish_verify("s", "d", WIN)
    with pytest.raises(SessionConflict, match='Close it with episode_id .*"rollout_id": "r1"') as refused:
        core.close("s", ep("r2"))
    assert "new resources_session_id" in str(refused.value)
    assert core.describe("s")["open"]


# ----- row "open agent-run" -----


def test_agent_run_seed_resets(core: SessionCore, clock: Clock) -> None:
    core.seed_agent_run("a")
    core.put_document("a", "k", doc("text"))
    clock.advance(10)
    assert core.seed_agent_run("a").started_at == clock.now  # the time budget restarts
    assert texts(core, "a", ["k"]) == {}


def test_agent_run_verify_releases_then_tools_are_lost(core: SessionCore) -> None:
    core.seed_agent_run("a")
    core.put_document("a", "k", doc("text"))
    assert core.finish_verify("a", "d", WIN) == Scored(WIN, released=True)
    assert core.stats()["sessions"] == 0
    with pytest.raises(SessionLost):
        core.read_documents("a", ["k"])
    assert core.finish_verify("a", "d", WIN) == Scored(WIN, released=False)  # Decision 6: scored normally


def test_close_of_agent_run_session_releases_and_fences(core: SessionCore) -> None:
    core.seed_agent_run("a")
    core.close("a", ep("anything"))
    assert core.describe("a")["fenced"] and not core.describe("a")["open"]


# ----- row "closed (fenced)" -----


def test_closed_row(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.close("s", ep())
    for attempt in (
        lambda: core.seed_episode("s", seed()),
        lambda: core.seed_episode("s", seed(rollout="x")),
        lambda: core.seed_agent_run("s"),
    ):
        with pytest.raises(SessionConflict):
            attempt()
    with pytest.raises(SessionLost):
        core.put_document("s", "k", doc("t"))
    assert core.plan_verify("s", "d").failure_kind == "session_lost"
    assert isinstance(core.finish_verify("s", "d", WIN), Masked)
    core.close("s", ep())  # repeated close: 200
    with pytest.raises(SessionConflict):
        core.close("s", ep("r2"))  # OQ3 / Decision 3


def test_repeated_close_does_not_extend_fence(core: SessionCore, clock: Clock) -> None:
    core.close("s", ep())
    clock.advance(TTL * 0.75)
    core.close("s", ep())
    clock.advance(TTL * 0.5)
    assert not core.describe("s")["fenced"]  # the first close's fence lapsed at TTL


# ----- row "evicted episode" / "evicted agent-run" -----


def test_evicted_episode_row(core: SessionCore, clock: Clock) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", doc("t"))
    clock.advance(TTL + 1)
    with pytest.raises(SessionConflict):
        core.seed_episode("s", seed())  # fenced
    with pytest.raises(SessionConflict):
        core.seed_agent_run("s")
    with pytest.raises(SessionLost):
        core.read_documents("s", ["k"])
    assert core.finish_verify("s", "d", WIN).failure_kind == "session_expired"  # takes precedence over the fence
    with pytest.raises(SessionConflict):
        core.close("s", ep("r2"))  # the fence records the seeded episode (Decision 3)
    core.close("s", ep("r1"))
    assert core.stats()["documents"] == 0


def test_evicted_agent_run_row(core: SessionCore, clock: Clock) -> None:
    core.seed_agent_run("a")
    clock.advance(TTL + 1)
    with pytest.raises(SessionLost):
        core.check_open("a")
    assert core.plan_verify("a", "d").failure_kind == "session_expired"
    core.seed_agent_run("a")  # a new agent-run seed clears the mark
    assert core.describe("a")["expired"] is False
    assert core.finish_verify("a", "d", WIN) == Scored(WIN, released=True)


def test_evicted_agent_run_id_can_be_episode_seeded(core: SessionCore, clock: Clock) -> None:
    core.seed_agent_run("a")
    clock.advance(TTL + 1)
    assert core.seed_episode("a", seed()).created is True
    assert core.plan_verify("a", "d") == GradeNow(record=True)


def test_session_past_ttl_is_never_served_between_reaper_ticks(core: SessionCore, clock: Clock) -> None:
    core.seed_episode("s", seed())
    clock.advance(TTL)
    core.put_document("s", "k", doc("t"))  # exactly at the TTL: still open (age must exceed it)
    clock.advance(0.001)
    with pytest.raises(SessionLost):
        core.read_documents("s", ["k"])


def test_seed_evicts_only_expired_sessions(core: SessionCore, clock: Clock) -> None:
    core.seed_episode("old", seed())
    clock.advance(TTL / 2)
    core.seed_episode("young", seed(rollout="r2"))
    clock.advance(TTL / 2 + 1)
    core.seed_episode("new", seed(rollout="r3"))
    assert core.stats()["sessions"] == 2
    assert core.describe("young")["open"] and core.describe("old")["expired"]


def test_eviction_pass_and_bookkeeping_are_bounded(core: SessionCore, clock: Clock) -> None:
    for i in range(50):
        core.seed_episode(f"s{i}", seed(rollout=f"r{i}"))
    clock.advance(TTL + 1)
    report = core.evict_expired()
    assert report.sessions == 50 and core.stats()["fences"] == 50 and core.stats()["expired_marks"] == 50
    clock.advance(TTL)  # fence_ttl defaults to session_ttl (Decision 2)
    assert core.evict_expired().marks == 50
    assert core.stats() == {
        "sessions": 0,
        "agent_run_sessions": 0,
        "documents": 0,
        "document_chars": 0,
        "digests": 0,
        "fences": 0,
        "expired_marks": 0,
        "verdicts": 0,
    }


def test_eviction_pass_stops_at_first_unexpired_session(clock: Clock) -> None:
    core = SessionCore(session_ttl_seconds=TTL, clock=clock)
    core.seed_agent_run("a")  # t=0
    clock.advance(TTL / 2)
    core.seed_agent_run("b")  # t=50
    clock.advance(TTL / 4)
    core.seed_agent_run("a")  # t=75: re-seeded, so it moves behind b in the expiry order
    clock.advance(TTL * 0.75 + 1)  # t=151: b is past its TTL, a is not
    assert core.evict_expired().sessions == 1
    assert core.describe("a")["open"] and not core.describe("b")["open"]


def test_fence_ttl_is_its_own_setting(clock: Clock) -> None:
    core = SessionCore(session_ttl_seconds=TTL, fence_ttl_seconds=5, clock=clock)
    core.close("s", ep())
    clock.advance(5)
    assert core.seed_episode("s", seed()).created is True  # row "fence expired": like never seeded


# ----- retire (§C.8, Decision 8) -----


def test_retire_releases_idempotently_without_fence(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", doc("t"))
    core.retire("s")
    core.retire("s")
    assert core.describe("s") == {
        "open": False,
        "episode": False,
        "documents": [],
        "fenced": False,
        "fence_cause": None,
        "expired": False,
    }
    assert core.stats()["sessions"] == 0


# ----- a restarted shard (a new incarnation) -----


def test_cookie_from_earlier_incarnation_reports_lost_not_unknown(clock: Clock) -> None:
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_episode("s", seed())
    restarted = SessionCore(session_ttl_seconds=TTL, clock=clock)  # the same shard after a restart: empty
    with pytest.raises(SessionLost, match="restarted"):
        restarted.read_documents("s", ["k"], lost(first.incarnation))
    assert restarted.plan_verify("s", "d", lost(first.incarnation)).failure_kind == "session_lost"
    with pytest.raises(SessionConflict):
        restarted.seed_episode("s", seed(), lost(first.incarnation))
    with pytest.raises(SessionConflict):
        restarted.seed_episode("s", seed())  # the loss is now fenced: a cookie-less retry cannot resurrect it
    restarted.close("s", ep())  # closing a lost session still succeeds


def test_agent_run_seed_with_a_lost_episodes_cookie_is_refused(clock: Clock) -> None:
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_episode("s", seed())
    restarted = SessionCore(session_ttl_seconds=TTL, clock=clock)
    with pytest.raises(SessionConflict, match="restarted"):  # it cannot take over the episode's ID (§C.3)
        restarted.seed_agent_run("s", lost(first.incarnation, "episode"))
    assert restarted.finish_verify("s", "d", WIN, lost(first.incarnation)).failure_kind == "session_lost"


def test_agent_run_seed_after_its_own_lost_life_just_resets(clock: Clock) -> None:
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_agent_run("a")
    restarted = SessionCore(session_ttl_seconds=TTL, clock=clock)
    assert restarted.seed_agent_run("a", lost(first.incarnation, "agent_run")).created  # a reset starts afresh


def test_verify_with_earlier_incarnation_cookie_is_masked(clock: Clock) -> None:
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_agent_run("a")
    restarted = SessionCore(session_ttl_seconds=TTL, clock=clock)
    assert restarted.finish_verify("a", "d", WIN, lost(first.incarnation, "agent_run")) == Masked(
        "session_lost",
        "Session 'a' is not open: the shard holding it restarted (or the app was redeployed) and its state is gone.",
    )


def test_current_incarnation_cookie_on_unknown_session_is_plain_never_seeded(core: SessionCore) -> None:
    with pytest.raises(SessionLost, match="never seeded"):
        core.check_open("s", Claims(core.incarnation, "episode"))
    assert not core.describe("s")["fenced"]


def test_put_document_reports_overwrite_and_key_order(core: SessionCore) -> None:
    core.seed_agent_run("a")
    assert core.put_document("a", "b", doc("1")).overwritten is False
    core.put_document("a", "a", doc("2"))
    stored = core.put_document("a", "b", doc("3"))
    assert stored.overwritten and stored.keys == ["b", "a"]


# ----- durable marks: fences and expired marks outlive the process -----


def test_every_mark_change_is_listed_for_the_durable_store(core: SessionCore, clock: Clock) -> None:
    core.seed_episode("s", seed())
    durable_seed = core.take_mark_writes()["s"]  # an episode seed is durable: its ID is known to be open here
    assert durable_seed.open_in == core.incarnation and durable_seed.episode_id == ep()
    core.seed_episode("s", seed())
    retried = core.take_changes()  # a retried seed changes nothing: it only checks this life holds the record
    assert retried.parts == {"s": frozenset()} and retried.expected == {"s": core.incarnation}
    core.close("s", ep())
    writes = core.take_mark_writes()
    assert writes["s"].cause == "closed" and writes["s"].episode_id == ep()
    core.close("s", ep())
    assert core.take_mark_writes() == {}  # a repeated close changes nothing, so writes nothing
    clock.advance(TTL + 1)
    core.evict_expired()
    assert core.take_mark_writes() == {"s": None}  # a lapsed fence is deleted durably too


def test_a_restarted_core_that_learns_the_marks_keeps_the_fence(clock: Clock) -> None:
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_episode("s", seed())
    first.close("s", ep())
    durable = first.take_mark_writes()
    restarted = SessionCore(session_ttl_seconds=TTL, clock=clock)
    assert restarted.wants_mark("s")
    restarted.learn_mark("s", durable["s"])
    with pytest.raises(SessionConflict, match="closed"):
        restarted.seed_episode("s", seed())  # the late cookie-less seed after a crash (§C.4, §G.1)
    with pytest.raises(SessionConflict):
        restarted.close("s", ep("r2"))  # the fence still records the closing episode (Decision 3)
    assert restarted.finish_verify("s", "d", WIN).failure_kind == "session_lost"


@pytest.mark.parametrize("cause", [None, "vanished"])
def test_a_fence_read_back_without_a_known_cause_still_fences(clock: Clock, cause) -> None:
    """A store that lies (a record written by another version, or altered): the fence holds, and says so, as a
    409 and a masked verify, never a 500."""
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_episode("s", seed())
    first.close("s", ep())
    fence = dataclasses.replace(first.take_mark_writes()["s"], cause=cause)
    restarted = SessionCore(session_ttl_seconds=TTL, clock=clock)
    restarted.learn_mark("s", fence)
    with pytest.raises(SessionConflict, match="fenced"):
        restarted.seed_episode("s", seed())
    assert restarted.finish_verify("s", "d", WIN).failure_kind == "session_lost"


def test_a_learned_mark_never_overrides_what_the_core_knows(core: SessionCore, clock: Clock) -> None:
    core.seed_episode("s", seed())
    other = SessionCore(session_ttl_seconds=TTL, clock=clock)
    other.close("s", ep())
    core.learn_mark("s", other.take_mark_writes()["s"])  # a stale record: the open session here is newer
    assert core.describe("s")["open"] and not core.describe("s")["fenced"]


# ----- durable seeds: a session open in a life that is gone is lost, whatever the cookie says -----


def _restarted_with(durable: dict, clock: Clock) -> SessionCore:
    restarted = SessionCore(session_ttl_seconds=TTL, clock=clock)
    for sid, mark in durable.items():
        if mark is not None and restarted.wants_mark(sid):
            restarted.learn_mark(sid, mark)
    return restarted


def test_a_session_open_in_a_dead_life_is_lost_without_a_cookie(clock: Clock) -> None:
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_episode("s", seed())
    restarted = _restarted_with(first.take_mark_writes(), clock)
    with pytest.raises(SessionConflict, match="restarted"):
        restarted.seed_episode("s", seed())  # the retried cookie-less seed does not re-create it empty
    with pytest.raises(SessionLost):
        restarted.read_documents("s", [])  # no cookie claims: the durable seed alone says it was open
    assert restarted.finish_verify("s", "d", WIN).failure_kind == "session_lost"
    assert restarted.plan_verify("s", "d").failure_kind == "session_lost"


def test_a_close_naming_another_episode_is_409_in_a_later_life_too(clock: Clock) -> None:
    """§C.4 step 1 after a restart: the durable seed still names its episode, so the lost session's fence does."""
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_episode("s", seed())
    restarted = _restarted_with(first.take_mark_writes(), clock)
    with pytest.raises(SessionConflict, match="restarted"):
        restarted.close("s", ep("another"))
    restarted.close("s", ep())  # the episode's own close succeeds, and keeps the lost fence
    assert restarted.describe("s")["fence_cause"] == "lost"
    with pytest.raises(SessionConflict):
        restarted.close("s", ep("another"))


def test_a_released_session_leaves_no_durable_seed(clock: Clock) -> None:
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    for sid in ("retired", "closed", "evicted"):
        first.seed_episode(sid, seed(rollout=sid))
    first.retire("retired")
    clock.advance(TTL + 1)
    first.close("closed", ep("closed"))  # it outlived the TTL: evicted, then closed
    first.evict_expired()
    durable = first.take_mark_writes()
    assert durable["retired"] is None  # retire deletes the seed and fences nothing (Decision 8)
    assert durable["closed"].cause == "evicted" and durable["evicted"].cause == "evicted"
    assert not any(mark.open_in for mark in durable.values() if mark)
    restarted = _restarted_with(durable, clock)
    assert restarted.seed_episode("retired", seed(rollout="retired")).created


def test_a_durable_seed_of_this_life_never_fences_it(core: SessionCore, clock: Clock) -> None:
    core.seed_episode("s", seed())
    stale = core.take_mark_writes()["s"]
    core.retire("s")
    core.learn_mark("s", stale)  # a settle that listed the seed before the retire's delete landed
    assert core.seed_episode("s", seed()).created


# ----- documents by content, and the bounds of a session -----


def test_references_are_released_by_close_eviction_retire_overwrite_and_verify(core: SessionCore, clock: Clock) -> None:
    for sid in ("closed", "evicted", "retired", "verified"):
        core.seed_agent_run(sid) if sid == "verified" else core.seed_episode(sid, seed(rollout=sid))
        core.put_document(sid, "k", doc("10-K"))
    core.seed_agent_run("overwritten")
    core.put_document("overwritten", "k", doc("8-K"))
    assert core.referenced_digests() == {"10-K", "8-K"}
    core.put_document("overwritten", "k", doc("10-K"))
    assert core.referenced_digests() == {"10-K"}
    core.close("closed", ep("closed"))
    core.retire("retired")
    core.finish_verify("verified", "d", WIN)
    core.retire("overwritten")
    assert core.referenced_digests() == {"10-K"}  # the evicted session still holds it until its TTL
    clock.advance(TTL + 1)
    core.evict_expired()
    assert core.referenced_digests() == set() and core.stats()["digests"] == 0


def test_session_bounds_give_clear_tool_errors(clock: Clock) -> None:
    core = SessionCore(
        session_ttl_seconds=TTL,
        clock=clock,
        limits=Limits(documents_per_session=2, chars_per_session=10, verdicts_per_session=2),
    )
    core.seed_agent_run("a")
    core.put_document("a", "k1", doc("12345"))
    core.put_document("a", "k2", doc("1234"))
    with pytest.raises(DocumentRefused, match="max_documents_per_session"):
        core.put_document("a", "k3", doc("1"))
    core.put_document("a", "k2", doc("12345"))  # overwriting a key is always possible within the size bound
    with pytest.raises(DocumentRefused, match="max_session_chars"):
        core.put_document("a", "k1", doc("123456"))
    core.seed_episode("s", seed())
    for digest in ("d1", "d2", "d3"):
        core.finish_verify("s", digest, WIN)
    assert core.stats()["verdicts"] == 2  # the oldest verdict made room
    assert not isinstance(core.plan_verify("s", "d1"), Cached)  # d1 is judged again if re-sent
    assert core.plan_verify("s", "d2") == core.plan_verify("s", "d3") == Cached(WIN)


def test_the_fences_a_core_holds_leave_the_garbage_collectors_walks(core: SessionCore) -> None:
    """A shard holds every closed session's fence for fence_ttl_seconds; a full collection walks every object the
    collector tracks, and the shard's loop waits while it does."""
    gc.collect()
    tracked = len(gc.get_objects())
    for n in range(10_000):
        core.seed_episode(f"s{n}", seed(f"r{n}"))
        core.close(f"s{n}", ep(f"r{n}"))
    core.take_changes()  # the shell takes the writes; the fences stay
    gc.collect()
    gc.collect()  # a tuple stays tracked while one it holds is; the next pass takes it
    assert core.stats()["fences"] == 10_000
    assert len(gc.get_objects()) - tracked < 1_000
    with pytest.raises(SessionConflict, match='belongs to episode .*"r9".*Repeat the close'):
        core.close("s9", ep("r8"))  # the episode a fence names is read back whole


def test_capacity_limits_refuse_instead_of_dropping(clock: Clock) -> None:
    core = SessionCore(session_ttl_seconds=TTL, clock=clock, limits=Limits(sessions=1, marks=1))
    core.seed_agent_run("a")
    with pytest.raises(StoreFull):
        core.seed_agent_run("b")
    core.close("never-1", ep())
    with pytest.raises(StoreFull):
        core.close("never-2", ep())  # a fence it cannot keep is refused (503), never silently dropped
    core.close("never-1", ep())  # a repeated close of a held fence still succeeds


def test_counters_record_what_the_contract_decided(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.seed_episode("s", seed())
    with pytest.raises(SessionConflict):
        core.seed_episode("s", seed(rollout="x"))
    core.close("s", ep())
    core.finish_verify("s", "d", WIN)
    with pytest.raises(SessionLost):
        core.check_open("s")
    assert {k: v for k, v in core.counters.items()} == {
        "seeds.episode.created": 1,
        "seeds.episode.retried": 1,
        "conflicts.seed_mismatch": 1,
        "closes": 1,
        "verifies.masked.session_lost": 1,
        "session_lost": 1,
    }


# ----- a settled shard: every mark of its IDs in memory, nothing read on the request path -----


def test_a_settled_shard_knows_every_mark_of_its_ids_and_reads_no_more() -> None:
    import asyncio

    from session_store import MemoryMarkStore, ShardConfig, ShardService, shard_index

    clock = Clock()
    marks = MemoryMarkStore()
    first = ShardService(ShardConfig(TTL), marks, clock, place=(0, 2))
    ids = [sid for sid in (f"s{i}" for i in range(40)) if shard_index(sid, 2) == 0][:5]
    asyncio.run(first.run([("close", (sid, ep())) for sid in ids]))
    restarted = ShardService(ShardConfig(TTL), marks, clock, place=(0, 2))
    assert asyncio.run(restarted.settle()) == len(ids)
    marks.failing = True  # the durable store is unreachable, and a settled shard does not need it
    outcomes = asyncio.run(
        restarted.run(
            [("seed_episode", (sid, seed())) for sid in ids]
            + [("check_open", ("never-closed",)), ("seed_episode", ("new", seed()))]
        )
    )
    assert [type(v).__name__ for ok, v in outcomes[:-2]] == ["SessionConflict"] * len(ids)
    assert type(outcomes[-2][1]).__name__ == "SessionLost"  # an unknown ID is known to be unmarked without a read
    assert type(outcomes[-1][1]).__name__ == "StoreUnavailable"  # but a seed must be written before it is a 200


def test_the_reaper_sweeps_lapsed_durable_marks_and_a_failed_sweep_spares_its_tick() -> None:
    """A shard that dies holding a fence leaves its durable mark behind; the reaper deletes it once it lapses."""
    import asyncio

    from session_store import MemoryMarkStore, Reaper, ShardConfig, ShardService
    from session_store.core import Mark
    from session_store.marks import encode

    clock, marks = Clock(), MemoryMarkStore()
    shard = ShardService(ShardConfig(TTL), marks, clock, place=(0, 1))
    marks.marks["lapsed"] = encode(Mark(fence_until=clock.now - 1, cause="closed"))
    marks.marks["live"] = encode(Mark(fence_until=clock.now + 60, cause="closed"))
    reaper = Reaper([shard], marks=marks, sweep_marks_every=2, clock=clock)
    asyncio.run(reaper.tick())
    assert set(marks.marks) == {"lapsed", "live"}  # not every tick: a sweep reads every mark
    asyncio.run(reaper.tick())
    assert set(marks.marks) == {"live"} and reaper.status.durable_marks_swept == 1
    marks.failing = True
    asyncio.run(reaper.tick())
    asyncio.run(reaper.tick())  # the sweep fails; the tick still completes
    assert reaper.status.ticks == 4


def test_stalled_sessions_are_the_ones_no_stateful_call_named_for_the_idle_time(core: SessionCore, clock) -> None:
    core.seed_episode("busy", seed())
    core.seed_agent_run("quiet")
    core.seed_episode("gone", seed("r2"))
    clock.advance(30)
    core.put_document("busy", "k", doc("text"))  # a stateful call: no longer idle
    core.close("gone", ep("r2"))
    clock.advance(20)
    stalled = core.stalled(40)
    assert stalled["count"] == 1 and [(s["id"], s["kind"], s["idle_seconds"]) for s in stalled["idlest"]] == [
        ("quiet", "agent_run", 50.0)
    ]
    assert core.stalled(10)["count"] == 2 and [s["id"] for s in core.stalled(10)["idlest"]] == ["quiet", "busy"]
    assert core.stalled(10, limit=1)["idlest"][0]["id"] == "quiet" and core.stalled(10, most=1)["count"] == 1
    clock.advance(TTL)  # past its TTL: due for eviction, not a stall
    assert core.stalled(10)["count"] == 0


def test_inspect_reads_a_session_without_changing_it(core: SessionCore, clock) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", doc("text"))
    clock.advance(5)
    shown = core.inspect("s")
    assert shown["kind"] == "episode" and shown["episode_id"] == ep() and shown["task_id"]["task_id"] == "t1"
    assert (shown["age_seconds"], shown["idle_seconds"], shown["ttl_left_seconds"]) == (5.0, 5.0, TTL - 5)
    assert shown["documents"] == [{"key": "k", "url": "https://www.sec.gov/text", "chars": 4, "digest": "text"}]
    assert core.inspect("s")["idle_seconds"] == 5.0  # looking is no use
    core.close("s", ep())
    assert core.inspect("s") == {"id": "s", "open": False, "fence_cause": "closed", "expired": False}
    assert core.inspect("never")["open"] is False and core.inspect("never")["fence_cause"] is None


def test_agent_run_sessions_have_their_own_bound_and_episodes_go_on(clock) -> None:
    core = SessionCore(session_ttl_seconds=TTL, clock=clock, limits=Limits(agent_run_sessions=2))
    core.seed_agent_run("a1")
    core.seed_agent_run("a2")
    with pytest.raises(StoreFull, match="max_agent_run_sessions_per_shard"):
        core.seed_agent_run("a3")  # a client that dropped its cookie, once more
    core.seed_agent_run("a2")  # a reset of one it holds adds none
    core.seed_episode("e1", seed())  # episodes are not crowded out
    core.close("a1", ep())
    core.seed_agent_run("a3")
    assert core.stats()["agent_run_sessions"] == 2 and core.stats()["sessions"] == 3
