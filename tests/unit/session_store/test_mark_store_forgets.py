"""A mark store that forgets (contract §C.4, §C.5 under a store that loses data): no closed ID is seeded again and
no lost session is scored, whether the store forgot (its marker is gone) or may forget (an evicting Redis, no
append-only file); and an operator's acknowledgement is the one way back. Over memory marks and a real Redis."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from deployments.mark_store import begin_mark_store, durable_records
from deployments.settings import Settings
from harness.bodies import episode_seed, new_session_id
from harness.inprocess import InProcess
from harness.redis_server import running_redis
from session_store import Claims, Masked, MemoryMarkStore, Scored, Seeded, ShardConfig, ShardService, Verdict
from session_store.core import EpisodeSeed
from session_store.errors import SessionConflict, SessionLost, StoreUnavailable
from session_store.marks.redis_store import RedisMarkStore
from session_store.shard import FORGOT

WIN = Verdict(1.0)


def seed(rollout: str) -> EpisodeSeed:
    return EpisodeSeed({"rollout_id": rollout, "attempt": 0}, {"taskset": "fin", "task_id": "t"}, "d")


def episode(rollout: str) -> dict:
    return {"rollout_id": rollout, "attempt": 0}


def run(shard: ShardService, *ops) -> list:
    """Each operation's result, or the session error it raised."""
    return [value for _, value in asyncio.run(shard.run(list(ops)))]


def first_life(marks, config: ShardConfig | None = None) -> ShardService:
    """A shard that closed "closed" and holds "open" (an episode) and "held" (an agent run) when the store forgets."""
    shard = ShardService(config or ShardConfig(600), marks)
    run(
        shard,
        ("seed_episode", ("closed", seed("c"))),
        ("close", ("closed", episode("c"))),
        ("seed_episode", ("open", seed("o"))),
        ("seed_agent_run", ("held",)),
    )
    return shard


def assert_fails_closed(restarted: ShardService, old: str) -> None:
    """What the next life of a shard answers once the store forgot: nothing decided from an absent mark."""
    late, retried, fresh, verify, cookieless, close, tool = run(
        restarted,
        ("seed_episode", ("closed", seed("c"))),
        ("seed_episode", ("open", seed("o"))),
        ("seed_episode", ("fresh", seed("f"))),
        ("finish_verify", ("open", "d", WIN, Claims(old, "episode"))),
        ("plan_verify", ("open", "d2")),
        ("close", ("open", episode("o"))),
        ("check_open", ("open",)),
    )
    for refused in (late, retried, fresh, close):
        assert isinstance(refused, StoreUnavailable) and refused.cause == "store_forgot", refused
        assert "acknowledge-loss" in str(refused)
    for masked in (verify, cookieless):
        assert isinstance(masked, Masked) and masked.failure_kind == "session_lost", masked
    assert isinstance(tool, SessionLost)


def test_a_restarted_shard_over_a_store_that_forgot_refuses_seeds_and_masks_verifies():
    marks = MemoryMarkStore()
    old = first_life(marks).incarnation
    marks.forget()  # a Redis restarted without persistence
    restarted = ShardService(ShardConfig(600), marks)
    assert_fails_closed(restarted, old)
    assert asyncio.run(restarted.stats())["store_problem"] == FORGOT
    marks.acknowledge_loss()  # the operator's word: the loss is accepted
    assert all(
        isinstance(v, Seeded)
        for v in run(restarted, ("seed_episode", ("fresh", seed("f"))), ("seed_episode", ("closed", seed("c2"))))
    )
    assert asyncio.run(restarted.stats())["store_problem"] is None


def test_the_life_that_holds_its_sessions_still_serves_them_from_memory():
    """What the shard holds is proven by its memory, whatever the store forgot: open sessions are scored, and a
    fence it holds still refuses the late seed (409, not a guess)."""
    marks = MemoryMarkStore()
    shard = first_life(marks)
    marks.forget()
    verify, late, unknown = run(
        shard,
        ("finish_verify", ("open", "d", WIN)),
        ("seed_episode", ("closed", seed("c"))),
        ("seed_episode", ("fresh", seed("f"))),
    )
    assert isinstance(verify, Scored) and verify.verdict == WIN
    assert isinstance(late, SessionConflict)
    assert isinstance(unknown, StoreUnavailable) and unknown.cause == "store_forgot"


def test_the_in_process_app_says_so_in_status_and_in_the_503_until_acknowledged():
    with InProcess() as app:
        app.app.marks.forget()
        app.reaper_tick()
        response = app.post("/seed_session", json=episode_seed(new_session_id()))
        assert response.status_code == 503 and "acknowledge-loss" in response.json()["detail"]
        assert response.headers.get("retry-after")
        assert app.get("/status").json()["mark_store"]["problem"] == FORGOT
        app.app.marks.acknowledge_loss()
        app.reaper_tick()
        assert app.post("/seed_session", json=episode_seed(new_session_id())).status_code == 200
        assert app.get("/status").json()["mark_store"] == {"ok": True, "problem": None}


# ----- a real Redis -----


def redis_store(url: str, namespace: str) -> RedisMarkStore:
    return RedisMarkStore(url, namespace)


def test_a_redis_restarted_without_persistence_forgets_nothing_the_app_relies_on(tmp_path):
    """The issue's case: a late seed of a closed ID, and a retried seed of a lost open session, after Redis came
    back empty and the shard restarted."""
    namespace = f"forgot-{uuid.uuid4().hex[:6]}"
    with running_redis(persist=False) as first:
        marks = redis_store(first.url, namespace)
        assert marks.begin() == "new"
        trusted = ShardConfig(600, check_durability=False)  # as if it persisted "another way"
        old, port = first_life(marks, trusted).incarnation, first.port
    with running_redis(persist=False, port=port) as again:  # the same address, empty
        restarted = ShardService(trusted, redis_store(again.url, namespace))
        assert_fails_closed(restarted, old)
        redis_store(again.url, namespace).acknowledge_loss()
        assert isinstance(run(restarted, ("seed_episode", ("fresh", seed("f"))))[0], Seeded)


def test_the_life_that_holds_a_session_scores_it_from_memory_when_redis_came_back_empty():
    """Only a write finds the marker gone (no read comes first: the shard knows the ID): the write is taken, its
    memory the proof, and the shard learns the store forgot."""
    namespace = f"forgot-{uuid.uuid4().hex[:6]}"
    with running_redis(persist=False) as first:
        marks = redis_store(first.url, namespace)
        marks.begin()
        shard = first_life(marks, ShardConfig(600, check_durability=False))
        port = first.port
    with running_redis(persist=False, port=port):  # the same address, empty; the same life
        (verify,) = run(shard, ("finish_verify", ("open", "d", WIN)))
        assert isinstance(verify, Scored) and verify.verdict == WIN
        assert asyncio.run(shard.stats())["store_problem"] == FORGOT


@pytest.mark.parametrize(
    "options, persist, named",
    [
        ((), False, "appendonly is no"),
        (("--maxmemory-policy", "allkeys-lru"), True, "maxmemory-policy is allkeys-lru"),
        (("--maxmemory-policy", "volatile-ttl"), True, "maxmemory-policy is volatile-ttl"),
        (("--appendfsync", "no"), True, "appendfsync is no"),
        (("--rename-command", "CONFIG", "", "--maxmemory-policy", "volatile-lru"), True, "volatile-lru"),  # via INFO
    ],
)
def test_a_redis_that_may_forget_is_refused_at_deploy_naming_the_setting(options, persist, named):
    with running_redis(persist=persist, options=options) as server:
        settings = Settings(app_name=f"unsafe-{uuid.uuid4().hex[:6]}", mark_store_url=server.url)
        with pytest.raises(ValueError, match=f"may forget fences: .*{named}"):
            begin_mark_store(settings)
        begin_mark_store(settings.model_copy(update={"mark_store_durability_check": False}))  # the override


def test_an_evicting_redis_lets_no_closed_id_be_seeded_again_after_a_restart():
    """The issue measured 19,639 of 20,000 closed IDs seeded again under allkeys-lru. The policy changed after
    the deploy (so the deploy's check passed): the next life asks before it trusts an absent mark."""
    namespace = f"evicting-{uuid.uuid4().hex[:6]}"
    with running_redis() as server:
        marks = redis_store(server.url, namespace)
        assert marks.begin() == "new"
        import redis

        client = redis.Redis.from_url(server.url)
        client.config_set("maxmemory", "1mb")
        client.config_set("maxmemory-policy", "allkeys-lru")
        shard = ShardService(ShardConfig(600), marks)
        closed = [f"c{n}" for n in range(3_000)]
        for start in range(0, len(closed), 500):
            run(
                shard,
                *(
                    op
                    for sid in closed[start : start + 500]
                    for op in (("seed_episode", (sid, seed(sid))), ("close", (sid, episode(sid))))
                ),
            )
        assert client.info("stats")["evicted_keys"] > 0  # fences were evicted
        restarted = ShardService(ShardConfig(600), redis_store(server.url, namespace))
        late = run(restarted, *(("seed_episode", (sid, seed(sid))) for sid in closed))
        assert not [r for r in late if isinstance(r, Seeded)]
        assert {r.cause for r in late if isinstance(r, StoreUnavailable)} <= {"store_unsafe", "store_forgot"}


def test_a_cold_start_on_an_empty_store_says_it_begins_a_new_one(caplog):
    with running_redis() as server:
        settings = Settings(app_name=f"cold-{uuid.uuid4().hex[:6]}", mark_store_url=server.url)
        with caplog.at_level(logging.WARNING, logger="ray.serve"):
            begin_mark_store(settings)
            assert "begins a new mark store" in caplog.text
            caplog.clear()
            begin_mark_store(settings)  # a redeploy continues it, quietly
            assert "mark store" not in caplog.text
            records = durable_records(settings)
            records.kept_secret(lambda: "k" * 43)
            records._sync_client().delete(records._marker)  # evicted, say
            begin_mark_store(settings)  # records (the cookie secret) without the marker: it forgot
            assert "holds records of app" in caplog.text and "acknowledge-loss" in caplog.text
