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


def test_marks_round_trip_and_the_sweep_deletes_only_what_lapsed(serve_url):
    store = GcsMarkStore(f"test-marks-{uuid.uuid4().hex[:8]}".encode())
    assert store.begin() == "new" and store.begin() == "continued"
    now = time.time()

    async def main():
        assert await store.write({"lapsed": Mark(now - 5, "closed"), "live": Mark(now + 3600, "closed"),
                                  "expired": Mark(expired_until=now + 3600)}) == Written()
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
    listing = GcsMarkStore._each_batch

    async def list_then_refence(self, *args):
        async for batch in listing(self, *args):
            await self.write({"refenced": Mark(now + 3600, "closed")})  # the shard's close, mid-sweep
            yield batch

    async def main():
        await store.write({"refenced": Mark(now - 5, "closed"), "lapsed": Mark(now - 5, "closed")})
        monkeypatch.setattr(GcsMarkStore, "_each_batch", list_then_refence)
        assert await store.sweep(now) == 1
        monkeypatch.setattr(GcsMarkStore, "_each_batch", listing)
        assert set(await store.scan(EVERYTHING)) == {"refenced"}

    asyncio.run(main())
