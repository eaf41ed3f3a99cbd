"""The Redis mark store against a real redis-server (harness/redis_server.py): native expiry, reads per ID (a shard
over it never settles), group commit, a shard's promises when Redis is gone, durable seeds across shard lives, the
kept cookie secret, and a purge that removes only its own application's records."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
import redis

from session_store import ShardConfig, ShardService, StoreUnavailable
from session_store.core import EpisodeSeed, Mark
from session_store.marks import Written
from session_store.marks.redis_store import RedisMarkStore
from session_store.routing import partition


def store(url: str, namespace: str | None = None) -> RedisMarkStore:
    """The store as a deployment leaves it: begun (its marker written), or continued."""
    marks = RedisMarkStore(url, namespace or f"test-{uuid.uuid4().hex[:8]}")
    assert marks.begin() in ("new", "continued")
    return marks


def seed(rollout: str = "r1") -> EpisodeSeed:
    return EpisodeSeed({"rollout_id": rollout, "attempt": 0}, {"taskset": "fin", "task_id": "t"}, "d")


def keys(url: str, namespace: str) -> list[bytes]:
    return redis.Redis.from_url(url).keys(f"finsec:{namespace}:*")


def test_marks_round_trip_and_expire_by_themselves(redis_server) -> None:
    marks = store(redis_server.url)
    now = time.time()

    async def go():
        assert (
            await marks.write(
                {
                    "short": Mark(fence_until=now + 0.3, cause="closed"),
                    "long": Mark(fence_until=now + 60, cause="closed", episode_id={"a": 1}),
                    "gone": Mark(fence_until=now - 1, cause="closed"),
                }
            )
            == Written()
        )
        found = await marks.read(["short", "long", "gone", "never"])
        assert set(found) == {"short", "long"} and found["long"].episode_id == {"a": 1}
        await asyncio.sleep(0.6)
        assert set(await marks.read(["short", "long"])) == {"long"}  # no sweep ran: Redis expired it
        assert await marks.write({"long": None}) == Written()
        assert await marks.read(["long"]) == {}

    asyncio.run(go())
    ttl = redis.Redis.from_url(redis_server.url).pttl(marks._key("long"))
    assert ttl == -2  # deleted, not merely hidden


def test_the_sweep_removes_an_earlier_versions_index_and_no_mark(redis_server) -> None:
    namespace = f"test-{uuid.uuid4().hex[:8]}"
    marks, client = store(redis_server.url, namespace), redis.Redis.from_url(redis_server.url)
    now = time.time()
    asyncio.run(marks.write({"kept": Mark(fence_until=now + 60, cause="closed")}))
    legacy = f"finsec:{namespace}:{{{partition('kept'):03x}}}:i"
    client.zadd(legacy, {"kept": now + 60})  # what the version before reads-per-ID kept, with no expiry
    assert asyncio.run(marks.sweep(now)) == 1
    assert not client.exists(legacy) and set(asyncio.run(marks.read(["kept"]))) == {"kept"}


def test_a_shard_answers_503_never_200_when_redis_cannot_record(redis_server) -> None:
    dead = RedisMarkStore("redis://127.0.0.1:1/0", "nobody", timeout_seconds=0.5)
    shard = ShardService(ShardConfig(600), dead)
    outcomes = asyncio.run(shard.run([("seed_episode", ("s", seed())), ("close", ("t", {"rollout_id": "r"}))]))
    assert [type(value) for ok, value in outcomes] == [StoreUnavailable, StoreUnavailable]


def test_a_session_open_when_its_shard_died_is_lost_to_the_next_life(redis_server) -> None:
    """§C.4/§C.9 across shard lives. The reaper's settle is a no-op over Redis (it keeps no index to list), so the
    restarted shard must go on reading each ID it does not know: a settle that trusted memory would let the late
    seed and the lost session through."""
    namespace = f"test-{uuid.uuid4().hex[:8]}"
    first = ShardService(ShardConfig(600), store(redis_server.url, namespace))
    assert asyncio.run(
        first.run(
            [
                ("seed_episode", ("open", seed())),
                ("seed_episode", ("closed", seed("r2"))),
                ("close", ("closed", {"rollout_id": "r2", "attempt": 0})),
            ]
        )
    )[0][0]
    # The next life, in another process in production: a new store object, a new client, the same Redis.
    restarted = ShardService(ShardConfig(600), store(redis_server.url, namespace))
    assert asyncio.run(restarted.settle()) == 0
    outcomes = asyncio.run(
        restarted.run(
            [
                ("seed_episode", ("open", seed())),
                ("seed_episode", ("closed", seed("r2"))),
                ("check_open", ("open",)),
                ("seed_episode", ("fresh", seed("r3"))),
            ]
        )
    )
    assert [type(value).__name__ for ok, value in outcomes] == [
        "SessionConflict",
        "SessionConflict",
        "SessionLost",
        "Seeded",
    ]
    assert "restarted" in str(outcomes[0][1]) and "closed" in str(outcomes[1][1])
    stats = asyncio.run(restarted.stats())
    assert (stats["settled"], stats["reads_marks_per_id"]) == (0, 1)


def test_a_group_commit_is_one_command(redis_server) -> None:
    marks = store(redis_server.url)
    client = redis.Redis.from_url(redis_server.url)

    def calls(name: str) -> int:
        return client.info("commandstats").get(f"cmdstat_{name}", {}).get("calls", 0)

    now = time.time()
    asyncio.run(marks.write({"warm": Mark(fence_until=now + 60, cause="closed")}))  # connects, loads the script
    before = {name: calls(name) for name in ("evalsha", "set")}
    asyncio.run(marks.write({f"g{n}": Mark(fence_until=now + 60, cause="closed") for n in range(200)}))
    assert calls("evalsha") - before["evalsha"] == 1
    assert calls("set") - before["set"] == 200  # fences: the head alone, a string


def test_a_redis_that_forgot_the_script_gets_it_again_and_a_read_sees_the_write(redis_server) -> None:
    """A restarted Redis knows no scripts: the group commit loads its own and still lands, on a connection that the
    error reply left usable."""
    marks = store(redis_server.url)
    now = time.time()

    async def main() -> dict:
        await marks.write({"a": Mark(fence_until=now + 60, cause="closed")})
        redis.Redis.from_url(redis_server.url).script_flush()
        failed = await marks.write({"b": Mark(fence_until=now + 60, cause="closed"), "a": None})
        assert failed == Written()
        return await marks.read(["a", "b", "never-written"])

    found = asyncio.run(main())
    assert list(found) == ["b"] and found["b"].cause == "closed"


def test_the_cookie_secret_is_kept_and_a_purge_removes_only_its_own_app(redis_server) -> None:
    ours, theirs = f"ours-{uuid.uuid4().hex[:6]}", f"theirs-{uuid.uuid4().hex[:6]}"
    mine, other = store(redis_server.url, ours), store(redis_server.url, theirs)
    secret = mine.kept_secret(lambda: "first")
    assert secret == "first" and mine.kept_secret(lambda: "second") == "first"
    now = time.time()
    asyncio.run(mine.write({"a": Mark(fence_until=now + 60, cause="closed")}))
    asyncio.run(other.write({"a": Mark(fence_until=now + 60, cause="closed")}))
    assert asyncio.run(mine.purge()) == 3  # the mark, the secret and the marker: no index is kept
    assert keys(redis_server.url, ours) == [] and len(keys(redis_server.url, theirs)) == 2  # its mark and marker


@pytest.mark.parametrize("url", ["http://x", "redis-cluster://x"])
def test_settings_refuse_a_mark_store_url_that_is_not_redis(url: str) -> None:
    from pydantic import ValidationError

    from deployments.settings import Settings

    with pytest.raises(ValidationError, match="mark_store_url"):
        Settings(mark_store_url=url)
