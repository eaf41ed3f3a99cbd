"""Durable marks in Ray's GCS key-value store (contract §C.4, §C.9): what the shards write, what a restarted shard
reads back, and the reaper's sweep of lapsed marks, against a real cluster's GCS."""

from __future__ import annotations

import asyncio
import time
import uuid

from session_store.core import Mark
from session_store.ray_actors import GcsMarkStore


def test_marks_round_trip_and_the_sweep_deletes_only_what_lapsed(serve_url):
    store = GcsMarkStore(f"test-marks-{uuid.uuid4().hex[:8]}".encode())
    now = time.time()

    async def main():
        assert await store.write({"lapsed": Mark(now - 5, "closed"), "live": Mark(now + 3600, "closed"),
                                  "expired": Mark(expired_until=now + 3600)}) == set()
        assert set(await store.read(["lapsed", "live", "missing"])) == {"lapsed", "live"}
        assert set(await store.scan()) == {"lapsed", "live", "expired"}
        assert await store.sweep(now) == 1
        assert set(await store.scan()) == {"live", "expired"}
        await store.write({"live": None})  # a delete
        assert set(await store.scan()) == {"expired"}

    asyncio.run(main())


def test_the_sweep_spares_a_mark_written_again_after_its_scan(serve_url, monkeypatch):
    """A shard that fences a lapsed ID anew between the sweep's scan and its delete keeps the new fence."""
    store = GcsMarkStore(f"test-marks-{uuid.uuid4().hex[:8]}".encode())
    now = time.time()
    scan = GcsMarkStore._all

    async def scan_then_refence(self, *args):
        found = await scan(self, *args)
        await self.write({"refenced": Mark(now + 3600, "closed")})  # the shard's close, mid-sweep
        return found

    async def main():
        await store.write({"refenced": Mark(now - 5, "closed"), "lapsed": Mark(now - 5, "closed")})
        monkeypatch.setattr(GcsMarkStore, "_all", scan_then_refence)
        assert await store.sweep(now) == 1
        monkeypatch.setattr(GcsMarkStore, "_all", scan)
        assert set(await store.scan()) == {"refenced"}

    asyncio.run(main())
