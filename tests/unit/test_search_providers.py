"""The hosted search providers (sec-api.io full-text search for edgar_search live mode, Tavily for web_search),
against a real loopback server that speaks their HTTP shapes (contract §A.7 live, §A.11)."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from datetime import date

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from deployments.threaded_server import ThreadedServer
from deployments.tools.edgar_search import LiveFullTextSearch, edgar_search
from deployments.tools.web_search import UNAVAILABLE, TavilySearch, web_search


class ProviderStub:
    def __init__(self):
        self.received: list[tuple[str, dict, str]] = []
        self.statuses: deque[int] = deque()
        app = Starlette(routes=[Route("/full-text-search", self._serve, methods=["POST"]),
                                Route("/search", self._serve, methods=["POST"])])
        self._server = ThreadedServer(app)
        self.url = self._server.url

    async def _serve(self, request: Request):
        body = await request.json()
        self.received.append((request.url.path, body, request.headers.get("authorization", "")))
        if self.statuses:
            return JSONResponse({"error": "scripted"}, status_code=self.statuses.popleft())
        if request.url.path == "/search":
            return JSONResponse({"results": [{"title": "t", "url": "https://example.com", "content": "c"}]})
        return JSONResponse({"total": {"value": 2}, "filings": [{"accessionNo": "a1"}, {"accessionNo": "a2"}]})

    def __enter__(self):
        self._server.__enter__()
        return self

    def __exit__(self, *exc):
        self._server.__exit__(*exc)


@pytest.fixture
def stub():
    with ProviderStub() as running:
        yield running


def search_args(**overrides):
    return {"search_query": "revenue", "form_types": None, "ciks": None, "start_date": "1900-01-01",
            "end_date": None, "page": 1, "top_n_results": 1, **overrides}


def test_sec_api_live_search_sends_the_request_and_slices_results(stub):
    backend = LiveFullTextSearch(stub.url, "key-123", backoff_seconds=0)
    args = search_args(form_types=["10-K"], ciks=["0000320193"], page=2, end_date="2024-12-31")
    rows = json.loads(asyncio.run(edgar_search(backend, args, cutoff=None)))
    assert rows == [{"accessionNo": "a1"}]
    (path, body, auth), = stub.received
    assert auth == "key-123" and body == {"query": "revenue", "startDate": "1900-01-01", "endDate": "2024-12-31",
                                          "page": "2", "formTypes": ["10-K"], "ciks": ["320193"]}


def test_sec_api_retries_throttling_then_reports_the_error(stub):
    stub.statuses.extend([429, 503, 503])
    backend = LiveFullTextSearch(stub.url, "k", backoff_seconds=0)
    result = json.loads(asyncio.run(edgar_search(backend, search_args(), cutoff=date(2025, 1, 1))))
    assert result == {"error": "sec-api.io answered HTTP 503"} and len(stub.received) == 3
    assert stub.received[0][1]["endDate"] == "2025-01-01"  # the cutoff clamps an open end date


def test_edgar_search_unavailable_without_a_mode():
    assert json.loads(asyncio.run(edgar_search(None, search_args(), cutoff=None))) == {
        "error": "edgar_search is not available. edgar_search_mode is not set."}


def test_tavily_search_and_its_retries(stub):
    provider = TavilySearch("tv-key", stub.url, backoff_seconds=0)
    stub.statuses.append(500)
    rows = json.loads(asyncio.run(web_search(provider, "apple", None, "2030-01-01", 50, date(2025, 4, 7))))
    assert rows[0]["url"] == "https://example.com" and len(stub.received) == 2
    path, body, auth = stub.received[-1]
    assert auth == "Bearer tv-key" and body["end_date"] == "2025-04-07" and body["max_results"] == 20
    assert "start_date" not in body and body["search_depth"] == "fast"


@pytest.mark.parametrize(
    "args, error",
    [
        (("  ", None, None, None), "search_query is required and cannot be empty."),
        (("q", None, "2024/01/01", None), "Invalid end_date format: '2024/01/01'. Expected YYYY-MM-DD."),
        (("q", "2024-13-01", None, None), "Invalid start_date: '2024-13-01' is not a calendar date. Expected YYYY-MM-DD."),
        (("q", "2024-06-01", "2024-01-01", None), "start_date '2024-06-01' is later than end_date '2024-01-01'."),
    ],
)
def test_web_search_argument_errors(stub, args, error):
    provider = TavilySearch("k", stub.url, backoff_seconds=0)
    assert json.loads(asyncio.run(web_search(provider, *args, cutoff=None))) == {"error": error}
    assert stub.received == []


def test_web_search_off_without_a_key():
    assert asyncio.run(web_search(None, "q", None, None, None, None)) == UNAVAILABLE


def test_web_search_provider_failure_is_a_tool_error(stub):
    stub.statuses.extend([500, 500, 500])
    result = json.loads(asyncio.run(web_search(TavilySearch("k", stub.url, backoff_seconds=0), "q", None, None,
                                               None, None)))
    assert "500" in result["error"] and len(stub.received) == 3
