"""Live EDGAR over HTTP: www.sec.gov and data.sec.gov (base URLs from settings), NeMo Gym's client policy
(contract §F.2): a declared User-Agent on every request, a rate-limit slot before every attempt, retries
with exponential backoff on 403/429/503 and on transport errors or timeouts, and "no data" otherwise."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

import httpx

from .source import json_or_none

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({403, 429, 503})


class RateLimiter(Protocol):
    async def acquire(self) -> None: ...


class LiveSource:
    def __init__(
        self,
        *,
        www_base_url: str,
        data_base_url: str,
        user_agent: str,
        limiter: RateLimiter,
        timeout_seconds: float = 30.0,
        max_attempts: int = 3,
        backoff_seconds: float = 1.0,
        max_connections_per_host: int = 10,
    ):
        self._www = www_base_url.rstrip("/")
        self._data = data_base_url.rstrip("/")
        self._limiter = limiter
        self._attempts = max_attempts
        self._backoff = backoff_seconds
        self._client = httpx.AsyncClient(
            headers={"User-Agent": user_agent, "Accept-Encoding": "gzip, deflate"},
            timeout=httpx.Timeout(timeout_seconds),
            limits=httpx.Limits(max_connections=50, max_keepalive_connections=max_connections_per_host),
            follow_redirects=True,
        )

    def url_for(self, path: str) -> str:
        """Submissions live on data.sec.gov, everything else on www.sec.gov."""
        return f"{self._data if path.startswith('submissions/') else self._www}/{path}"

    async def read_json(self, path: str) -> Any | None:
        return json_or_none(await self.read_archive(path))

    async def read_archive(self, path: str) -> bytes | None:
        return await self.get(self.url_for(path))

    async def get(self, url: str) -> bytes | None:
        for attempt in range(self._attempts):
            last = attempt == self._attempts - 1
            await self._limiter.acquire()  # a slot per attempt: retries count against the limit too
            try:
                response = await self._client.get(url)
            except httpx.HTTPError as error:
                log.warning("EDGAR %s failed (attempt %d/%d): %r", url, attempt + 1, self._attempts, error)
                if not last:
                    await asyncio.sleep(self._backoff * 2**attempt)
                continue
            if response.status_code == 200:
                return response.content
            if response.status_code not in RETRY_STATUSES:
                return None
            log.warning("EDGAR %s answered %d (attempt %d/%d)", url, response.status_code, attempt + 1, self._attempts)
            if not last:
                await asyncio.sleep(self._backoff * 2**attempt)
        return None

    async def aclose(self) -> None:
        await self._client.aclose()
