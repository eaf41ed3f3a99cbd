"""web_search (contract §A.11): off unless a provider key is configured; Tavily is the provider NeMo Gym uses."""

from __future__ import annotations

import json
from datetime import date
from typing import Protocol

import httpx

from finsec.metrics import NO_METRICS, Metrics
from finsec.net.retry import RetryPolicy, TryAgain, with_retries
from finsec.tool_error import ToolError
from finsec.tools.dates import DateError, date_window
from finsec.tools.provider_answer import asked

__all__ = ["TavilySearch", "UNAVAILABLE", "web_search", "WebSearchError", "WebSearchProvider"]

UNAVAILABLE = json.dumps(
    {"error": "web_search is not available. Use sec_filing_search, parse_html_page, and retrieve_information instead."}
)


class WebSearchError(ToolError):
    """The provider gave no usable answer after its attempts; the agent reads the text."""


class WebSearchProvider(Protocol):
    async def search(self, query: str, *, max_results: int, start_date: str | None, end_date: str | None) -> list: ...


class TavilySearch:
    def __init__(
        self,
        api_key: str,
        base_url: str = "https://api.tavily.com",
        *,
        backoff_seconds: float = 1.0,
        timeout_seconds: float = 30.0,
        metrics: Metrics = NO_METRICS,
    ):
        self._url = base_url.rstrip("/") + "/search"
        # NeMo Gym's 3 attempts, 1 s then 2 s apart (scaled by backoff_seconds), jittered
        self._retries = RetryPolicy(attempts=3, first_wait=backoff_seconds, jitter=backoff_seconds / 2)
        self._metrics = metrics
        self._client = httpx.AsyncClient(headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout_seconds)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def search(self, query: str, *, max_results: int, start_date: str | None, end_date: str | None) -> list:
        body = {
            "query": query,
            "search_depth": "fast",
            "max_results": max_results,
            "chunks_per_source": 1,
            "end_date": end_date,
        }
        if start_date:
            body["start_date"] = start_date

        def attempt():  # every status is retried, as NeMo Gym's client does
            return asked(
                self._client,
                self._url,
                body,
                who="Tavily search",
                field="results",
                retried=lambda status: True,
                refused=WebSearchError,
            )

        try:
            return await with_retries(self._retries, "web_search", attempt, self._metrics)
        except TryAgain as spent:
            raise WebSearchError(spent.detail) from None


async def web_search(
    provider: WebSearchProvider | None,
    query: str,
    start_date: str | None,
    end_date: str | None,
    number_of_results: int | None,
    cutoff: date | None,
) -> str:
    if provider is None:
        return UNAVAILABLE
    if not query or not query.strip():
        return json.dumps({"error": "search_query is required and cannot be empty."})
    try:
        start, end = date_window(start_date, end_date, cutoff)
    except DateError as error:
        return json.dumps({"error": str(error)})
    try:
        results = await provider.search(
            query, max_results=min(number_of_results or 10, 20), start_date=start, end_date=end
        )
    except Exception as error:  # the provider's failure is the agent's to read, never a 500
        return json.dumps({"error": str(error)})
    return json.dumps(results)
