"""Live EDGAR over HTTP: www.sec.gov and data.sec.gov (base URLs from settings), NeMo Gym's client policy
(contract §F.2): a declared User-Agent on every request, a rate-limit slot before every attempt, retries
with exponential backoff on 403/429/503 and on transport errors or timeouts, and "no data" otherwise.

Every request goes through the guarded fetcher (`deployments.net.policy.FetchPolicy.sec_fetcher`): SEC
hosts only, every redirect hop and resolved address checked, the byte cap, no environment proxies. A
refusal by that guard is final ("no data", no retry): asking again gets the same answer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from ..net.policy import RateLimiter
from ..net.safe_fetch import FetchedPage, FetchFailed, FetchRefused
from .source import parse_json
from .urls import is_edgar_path

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({403, 429, 503})

__all__ = ["RETRY_STATUSES", "Fetcher", "LiveSource", "RateLimiter"]


class Fetcher(Protocol):
    """A SafeFetcher: `fetch` returns the page or raises FetchRefused / FetchFailed."""

    async def fetch(self, url: str) -> FetchedPage: ...


class LiveSource:
    def __init__(
        self,
        *,
        fetcher: Fetcher,
        www_base_url: str,
        data_base_url: str,
        limiter: RateLimiter,
        max_attempts: int = 3,
        backoff_seconds: float = 1.0,
        max_connections_per_host: int = 10,
    ):
        self._fetcher = fetcher
        self._www = www_base_url.rstrip("/")
        self._data = data_base_url.rstrip("/")
        self._limiter = limiter
        self._attempts = max_attempts
        self._backoff = backoff_seconds
        # The guarded fetcher opens a connection per request (no pool), so cap concurrent requests per
        # base URL here, as the shared pool did (§F.2 max_connections_per_host).
        self._connections = {base: asyncio.Semaphore(max_connections_per_host) for base in (self._www, self._data)}

    def url_for(self, path: str) -> str:
        """Submissions live on data.sec.gov, everything else on www.sec.gov."""
        return f"{self._base_for(path)}/{path}"

    def _base_for(self, path: str) -> str:
        return self._data if path.startswith("submissions/") else self._www

    async def read_json(self, path: str) -> Any | None:
        return await parse_json(await self.read_archive(path))

    async def read_archive(self, path: str) -> bytes | None:
        if not is_edgar_path(path):  # the same layout the mirror serves; nothing else is asked of SEC
            log.warning("EDGAR: refused %.200r, which is not a path of the EDGAR layout", path)
            return None
        async with self._connections[self._base_for(path)]:
            return await self._get(self.url_for(path))

    async def _get(self, url: str) -> bytes | None:
        for attempt in range(self._attempts):
            last = attempt == self._attempts - 1
            await self._limiter.acquire()  # a slot per attempt: retries count against the limit too
            try:
                return (await self._fetcher.fetch(url)).body
            except FetchRefused as refusal:
                log.warning("EDGAR %s refused by the fetch guard: %s", url, refusal)
                return None
            except FetchFailed as failure:
                if failure.status is not None and failure.status not in RETRY_STATUSES:
                    return None
                log.warning("EDGAR %s failed (attempt %d/%d): %s", url, attempt + 1, self._attempts, failure)
            if not last:
                await asyncio.sleep(self._backoff * 2**attempt)
        return None

    async def aclose(self) -> None:
        pass  # the guarded fetcher holds no connections between requests
