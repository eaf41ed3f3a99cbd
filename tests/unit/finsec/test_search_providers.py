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

from finsec.edgar.companies import CompanyDirectory
from finsec.edgar.source import MirrorSource
from finsec.tools.edgar_search import LiveFullTextSearch, LocalFullTextIndex, edgar_search
from finsec.tools.web_search import UNAVAILABLE, TavilySearch, web_search
from finsec_client.threaded_server import ThreadedServer

NO_ANSWER = object()


class ProviderStub:
    def __init__(self):
        self.received: list[tuple[str, dict, str]] = []
        self.statuses: deque[int] = deque()
        self.answer = NO_ANSWER  # a JSON value to answer every 200 with, instead of the provider's shape
        app = Starlette(
            routes=[
                Route("/full-text-search", self._serve, methods=["POST"]),
                Route("/search", self._serve, methods=["POST"]),
            ]
        )
        self._server = ThreadedServer(app)
        self.url = self._server.url

    async def _serve(self, request: Request):
        body = await request.json()
        self.received.append((request.url.path, body, request.headers.get("authorization", "")))
        if self.statuses:
            return JSONResponse({"error": "scripted"}, status_code=self.statuses.popleft())
        if self.answer is not NO_ANSWER:
            return JSONResponse(self.answer)
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
    return {
        "search_query": "revenue",
        "form_types": None,
        "ciks": None,
        "start_date": "1900-01-01",
        "end_date": None,
        "page": 1,
        "top_n_results": 1,
        **overrides,
    }


def test_sec_api_live_search_sends_the_request_and_slices_results(stub):
    backend = LiveFullTextSearch(stub.url, "key-123", backoff_seconds=0)
    args = search_args(form_types=["10-K"], ciks=["0000320193"], page=2, end_date="2024-12-31")
    rows = json.loads(asyncio.run(edgar_search(backend, args, cutoff=None)))
    assert rows == [{"accessionNo": "a1"}]
    ((path, body, auth),) = stub.received
    assert auth == "key-123" and body == {
        "query": "revenue",
        "startDate": "1900-01-01",
        "endDate": "2024-12-31",
        "page": "2",
        "formTypes": ["10-K"],
        "ciks": ["320193"],
    }


def test_sec_api_retries_throttling_then_reports_the_error(stub):
    stub.statuses.extend([429, 503, 503])
    backend = LiveFullTextSearch(stub.url, "k", backoff_seconds=0)
    result = json.loads(asyncio.run(edgar_search(backend, search_args(), cutoff=date(2025, 1, 1))))
    assert result == {"error": "sec-api.io full-text search failed: HTTP 503"} and len(stub.received) == 3
    assert stub.received[0][1]["endDate"] == "2025-01-01"  # the cutoff clamps an open end date


def test_edgar_search_unavailable_without_a_mode():
    assert json.loads(asyncio.run(edgar_search(None, search_args(), cutoff=None))) == {
        "error": "edgar_search is not available. edgar_search_mode is not set."
    }


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
        (
            ("q", "2024-13-01", None, None),
            "Invalid start_date: '2024-13-01' is not a calendar date. Expected YYYY-MM-DD.",
        ),
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
    result = json.loads(
        asyncio.run(web_search(TavilySearch("k", stub.url, backoff_seconds=0), "q", None, None, None, None))
    )
    assert "500" in result["error"] and len(stub.received) == 3


# ----- a 200 whose JSON is not of the provider's shape (an object with a list of objects) -----

NOT_THE_SHAPE = {  # name: (answer, where sec-api's `filings` / Tavily's `results` goes, what the error says)
    "an array": (lambda field: [{"accessionNo": "a1"}], "the answer is an array, not a JSON object"),
    "a string": (lambda field: "maintenance", "the answer is a string, not a JSON object"),
    "a number": (lambda field: 503, "the answer is a number, not a JSON object"),
    "null": (lambda field: None, "the answer is null, not a JSON object"),
    "a boolean": (lambda field: True, "the answer is a boolean, not a JSON object"),
    "the list an object": (lambda field: {field: {"0": {}}}, "the answer's '{field}' is an object, not a list"),
    "the list a string": (lambda field: {field: "none"}, "the answer's '{field}' is a string, not a list"),
    "an item a string": (
        lambda field: {field: [{}, "x"]},
        "item 1 of the answer's '{field}' is a string, not an object",
    ),
    "an item null": (lambda field: {field: [None]}, "item 0 of the answer's '{field}' is null, not an object"),
}


@pytest.mark.parametrize("shape", list(NOT_THE_SHAPE))
def test_sec_api_answering_another_json_shape_is_a_clear_error(stub, shape):
    """§A.7 step 5. Mutation: reading the answer with `.get` unchecked (AttributeError or TypeError: a 500),
    or passing items that are not records on to the agent, fails this."""
    answer, says = NOT_THE_SHAPE[shape]
    stub.answer = answer("filings")
    backend = LiveFullTextSearch(stub.url, "k", backoff_seconds=0)
    result = json.loads(asyncio.run(edgar_search(backend, search_args(top_n_results=5), cutoff=None)))
    assert result == {"error": f"sec-api.io full-text search failed: {says.format(field='filings')}"}
    assert len(stub.received) == 3  # retried, as an answer that is not JSON is


@pytest.mark.parametrize("shape", list(NOT_THE_SHAPE))
def test_tavily_answering_another_json_shape_is_a_clear_error(stub, shape):
    """§A.11 step 6. Mutation: returning whatever `results` holds, or the AttributeError's text."""
    answer, says = NOT_THE_SHAPE[shape]
    stub.answer = answer("results")
    result = json.loads(
        asyncio.run(web_search(TavilySearch("k", stub.url, backoff_seconds=0), "q", None, None, None, None))
    )
    assert result == {"error": f"Tavily search failed: {says.format(field='results')}"}
    assert len(stub.received) == 3


def test_an_answer_without_hits_is_an_empty_list(stub):
    for _field, answer in (("filings", {"total": {"value": 0}}), ("filings", {"filings": None})):
        stub.answer = answer
        backend = LiveFullTextSearch(stub.url, "k", backoff_seconds=0)
        assert json.loads(asyncio.run(edgar_search(backend, search_args(), cutoff=None))) == []
    stub.answer = {"results": None}
    assert json.loads(asyncio.run(web_search(TavilySearch("k", stub.url), "q", None, None, None, None))) == []


# ----- the local index's background build (§A.7 local) -----


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FailingMirror(MirrorSource):
    """The corpus folder whose reads raise while `failing` is set (a disk gone away, a bug in a parser)."""

    def __init__(self, root):
        super().__init__(root)
        self.failing = True
        self.reads = 0

    async def read_archive(self, path):
        self.reads += 1
        if self.failing:
            raise OSError(5, "Input/output error", path)
        return await super().read_archive(path)


def test_a_failed_index_build_is_a_clear_error_and_is_retried_after_its_backoff(corpus):
    """One failed build must not break edgar_search for the life of the replica. Mutation: awaiting the one
    failed task forever (each call re-raises it: a 500), or rebuilding on every call within the backoff."""
    source, clock = FailingMirror(corpus), Clock()

    async def scenario():
        directory = CompanyDirectory(MirrorSource(corpus))
        await directory.load()
        index = LocalFullTextIndex(source, directory, directory.tickers(), first_backoff=10, clock=clock)
        index.start_building()  # as the replica does at start: nobody waits for it
        answers = [json.loads(await edgar_search(index, search_args(search_query="revenue"), cutoff=None))]
        reads = source.reads
        clock.now = 9  # within the backoff: the error at once, no rebuild
        answers.append(json.loads(await edgar_search(index, search_args(search_query="revenue"), cutoff=None)))
        assert source.reads == reads
        source.failing = False
        clock.now = 11  # past it: the next call builds again
        answers.append(json.loads(await edgar_search(index, search_args(search_query="revenue"), cutoff=None)))
        return answers

    failed, waiting, found = asyncio.run(scenario())
    assert failed["error"].startswith("edgar_search is unavailable just now: its index of the filings could not")
    assert "builds it again in 10 s" in failed["error"] and "builds it again in 1 s" in waiting["error"]
    assert isinstance(found, list) and found and {"accessionNo", "filingUrl"} <= found[0].keys()


def test_the_backoff_doubles_while_the_build_keeps_failing(corpus):
    source, clock = FailingMirror(corpus), Clock()

    async def scenario():
        directory = CompanyDirectory(MirrorSource(corpus))
        await directory.load()
        index = LocalFullTextIndex(
            source, directory, directory.tickers(), first_backoff=10, max_backoff=25, clock=clock
        )
        waits = []
        for now in (0, 10, 30, 55):  # each just past the previous backoff
            clock.now = now
            waits.append(json.loads(await edgar_search(index, search_args(), cutoff=None))["error"])
        return waits

    waits = asyncio.run(scenario())
    assert [w.split("builds it again in ")[1].split(" s")[0] for w in waits] == ["10", "20", "25", "25"]
