"""The application's one copy of every stored document text, by digest (design: documents by content).

Sessions hold `key -> DocumentRef(digest, ...)` on their shards; the text itself lives here once, however many
sessions store it: a GRPO group of 16 rollouts parsing one 10-K holds one copy, not sixteen. Ingress replicas
keep their own LRU of texts by digest, so a text crosses the hop only on a replica's first use.

What a text is kept for:
- it is *referenced*: some shard named its digest at the last reaper sweep, or it was put or touched within the
  grace window (a put happens a moment before the session's shard records the reference);
- or it is a filing (`cacheable`), kept in an LRU under the byte budget even when no session names it, since a
  filing never changes and the next rollout will likely parse it again. Pages fetched for agents are not.

Reference counting is done by the shards (their `referenced_digests()`); the reaper hands the union to `sweep`.
That is mark and sweep rather than messages per release, so a shard or a replica that dies mid-request can
never leave a count wrong: at worst a text outlives its last reference by one reaper tick.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from .errors import StoreFull

__all__ = ["DocumentStore", "DocumentStoreService", "SweepReport"]


@dataclass
class _Entry:
    text: str
    bytes: int
    cacheable: bool
    touched_at: float
    url: str | None = None
    referenced: bool = False


@dataclass(frozen=True)
class SweepReport:
    dropped: int
    kept: int
    bytes: int


class DocumentStore:
    def __init__(self, *, max_bytes: int, grace_seconds: float = 60.0, clock: Callable[[], float] = time.time):
        self.max_bytes = max_bytes
        self.grace_seconds = grace_seconds
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._by_url: dict[str, str] = {}  # filing URL -> digest
        self.bytes = 0
        self.hits = self.misses = 0
        # When the last sweep ran. Its `referenced` flags judge only texts touched a grace window before it; a text
        # put later may be named by a session the sweep did not hear of, however long the next sweep takes.
        self._swept_at = float("-inf")

    def put(self, digest: str, text: str, url: str | None = None, cacheable: bool = False) -> None:
        """Keep `text` under `digest`. Refused (StoreFull) only when texts that sessions need fill the budget."""
        entry = self._entries.get(digest)
        if entry is not None:
            entry.touched_at = self._clock()
            entry.cacheable = entry.cacheable or cacheable
            self._entries.move_to_end(digest)
        else:
            size = sys.getsizeof(text)
            self._make_room(size)
            self._entries[digest] = entry = _Entry(text, size, cacheable, self._clock())
            self.bytes += size
        if url is not None and cacheable:
            self._by_url[url] = digest
            entry.url = url

    def touch(self, digests: list[str]) -> list[str]:
        """Mark texts as in use now; returns the digests this store does not hold (the caller puts them)."""
        now, missing = self._clock(), []
        for digest in digests:
            entry = self._entries.get(digest)
            if entry is None:
                missing.append(digest)
            else:
                entry.touched_at = now
                self._entries.move_to_end(digest)
        return missing

    def get(self, digests: list[str]) -> dict[str, str]:
        found = {}
        for digest in digests:
            entry = self._entries.get(digest)
            if entry is None:
                self.misses += 1
                continue
            self.hits += 1
            entry.touched_at = self._clock()
            self._entries.move_to_end(digest)
            found[digest] = entry.text
        return found

    def by_url(self, url: str) -> tuple[str, str] | None:
        """A filing parsed before (by any replica): its digest and text."""
        digest = self._by_url.get(url)
        found = self.get([digest]) if digest is not None else {}
        if digest is None or digest not in found:
            self._by_url.pop(url, None)
            return None
        return digest, found[digest]

    def sweep(self, referenced: set[str]) -> SweepReport:
        """Drop what no session names and nobody touched within the grace window; filings stay as cache."""
        cutoff = self._clock() - self.grace_seconds
        dropped = 0
        for digest, entry in list(self._entries.items()):
            entry.referenced = digest in referenced
            if not entry.referenced and not entry.cacheable and entry.touched_at < cutoff:
                self._drop(digest)
                dropped += 1
        self._swept_at = self._clock()
        return SweepReport(dropped, len(self._entries), self.bytes)

    def stats(self) -> dict[str, int]:
        return {
            "texts": len(self._entries),
            "bytes": self.bytes,
            "hits": self.hits,
            "misses": self.misses,
            "referenced": sum(e.referenced for e in self._entries.values()),
        }

    def _make_room(self, size: int) -> None:
        cutoff = min(self._clock(), self._swept_at) - self.grace_seconds
        for digest in [d for d, e in self._entries.items() if not e.referenced and e.touched_at < cutoff]:
            if self.bytes + size <= self.max_bytes:
                return
            self._drop(digest)  # least recently used first: an unreferenced filing kept as cache
        if self.bytes + size > self.max_bytes:
            raise StoreFull(
                f"The document store is full ({self.bytes:,} of document_store_bytes={self.max_bytes:,} bytes "
                "held for open sessions); retry after sessions close, or raise the limit."
            )

    def _drop(self, digest: str) -> None:
        entry = self._entries.pop(digest)
        self.bytes -= entry.bytes
        if entry.url is not None and self._by_url.get(entry.url) == digest:
            del self._by_url[entry.url]


class DocumentStoreService:
    """A DocumentStore behind the async interface its callers use, whether it runs in their process (tests, the
    one-process baseline) or in the app's document-store actor (`ray_actors.DocumentStoreActor`)."""

    def __init__(self, store: DocumentStore):
        self.store = store

    async def put(self, digest: str, text: str, url: str | None, cacheable: bool) -> None:
        self.store.put(digest, text, url, cacheable)

    async def touch(self, digests: list[str]) -> list[str]:
        return self.store.touch(digests)

    async def get(self, digests: list[str]) -> dict[str, str]:
        return self.store.get(digests)

    async def by_url(self, url: str) -> tuple[str, str] | None:
        return self.store.by_url(url)

    async def sweep(self, referenced: set[str]) -> SweepReport:
        return self.store.sweep(referenced)
