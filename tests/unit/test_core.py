"""The pure session core against contract.md §C.10 (row by row) and the Decisions it implements."""

from __future__ import annotations

import pytest

from session_store.core import EpisodeSeed, SessionCore, canonical_digest
from session_store.errors import SessionConflict, SessionLost

TTL = 100.0


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


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def core(clock: Clock) -> SessionCore:
    return SessionCore(session_ttl_seconds=TTL, clock=clock)


def test_canonical_digest_ignores_key_order() -> None:
    assert canonical_digest({"a": 1, "b": [1, 2]}) == canonical_digest({"b": [1, 2], "a": 1})
    assert canonical_digest({"a": 1}) != canonical_digest({"a": 2})


# ----- row "never seeded" -----


def test_never_seeded_episode_seed_creates(core: SessionCore) -> None:
    assert core.seed_episode("s", seed()) is True
    assert core.describe("s")["open"] and core.describe("s")["episode"]


def test_never_seeded_tools_are_lost(core: SessionCore) -> None:
    with pytest.raises(SessionLost):
        core.put_document("s", "k", "text")
    with pytest.raises(SessionLost):
        core.read_documents("s", ["k"])


def test_never_seeded_verify_is_scored(core: SessionCore) -> None:
    assert core.begin_verify("s", "d").action == "score"


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
    core.put_document("s", "k", "text")
    clock.advance(30)
    assert core.seed_episode("s", seed()) is False
    assert core.read_documents("s", ["k"]).texts == {"k": "text"}
    assert core.session_age("s") == 30


@pytest.mark.parametrize(
    "other",
    [seed(rollout="r2"), seed(attempt=1), seed(task="t2"), seed(data={"question": "another"})],
    ids=["episode", "attempt", "task", "task_data"],
)
def test_conflicting_episode_seed_is_refused_and_changes_nothing(core: SessionCore, other: EpisodeSeed) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", "text")
    with pytest.raises(SessionConflict):
        core.seed_episode("s", other)
    assert core.read_documents("s", ["k"]).texts == {"k": "text"}


def test_agent_run_seed_on_episode_session_is_refused_and_documents_survive(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", "text")
    with pytest.raises(SessionConflict):
        core.seed_agent_run("s")
    assert core.read_documents("s", ["k"]).texts == {"k": "text"}


def test_verify_keeps_episode_session_and_caches_verdict(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    plan = core.begin_verify("s", "digest")
    assert plan.action == "score" and plan.cache_verdict
    core.record_verdict("s", "digest", {"reward": 1.0})
    assert core.describe("s")["open"]
    assert core.begin_verify("s", "digest").verdict == {"reward": 1.0}  # Decision 7
    assert core.begin_verify("s", "other-body").action == "score"  # a different body is judged afresh


def test_close_releases_and_fences(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", "text")
    core.record_verdict("s", "d", {"reward": 1.0})
    core.close("s", ep())
    assert core.describe("s") == {
        "open": False, "episode": False, "documents": [], "fenced": True, "fence_cause": "closed", "expired": False
    }
    assert core.stats()["documents"] == 0


def test_close_naming_another_episode_is_refused_even_after_verify(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.begin_verify("s", "d")
    with pytest.raises(SessionConflict):
        core.close("s", ep("r2"))
    assert core.describe("s")["open"]


# ----- row "open agent-run" -----


def test_agent_run_seed_resets(core: SessionCore, clock: Clock) -> None:
    core.seed_agent_run("a")
    core.put_document("a", "k", "text")
    clock.advance(10)
    core.seed_agent_run("a")
    assert core.read_documents("a", ["k"]).texts == {}
    assert core.session_age("a") == 0


def test_agent_run_verify_releases_then_tools_are_lost(core: SessionCore) -> None:
    core.seed_agent_run("a")
    core.put_document("a", "k", "text")
    assert core.begin_verify("a", "d").action == "score"
    assert core.stats()["sessions"] == 0
    with pytest.raises(SessionLost):
        core.read_documents("a", ["k"])
    assert core.begin_verify("a", "d").action == "score"  # Decision 6: released session scored normally


def test_close_of_agent_run_session_releases_and_fences(core: SessionCore) -> None:
    core.seed_agent_run("a")
    core.close("a", ep("anything"))
    assert core.describe("a")["fenced"] and not core.describe("a")["open"]


# ----- row "closed (fenced)" -----


def test_closed_row(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.close("s", ep())
    for attempt in (lambda: core.seed_episode("s", seed()), lambda: core.seed_episode("s", seed(rollout="x")),
                    lambda: core.seed_agent_run("s")):
        with pytest.raises(SessionConflict):
            attempt()
    with pytest.raises(SessionLost):
        core.put_document("s", "k", "t")
    plan = core.begin_verify("s", "d")
    assert (plan.action, plan.failure_kind) == ("masked", "session_lost")
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
    core.put_document("s", "k", "t")
    clock.advance(TTL + 1)
    with pytest.raises(SessionConflict):
        core.seed_episode("s", seed())  # fenced
    with pytest.raises(SessionConflict):
        core.seed_agent_run("s")
    with pytest.raises(SessionLost):
        core.read_documents("s", ["k"])
    plan = core.begin_verify("s", "d")
    assert (plan.action, plan.failure_kind) == ("masked", "session_expired")  # takes precedence over the fence
    with pytest.raises(SessionConflict):
        core.close("s", ep("r2"))  # the fence records the seeded episode (Decision 3)
    core.close("s", ep("r1"))
    assert core.stats()["documents"] == 0


def test_evicted_agent_run_row(core: SessionCore, clock: Clock) -> None:
    core.seed_agent_run("a")
    clock.advance(TTL + 1)
    with pytest.raises(SessionLost):
        core.session_age("a")
    assert core.begin_verify("a", "d").failure_kind == "session_expired"
    core.seed_agent_run("a")  # a new agent-run seed clears the mark
    assert core.describe("a")["expired"] is False
    assert core.begin_verify("a", "d").action == "score"


def test_evicted_agent_run_id_can_be_episode_seeded(core: SessionCore, clock: Clock) -> None:
    core.seed_agent_run("a")
    clock.advance(TTL + 1)
    assert core.seed_episode("a", seed()) is True
    assert core.begin_verify("a", "d").action == "score"


def test_session_past_ttl_is_never_served_between_reaper_ticks(core: SessionCore, clock: Clock) -> None:
    core.seed_episode("s", seed())
    clock.advance(TTL)
    core.put_document("s", "k", "t")  # exactly at the TTL: still open (age must exceed it)
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
    report = core.evict_expired()
    assert (report.fences, report.expired_marks) == (50, 50)
    assert core.stats() == {"sessions": 0, "documents": 0, "document_chars": 0, "fences": 0, "expired_marks": 0}


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
    assert core.seed_episode("s", seed()) is True  # row "fence expired": like never seeded


# ----- retire (§C.8, Decision 8) -----


def test_retire_releases_idempotently_without_fence(core: SessionCore) -> None:
    core.seed_episode("s", seed())
    core.put_document("s", "k", "t")
    core.retire("s")
    core.retire("s")
    assert core.describe("s") == {
        "open": False, "episode": False, "documents": [], "fenced": False, "fence_cause": None, "expired": False
    }
    assert core.stats()["sessions"] == 0


# ----- a restarted shard (a new incarnation) -----


def test_cookie_from_earlier_incarnation_reports_lost_not_unknown(clock: Clock) -> None:
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_episode("s", seed())
    restarted = SessionCore(session_ttl_seconds=TTL, clock=clock)  # the same shard after a restart: empty
    with pytest.raises(SessionLost, match="restarted"):
        restarted.read_documents("s", ["k"], claimed_incarnation=first.incarnation)
    assert restarted.begin_verify("s", "d", first.incarnation).failure_kind == "session_lost"
    with pytest.raises(SessionConflict):
        restarted.seed_episode("s", seed(), claimed_incarnation=first.incarnation)
    with pytest.raises(SessionConflict):
        restarted.seed_episode("s", seed())  # the loss is now fenced: a cookie-less retry cannot resurrect it
    restarted.close("s", ep())  # closing a lost session still succeeds


def test_verify_with_earlier_incarnation_cookie_is_masked(clock: Clock) -> None:
    first = SessionCore(session_ttl_seconds=TTL, clock=clock)
    first.seed_agent_run("a")
    restarted = SessionCore(session_ttl_seconds=TTL, clock=clock)
    plan = restarted.begin_verify("a", "d", first.incarnation)
    assert (plan.action, plan.failure_kind) == ("masked", "session_lost")


def test_current_incarnation_cookie_on_unknown_session_is_plain_never_seeded(core: SessionCore) -> None:
    with pytest.raises(SessionLost, match="never seeded"):
        core.session_age("s", core.incarnation)
    assert not core.describe("s")["fenced"]


def test_put_document_reports_overwrite_and_key_order(core: SessionCore) -> None:
    core.seed_agent_run("a")
    assert core.put_document("a", "b", "1").overwritten is False
    core.put_document("a", "a", "2")
    stored = core.put_document("a", "b", "3")
    assert stored.overwritten and stored.keys == ["b", "a"]
