"""A durable session's record is written in parts (session_store/marks/records.py): a document or a verdict writes
its own bytes, never the whole record again, however much the session holds. Measured as the bytes a real Redis
received (its `total_net_input_bytes`) and as the in-memory store counts them; and a record an earlier version
wrote in one piece is still read and restored."""

from __future__ import annotations

import asyncio
import uuid

import redis

from session_store import Claims, MemoryMarkStore, ShardConfig, ShardService
from session_store.core import DocumentRef, EpisodeSeed, Mark, Verdict
from session_store.marks.records import encode
from tests.unit.session_store.test_redis_marks import store

TTL = 600.0
SEED = EpisodeSeed({"rollout_id": "r1", "attempt": 0}, {"taskset": "t", "task_id": "1"}, "digest")
LONG_URL = "https://www.sec.gov/Archives/edgar/data/320193/" + "x" * 1_500 + ".htm"


def doc(n: int) -> DocumentRef:
    return DocumentRef(f"{n:064x}", 10_000 + n, f"{LONG_URL}?{n}")


def run(shard: ShardService, *ops) -> list:
    outcomes = asyncio.run(shard.run(list(ops)))
    assert all(ok for ok, _ in outcomes), outcomes
    return [value for _, value in outcomes]


def key(n: int) -> str:
    return f"document-{n:02d}-" + "k" * 200


def test_the_64th_document_writes_what_the_first_did_in_memory():
    marks = MemoryMarkStore()
    shard = ShardService(ShardConfig(TTL, durable_sessions=True), marks)
    run(shard, ("seed_episode", ("s", SEED)))
    cost = []
    for n in range(64):
        before = marks.bytes_written
        run(shard, ("put_document", ("s", key(n), doc(n))))
        cost.append(marks.bytes_written - before)
    assert max(cost) < 2 * min(cost) and max(cost) < 4_000, cost  # one document's bytes each, not the record's
    before = marks.bytes_written
    run(shard, ("finish_verify", ("s", "body", Verdict(1.0, 2))))
    assert marks.bytes_written - before < 200  # a verdict's few bytes
    (view,) = run(
        ShardService(ShardConfig(TTL, durable_sessions=True), marks),  # a later life restores it all
        ("read_documents", ("s", [], Claims("gone", "episode"))),
    )
    assert view.keys == [key(n) for n in range(64)]  # in the order they were stored


def test_a_real_redis_receives_one_documents_bytes_per_document(redis_server):
    namespace = f"parts-{uuid.uuid4().hex[:8]}"
    marks = store(redis_server.url, namespace)
    client = redis.Redis.from_url(redis_server.url)
    shard = ShardService(ShardConfig(TTL, durable_sessions=True), marks)
    run(shard, ("seed_episode", ("s", SEED)))
    assert client.type(marks._key("s")) == b"string"  # noqa: SLF001 (a seed with nothing stored: the head alone)

    def received() -> int:
        return client.info("stats")["total_net_input_bytes"]

    cost = []
    for n in range(64):
        before = received()
        run(shard, ("put_document", ("s", key(n), doc(n))))
        cost.append(received() - before)
    assert client.type(marks._key("s")) == b"hash" and client.pttl(marks._key("s")) > 0  # noqa: SLF001 (expires)
    record = len(encode(asyncio.run(marks.read(["s"]))["s"]))
    assert record > 64 * 1_500  # what the whole record weighs
    assert max(cost[1:]) < 2 * min(cost[1:]) < record / 20, (cost, record)  # each write carries one document
    (restored,) = run(
        ShardService(ShardConfig(TTL, durable_sessions=True), store(redis_server.url, namespace)),
        ("read_documents", ("s", [], Claims("gone", "episode"))),
    )
    assert restored.keys == [key(n) for n in range(64)]


def test_a_record_an_earlier_version_wrote_in_one_piece_is_restored(redis_server):
    """Before parts, a record was one string: a life of this version reads it, restores it and writes it anew."""
    namespace = f"legacy-{uuid.uuid4().hex[:8]}"
    marks = store(redis_server.url, namespace)
    record = {
        "started_at": 1e9,
        "episode": [SEED.episode_id, SEED.task_id, SEED.task_data_digest],
        "documents": {"filing": [doc(1).digest, doc(1).chars, doc(1).url]},
        "verdicts": [["body", 1.0, 2, None, None]],
    }
    old = Mark(fence_until=4e9, episode_id=SEED.episode_id, open_in="earlier-life", session=record)
    redis.Redis.from_url(redis_server.url).set(marks._key("s"), encode(old))  # noqa: SLF001 (as the old code did)
    shard = ShardService(ShardConfig(1e10, durable_sessions=True), marks)
    (view,) = run(shard, ("read_documents", ("s", ["filing"], Claims("earlier-life", "episode"))))
    assert view.documents == {"filing": doc(1)}
    run(shard, ("put_document", ("s", "second", doc(2))))
    (again,) = run(
        ShardService(ShardConfig(1e10, durable_sessions=True), store(redis_server.url, namespace)),
        ("finish_verify", ("s", "body", Verdict(0.0), Claims("x", "episode"))),
    )
    assert again.verdict == Verdict(1.0, 2) and set(again.documents) == {"filing", "second"}  # the kept verdict
