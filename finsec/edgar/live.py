"""Live EDGAR over HTTP: www.sec.gov and data.sec.gov (base URLs from settings), NeMo Gym's client policy
(contract §F.2): a declared User-Agent on every request, a rate-limit slot before every attempt, retries
(finsec/net/retry.py: jittered exponential backoff, Retry-After) on 403/429/503 and on transport errors or
timeouts, and "no data" otherwise. Each read is counted by status, and each slot's wait timed
(`finsec_sec_fetches`, `finsec_rate_limit_wait_seconds`).

Every request goes through the guarded fetcher (`finsec.net.policy.FetchPolicy.sec_fetcher`): SEC
hosts only, every redirect hop and resolved address checked, the byte cap, no environment proxies. A
refusal by that guard is final ("no data", no retry): asking again gets the same answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Protocol

from finsec.edgar.source import parse_json
from finsec.edgar.urls import is_edgar_path
from finsec.metrics import NO_METRICS, Metrics
from finsec.net.policy import RateLimiter
from finsec.net.retry import RetryPolicy, TryAgain, with_retries
from finsec.net.safe_fetch import FetchedPage, FetchFailed, FetchRefused

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
        metrics: Metrics = NO_METRICS,
    ):
        self._fetcher = fetcher
        self._www = www_base_url.rstrip("/")
        self._data = data_base_url.rstrip("/")
        self._limiter = limiter
        # §F.2: 2^attempt x backoff between attempts (jittered); a Retry-After is honoured up to the longest of them
        self._retries = RetryPolicy(
            attempts=max_attempts,
            first_wait=backoff_seconds,
            jitter=backoff_seconds / 2,
            longest_wait=backoff_seconds * 2 ** max(0, max_attempts - 2),
        )
        self._metrics = metrics
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
        try:
            return await with_retries(self._retries, "sec", lambda: self._attempt(url), self._metrics)
        except TryAgain as spent:
            log.warning("EDGAR %s failed after its retries: %s", url, spent.detail)
            return None

    async def _attempt(self, url: str) -> bytes | None:
        waiting = time.monotonic()
        await self._limiter.acquire()  # a slot per attempt: retries count against the limit too
        self._metrics.rate_limit_wait(time.monotonic() - waiting)
        try:
            page = await self._fetcher.fetch(url)
        except FetchRefused as refusal:
            self._metrics.sec_fetch("live", "refused")
            log.warning("EDGAR %s refused by the fetch guard: %s", url, refusal)
            return None
        except FetchFailed as failure:
            self._metrics.sec_fetch("live", failure.status or "error")
            if failure.status is not None and failure.status not in RETRY_STATUSES:
                return None
            raise TryAgain(failure.status or "transport", str(failure), failure.retry_after) from None
        self._metrics.sec_fetch("live", page.status)
        return page.body

    async def aclose(self) -> None:
        pass  # the guarded fetcher holds no connections between requests
