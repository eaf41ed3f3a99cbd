"""Documents by content: the app-wide document store and a replica's cache in front of it."""

from __future__ import annotations

import asyncio

import pytest

from finsec.document_cache import DocumentCache
from session_store import DocumentStore, DocumentStoreService, StoreFull


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_one_copy_per_text_however_many_puts(clock):
    store = DocumentStore(max_bytes=10_000_000, clock=clock)
    for _ in range(16):
        store.put("d", "a 10-K" * 1000, "https://www.sec.gov/x", cacheable=True)
    assert store.stats()["texts"] == 1 and store.get(["d"]) == {"d": "a 10-K" * 1000}


def test_sweep_drops_unreferenced_pages_after_the_grace_window_and_keeps_filings(clock):
    store = DocumentStore(max_bytes=10_000_000, grace_seconds=60, clock=clock)
    store.put("page", "agent page", "https://docs.example.com", cacheable=False)
    store.put("filing", "a filing", "https://www.sec.gov/f", cacheable=True)
    store.put("held", "a page a session holds", None, cacheable=False)
    clock.now = 30
    assert store.sweep(referenced=set()).dropped == 0  # within the grace window: a session may name it next
    clock.now = 61
    report = store.sweep(referenced={"held"})
    assert report.dropped == 1 and set(store.get(["page", "filing", "held"])) == {"filing", "held"}
    assert store.by_url("https://www.sec.gov/f") == ("filing", "a filing")


def test_a_full_store_evicts_cache_before_refusing(clock):
    store = DocumentStore(max_bytes=3_000, grace_seconds=10, clock=clock)
    store.put("old-filing", "x" * 1_000, "https://www.sec.gov/a", cacheable=True)
    store.put("held", "y" * 1_000, None, cacheable=False)
    clock.now = 11
    store.sweep(referenced={"held"})
    store.put("new", "z" * 1_000, None)  # room is made by dropping the unreferenced filing
    assert set(store.get(["old-filing", "held", "new"])) == {"held", "new"}
    assert store.by_url("https://www.sec.gov/a") is None
    with pytest.raises(StoreFull, match="document_store_bytes"):
        store.put("too-much", "w" * 2_000, None)  # what is left is all needed by sessions


def test_the_replica_cache_confirms_texts_once_per_half_window(clock):
    store = DocumentStore(max_bytes=10_000_000, grace_seconds=60, clock=clock)
    calls = []

    class Counting(DocumentStoreService):
        async def put(self, *args):
            calls.append("put")
            await super().put(*args)

        async def touch(self, digests):
            calls.append("touch")
            return await super().touch(digests)

    cache = DocumentCache(Counting(store), max_bytes=10_000_000, grace_seconds=60, clock=clock)

    async def scenario():
        await cache.remember("d", "text", "https://www.sec.gov/f", filing=True)
        clock.now = 20
        await cache.remember("d", "text", "https://www.sec.gov/f", filing=True)  # confirmed 20 s ago: no hop
        clock.now = 50
        await cache.remember("d", "text", "https://www.sec.gov/f", filing=True)  # a touch keeps it held
        clock.now = 200
        store.sweep(set())
        store._entries.clear()  # the document store restarted and came back empty
        await cache.remember("d", "text", "https://www.sec.gov/f", filing=True)  # the touch finds it gone

    asyncio.run(scenario())
    assert calls == ["put", "touch", "touch", "put"] and store.get(["d"]) == {"d": "text"}


def test_concurrent_touches_go_to_the_store_together(clock):
    store = DocumentStore(max_bytes=10_000_000, grace_seconds=60, clock=clock)
    touched: list[list[str]] = []

    class Counting(DocumentStoreService):
        async def touch(self, digests):
            touched.append(digests)
            await asyncio.sleep(0.01)  # a hop: what arrives meanwhile rides the next call
            return await super().touch(digests)

    service = Counting(store)
    texts = {f"d{n}": f"text {n}" for n in range(20)}
    for digest, text in texts.items():
        store.put(digest, text)
    cache = DocumentCache(service, max_bytes=10_000_000, grace_seconds=60, clock=clock)
    cache._confirmed.put("gone", 0.0)  # confirmed long ago; the store has since lost it

    async def scenario():
        for digest in texts:
            cache._confirmed.put(digest, 0.0)
        clock.now = 100
        await asyncio.gather(*(cache.remember(d, t, "", filing=False) for d, t in [*texts.items(), ("gone", "g")]))

    asyncio.run(scenario())
    assert len(touched) <= 2 and sorted(d for call in touched for d in call) == sorted([*texts, "gone"])
    assert store.get(["gone"]) == {"gone": "g"}  # the batch told the one missing text's caller to put it


def test_the_replica_cache_reads_a_text_once_from_the_store(clock):
    store = DocumentStore(max_bytes=10_000_000, clock=clock)
    store.put("d", "text", "https://www.sec.gov/f", cacheable=True)
    cache = DocumentCache(DocumentStoreService(store), max_bytes=10_000_000, grace_seconds=60, clock=clock)
    assert asyncio.run(cache.texts(["d", "missing"])) == {"d": "text"}
    assert asyncio.run(cache.texts(["d"])) == {"d": "text"} and store.stats()["hits"] == 1
    assert asyncio.run(cache.filing("https://www.sec.gov/f")) == ("d", "text")
    assert cache.local_filing("https://www.sec.gov/f") == ("d", "text")


def test_a_text_put_after_the_last_sweep_is_never_evicted_however_late_the_next_sweep(clock):
    """A sweep that does not come (a shard missed the reaper's tick) must not expose a text a session may hold."""
    store = DocumentStore(max_bytes=2_500, grace_seconds=10, clock=clock)
    store.sweep(referenced=set())
    clock.now = 5
    store.put("held-since", "y" * 1_000, None)  # a session names it; no sweep has heard of that yet
    clock.now = 1_000  # sweeps skipped for far longer than the grace window
    with pytest.raises(StoreFull):
        store.put("new", "z" * 1_500, None)
    assert store.stats()["texts"] == 1  # still held (stats, unlike get, does not touch it)
    assert store.sweep(referenced=set()).dropped == 1  # now it has been judged: nobody names it
    store.put("new", "z" * 1_500, None)
    assert set(store.get(["held-since", "new"])) == {"new"}
