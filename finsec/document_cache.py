"""This replica's cache of document texts by digest, in front of the application's one document store
(session_store/documents.py). A text crosses the actor hop only on the replica's first use of it.

The store drops a text nobody references once its grace window passes, so before a session names a digest
the store must hold that text. `remember` makes sure of it: a put the first time, a touch later, and nothing
when this replica confirmed the text within half the grace window (no sweep can have dropped it since: a
sweep only drops texts untouched for a whole window). Touches that concurrent requests make go to the store
together, one call per batch (`Coalescer`), not one per (replica, text).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Protocol

from finsec.metrics import NO_METRICS, Metrics
from session_store import BoundedLru, Coalescer

__all__ = ["DocumentCache", "DocumentStoreClient"]


class DocumentStoreClient(Protocol):
    async def put(self, digest: str, text: str, url: str | None, cacheable: bool) -> None: ...

    async def touch(self, digests: list[str]) -> list[str]: ...

    async def get(self, digests: list[str]) -> dict[str, str]: ...

    async def by_url(self, url: str) -> tuple[str, str] | None: ...


class DocumentCache:
    def __init__(
        self,
        store: DocumentStoreClient,
        *,
        max_bytes: int,
        grace_seconds: float,
        clock: Callable[[], float] = time.time,
        metrics: Metrics = NO_METRICS,
    ):
        self._store = store
        self._metrics = metrics
        self._texts: BoundedLru[str, str] = BoundedLru(max_bytes, sys.getsizeof)
        self._filings: BoundedLru[str, str] = BoundedLru(8 << 20, lambda digest: 200)  # filing URL -> digest
        self._confirmed: BoundedLru[str, float] = BoundedLru(8 << 20, lambda at: 100)  # digest -> when
        self._window = grace_seconds / 2
        self._clock = clock
        self._touches: Coalescer[str, bool] = Coalescer(self._touch_together)

    def local_filing(self, url: str) -> tuple[str, str] | None:
        """A filing this replica holds: (digest, text), with no hop at all."""
        digest = self._filings.get(url)
        if digest is None:
            return None
        text = self._texts.get(digest)
        return (digest, text) if text is not None else None

    async def filing(self, url: str) -> tuple[str, str] | None:
        """A filing any replica parsed before: here, else from the document store."""
        found = self.local_filing(url)
        if found is None and (found := await self._store.by_url(url)) is not None:
            self._keep(found[0], found[1], url)
            self._confirmed.put(found[0], self._clock())
        return found

    async def remember(self, digest: str, text: str, url: str, *, filing: bool) -> None:
        """Make sure the document store holds this text now (see the module docstring)."""
        self._keep(digest, text, url if filing else None)
        confirmed = self._confirmed.get(digest)
        now = self._clock()
        if confirmed is not None and now - confirmed < self._window:
            return
        if confirmed is None or await self._touches.submit(digest):
            await self._store.put(digest, text, url, filing)
        self._confirmed.put(digest, now)

    async def _touch_together(self, digests: list[str]) -> list[bool]:
        """One touch for a batch of digests; for each, whether the store lacks it (the caller puts it)."""
        missing = set(await self._store.touch(list(dict.fromkeys(digests))))
        return [digest in missing for digest in digests]

    async def texts(self, digests: list[str]) -> dict[str, str]:
        """The texts of these digests: this replica's, then the store's. A digest neither holds is absent."""
        found = {d: t for d in digests if (t := self._texts.get(d)) is not None}
        missing = [d for d in digests if d not in found]
        for digest in digests:
            self._metrics.cache_lookup("texts", digest in found)
        if missing:
            fetched = await self._store.get(missing)
            for digest, text in fetched.items():
                self._keep(digest, text, None)
            found.update(fetched)
        return found

    def _keep(self, digest: str, text: str, url: str | None) -> None:
        self._texts.put(digest, text)
        if url is not None:
            self._filings.put(url, digest)
