"""Durable marks in Ray's GCS key-value store (contract §C.4, §C.9): what the shards write, what a restarted shard
reads back (its own partitions only), and the reaper's sweep of lapsed marks, against a real cluster's GCS."""

from __future__ import annotations

import asyncio
import time
import uuid

from session_store.core import Mark
from session_store.marks import Written
from session_store.marks.gcs_store import GcsMarkStore
from session_store.routing import PARTITIONS, owned_partitions, shard_index

EVERYTHING = range(PARTITIONS)


def kinds(keys: list[bytes]) -> str:
    """What an ID's epoch keys are (`ep:<partition>:<length>:<id>:<epoch>:<kind>...`, an ID with no colon)."""
    return "".join(sorted(key.split(b":", 5)[5][:1].decode() for key in keys))


def test_marks_round_trip_and_the_sweep_deletes_only_what_lapsed(serve_url):
    store = GcsMarkStore(f"test-marks-{uuid.uuid4().hex[:8]}".encode())
    assert store.begin() == "new" and store.begin() == "continued"
    now = time.time()

    async def main():
        assert (
            await store.write(
                {
                    "lapsed": Mark(now - 5, "closed"),
                    "live": Mark(now + 3600, "closed"),
                    "expired": Mark(expired_until=now + 3600),
                }
            )
            == Written()
        )
        assert set(await store.read(["lapsed", "live", "missing"])) == {"lapsed", "live"}
        assert set(await store.scan(EVERYTHING)) == {"lapsed", "live", "expired"}
        assert await store.sweep(now) == 1
        assert set(await store.scan(EVERYTHING)) == {"live", "expired"}
        await store.write({"live": None})  # a delete
        assert set(await store.scan(EVERYTHING)) == {"expired"}
        assert await store.marker_present()
        await store.purge()
        assert not await store.marker_present()

    asyncio.run(main())


def test_a_settle_lists_only_the_partitions_a_shard_owns(serve_url):
    store = GcsMarkStore(f"test-marks-{uuid.uuid4().hex[:8]}".encode())
    ids = [f"id-{n}" for n in range(200)]
    now = time.time()

    async def main():
        await store.write({sid: Mark(now + 3600, "closed") for sid in ids})
        return [await store.scan(owned_partitions(k, 3)) for k in range(3)]

    shares = asyncio.run(main())
    for k, share in enumerate(shares):
        assert set(share) == {sid for sid in ids if shard_index(sid, 3) == k}


def test_the_sweep_spares_a_mark_written_again_after_its_listing(serve_url, monkeypatch):
    """A shard that fences a lapsed ID anew between the sweep's listing and its delete keeps the new fence."""
    store = GcsMarkStore(f"test-marks-{uuid.uuid4().hex[:8]}".encode())
    now = time.time()
    listing = GcsMarkStore._ids

    async def list_then_refence(self, prefix):
        ids = await listing(self, prefix)
        await self.write({"refenced": Mark(now + 3600, "closed")})  # the shard's close, mid-sweep
        return ids

    async def main():
        await store.write({"refenced": Mark(now - 5, "closed"), "lapsed": Mark(now - 5, "closed")})
        monkeypatch.setattr(GcsMarkStore, "_ids", list_then_refence)
        assert await store.sweep(now) == 1
        monkeypatch.setattr(GcsMarkStore, "_ids", listing)
        assert set(await store.scan(EVERYTHING)) == {"refenced"}

    asyncio.run(main())


def test_a_durable_session_is_kept_in_parts_a_document_writing_only_its_own(serve_url):
    """A session's record is its head and a key per document or verdict: a document's write puts that one key; a
    read (per ID) and a settle (a listing) join them; a close replaces the whole, its parts gone; a sweep of the
    lapsed record takes its parts too."""
    from session_store import ShardConfig, ShardService
    from session_store.core import DocumentRef, EpisodeSeed

    store = GcsMarkStore(f"test-marks-{uuid.uuid4().hex[:8]}".encode())
    store.begin()
    seed = EpisodeSeed({"rollout_id": "r", "attempt": 0}, {"taskset": "t", "task_id": "1"}, "d")
    shard = ShardService(ShardConfig(600.0, durable_sessions=True), store)
    puts = []
    original = store.write

    async def counted(changes, owners=None, parts=None):
        puts.append({sid: parts and parts.get(sid) for sid in changes})
        return await original(changes, owners, parts)

    async def main():
        store.write = counted
        await shard.run([("seed_episode", ("s", seed))])
        for n in range(3):
            [(ok, _)] = await shard.run([("put_document", ("s", f"k{n}", DocumentRef(f"{n:064x}", n, f"u{n}")))])
            assert ok
        keys = await gcs_kv().async_internal_kv_keys(b"ep:", store._namespace, timeout=10)
        assert kinds(keys) == "chppp"  # its epoch's claim and head, and a key per document
        read = (await store.read(["s"]))["s"].session
        assert list(read["documents"]) == ["k0", "k1", "k2"]
        assert list((await store.scan(EVERYTHING))["s"].session["documents"]) == ["k0", "k1", "k2"]
        await shard.run([("close", ("s", seed.episode_id))])
        assert kinds(await gcs_kv().async_internal_kv_keys(b"ep:", store._namespace, timeout=10)) == "ch"
        assert (await store.read(["s"]))["s"].cause == "closed"

    from session_store.gcs_kv import gcs_kv

    asyncio.run(main())
    assert [p["s"] for p in puts[1:4]] == [frozenset({f"d:k{n}"}) for n in range(3)]  # one part each


def test_a_close_deletes_its_parts_by_name_never_by_a_prefix(serve_url, monkeypatch):
    """The GCS finds a prefix's keys by reading every key it holds, so a close that deleted its session's parts by
    prefix would cost more the more sessions are open. A store deletes the parts it wrote by name; by prefix only
    the parts of an epoch it forgot it held (found again by a read), whose names it does not know."""
    from session_store import ShardConfig, ShardService
    from session_store.core import DocumentRef, EpisodeSeed
    from session_store.gcs_kv import gcs_kv
    from session_store.marks import gcs_store

    calls: list[tuple[str, tuple]] = []

    class Recorded:
        def __init__(self, client):
            self._client = client

        def __getattr__(self, name: str):
            method = getattr(self._client, name)

            async def call(*args, **kwargs):
                calls.append((name, args))
                return await method(*args, **kwargs)

            return call

    recorded = Recorded(gcs_kv())
    monkeypatch.setattr(gcs_store, "gcs_kv", lambda: recorded)
    store = GcsMarkStore(f"test-marks-{uuid.uuid4().hex[:8]}".encode())
    store.begin()
    shard = ShardService(ShardConfig(600.0, durable_sessions=True), store)

    def by_prefix() -> list[str]:
        return [
            name
            for name, args in calls
            if name == "async_internal_kv_keys" or (name == "async_internal_kv_del" and args[1])
        ]

    async def episode(sid: str, forget: bool) -> str:
        seed = EpisodeSeed({"rollout_id": sid, "attempt": 0}, {"taskset": "t", "task_id": "1"}, "d")
        await shard.run([("seed_episode", (sid, seed))])
        for n in range(3):
            [(ok, _)] = await shard.run([("put_document", (sid, f"k{n}", DocumentRef(f"{n:064x}", n, f"u{n}")))])
            assert ok
        if forget:
            store._held.clear()
        calls.clear()
        await shard.run([("close", (sid, seed.episode_id))])
        assert (await store.read([sid]))[sid].cause == "closed"
        return kinds(await gcs_kv().async_internal_kv_keys(gcs_store._epoch_prefix(sid), store._namespace, timeout=10))

    async def main():
        assert await episode("s", forget=False) == "ch"  # the parts gone: a claim and the fence's head
        assert by_prefix() == []
        assert await episode("t", forget=True) == "ch"
        assert by_prefix() == ["async_internal_kv_del"]

    asyncio.run(main())
