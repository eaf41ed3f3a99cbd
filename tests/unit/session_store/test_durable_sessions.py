"""Durable sessions (`durable_sessions`, on by default; contract §C.11): everything an open session holds (its
start, its seed, its documents by digest, its verdicts) is written with the marks in the same group commit, and a
shard life that finds the record of an earlier life restores the session instead of reporting it lost. Without
the setting the same restart loses it (tested too): each test below would fail with restore turned off.

The core through a real mark store's encoding, then the whole app in process over HTTP (the shards restarted as a
SIGKILL does: new lives, marks kept; harness/inprocess.py)."""

from __future__ import annotations

import asyncio

import pytest

from finsec.corpus.generate import filings
from harness.bodies import close_body, episode_seed, new_session_id, verify_body
from harness.inprocess import InProcess
from session_store import Claims, MemoryMarkStore, SessionLost, ShardConfig, ShardService
from session_store.core import Cached, DocumentRef, EpisodeSeed, GradeNow, Verdict

TTL = 600.0
FIRST = next(f for f in filings() if f.form == "10-K")
SEED = EpisodeSeed({"rollout_id": "r1", "attempt": 0}, {"taskset": "t", "task_id": "1"}, "digest")
DOC = DocumentRef("d" * 64, 1234, "https://www.sec.gov/Archives/edgar/data/1/2/x.htm")


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def lives(durable: bool):
    """Two lives of one shard over one mark store: the first, and the one a restart makes."""
    marks, clock = MemoryMarkStore(), Clock()
    config = ShardConfig(TTL, durable_sessions=durable)
    return ShardService(config, marks, clock), (lambda: ShardService(config, marks, clock)), clock


def run(shard: ShardService, *ops):
    outcomes = asyncio.run(shard.run(list(ops)))
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]


@pytest.mark.parametrize("durable", [True, False])
def test_an_episode_with_its_documents_and_verdict_outlives_its_shard(durable):
    first, restart, _ = lives(durable)
    seeded, _, _ = run(
        first,
        ("seed_episode", ("s", SEED)),
        ("put_document", ("s", "doc", DOC)),
        ("finish_verify", ("s", "body", Verdict(1.0, 2))),
    )
    claims = Claims(seeded.incarnation, "episode")
    second = restart()
    if not durable:
        with pytest.raises(SessionLost):
            run(second, ("check_open", ("s", claims)))
        return
    view, plan = run(second, ("read_documents", ("s", ["doc"], claims)), ("plan_verify", ("s", "body", claims)))
    assert view.documents == {"doc": DOC}
    assert plan == Cached(Verdict(1.0, 2))  # the verdict came back with it: a re-send gets the same row
    assert run(second, ("started_at", ("s",)))[0] == seeded.started_at  # the budget counts from the first start
    third = restart()  # the restoring life wrote the record again, naming itself: a third life restores it too
    run(third, ("close", ("s", SEED.episode_id)))
    assert run(third, ("describe", ("s",)))[0]["fence_cause"] == "closed"


def test_an_agent_run_session_is_restored_and_its_verify_releases_it():
    first, restart, _ = lives(True)
    seeded, _ = run(first, ("seed_agent_run", ("a",)), ("put_document", ("a", "doc", DOC)))
    second = restart()
    claims = Claims(seeded.incarnation, "agent_run")
    assert run(second, ("plan_verify", ("a", "body", claims)))[0] == GradeNow(record=False)
    assert run(second, ("describe", ("a",)))[0]["open"] is False  # released, and its record deleted:
    assert run(restart(), ("describe", ("a",)))[0]["open"] is False  # a later life does not bring it back


def test_a_session_whose_ttl_passed_while_no_shard_held_it_is_expired_not_restored():
    first, restart, clock = lives(True)
    (seeded,) = run(first, ("seed_episode", ("s", SEED)))
    clock.now += TTL + 1
    second = restart()
    (plan,) = run(second, ("plan_verify", ("s", "body", Claims(seeded.incarnation, "episode"))))
    assert plan.failure_kind == "session_expired"


def test_the_record_is_written_in_the_group_commit_before_the_answer():
    first, _, _ = lives(True)
    run(first, ("seed_agent_run", ("a",)), ("put_document", ("a", "doc", DOC)))
    record = asyncio.run(first._marks.read(["a"]))["a"].session  # noqa: SLF001 (the store's own record)
    assert record["documents"] == {"doc": [DOC.digest, DOC.chars, DOC.url]} and record["episode"] is None


def test_a_session_is_restored_from_a_real_redis_by_a_life_in_another_process(redis_server):
    """Over Redis a new life reads per ID (it keeps no index to settle from): the first request restores."""
    import uuid

    from tests.unit.session_store.test_redis_marks import store

    namespace = f"durable-{uuid.uuid4().hex[:8]}"
    config = ShardConfig(TTL, durable_sessions=True)
    seeded, _ = run(
        ShardService(config, store(redis_server.url, namespace)),
        ("seed_episode", ("s", SEED)),
        ("put_document", ("s", "doc", DOC)),
    )
    restarted = ShardService(config, store(redis_server.url, namespace))  # a new client, the same Redis
    (view,) = run(restarted, ("read_documents", ("s", ["doc"], Claims(seeded.incarnation, "episode"))))
    assert view.documents == {"doc": DOC}


# ----- the whole app over HTTP: the shards SIGKILLed and restarted between the calls of a rollout -----


def test_a_rollout_goes_on_across_a_restart_of_every_shard():
    with InProcess(max_rollout_time_seconds=600) as app:  # durable_sessions is the default
        sid = new_session_id()
        assert app.post("/seed_session", json=episode_seed(sid, expected_answer="42")).status_code == 200
        stored = app.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"})
        assert "SUCCESS" in stored.json()["results"]
        app.restart_shards()
        asked = app.post("/retrieve_information", json={"prompt": "total net revenues {{doc}}"})
        assert asked.status_code == 200 and "passages" in asked.json()["results"]
        row = app.post("/verify", json=verify_body("42")).json()
        assert (row["reward"], row.get("mask_sample")) == (1.0, False), row
        app.restart_shards()
        assert app.post("/close_session", json=close_body(sid)).status_code == 200
        app.restart_shards()
        assert app.post("/seed_session", json=episode_seed(sid)).status_code == 409  # its fence, as ever
        assert app.metrics is not None and app.stats()["sessions"] == 0


def test_without_durable_sessions_the_same_restart_loses_the_rollout():
    with InProcess(durable_sessions=False) as app:
        sid = new_session_id()
        app.post("/seed_session", json=episode_seed(sid, expected_answer="42"))
        app.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"})
        app.restart_shards()
        lost = app.post("/retrieve_information", json={"prompt": "total net revenues {{doc}}"})
        assert lost.status_code == 404 and lost.json()["failure_kind"] == "session_lost"
        assert app.post("/verify", json=verify_body("42")).json()["mask_sample"] is True


def test_the_time_budget_counts_from_the_first_start_across_a_restart():
    with InProcess(durable_sessions=True, max_rollout_time_seconds=60) as app:
        app.post("/seed_session", json=episode_seed(new_session_id()))
        app.clock.advance(40)
        app.restart_shards()
        app.clock.advance(30)
        spent = app.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker})
        assert "Time budget exhausted" in spent.json()["results"]
