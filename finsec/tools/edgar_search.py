"""edgar_search: full-text search over SEC filings (contract §A.7).

Two backends, chosen by `edgar_search_mode`:
- local: BM25 over every filing document of the configured corpus folder (passages indexed with the finance
  tokenizer, so `$1,234.5`, `FY2023` and `10-K` stay searchable). A filing scores as its best passage plus
  how well its metadata (company, ticker, form, year) matches: a query naming a company should find that
  company's filings, not a competitor's that mentions it. Built once per replica in the background at start,
  and built again after a backoff if that fails (tools/retried_build.py);
- live: sec-api.io's full-text search API, with retries on 429/503 and transport errors.
Results use sec-api's record shape either way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

import httpx
import numpy as np

from finsec.edgar.companies import CompanyDirectory, Filing, FilingsUnavailable
from finsec.edgar.source import EdgarSource
from finsec.edgar.urls import parse_filing_url
from finsec.metrics import NO_METRICS, Metrics
from finsec.net.retry import RetryPolicy, TryAgain, with_retries
from finsec.retrieval.bm25 import Bm25Index
from finsec.retrieval.passages import cut_passages
from finsec.retrieval.tokenize import tokenize
from finsec.text.html_to_text import HtmlTextError, html_to_text
from finsec.tool_error import ToolError, shown
from finsec.tools.dates import DateError, checked_date, clamped
from finsec.tools.provider_answer import asked
from finsec.tools.retried_build import BuildFailed, RetriedBuild

__all__ = [
    "edgar_search",
    "LiveFullTextSearch",
    "LocalFullTextIndex",
    "METADATA_WEIGHT",
    "normalize_request",
    "PAGE_SIZE",
    "SearchError",
    "SearchRequest",
]

log = logging.getLogger(__name__)
_CIK = re.compile(r"[0-9]{1,10}")
PAGE_SIZE = 100  # sec-api pages hold 100 filings; `page` counts in those (contract §A.7)
METADATA_WEIGHT = 2.0  # a metadata match is worth about two strong passage terms


class SearchError(ToolError):
    """A tool-level error: the agent reads its text."""


@dataclass(frozen=True)
class SearchRequest:
    query: str
    form_types: list[str] | None
    ciks: list[str] | None  # unpadded
    start: str
    end: str | None
    page: int
    top_n: int


def normalize_request(
    search_query: str, form_types, ciks, start_date, end_date, page: int, top_n_results: int, cutoff: date | None
) -> SearchRequest:
    if not search_query or not search_query.strip():
        raise SearchError(
            "search_query is required and cannot be empty. Provide a search term to search the contents of SEC filings."
        )
    try:
        start = checked_date("start_date", start_date) or "1900-01-01"
        end = checked_date("end_date", end_date)
    except DateError as error:
        raise SearchError(str(error)) from None
    clamped_start, end = clamped(start, end, cutoff)
    start = clamped_start or start  # never None: clamped keeps a start that is not empty
    if end and start > end:
        raise SearchError(f"Parameter start_date '{start}' was set to a date that is later than end_date '{end}'")
    normalized_ciks = None
    if ciks:
        texts = [str(c).strip() for c in ciks]
        if not all(_CIK.fullmatch(t) for t in texts):  # SEC's CIKs have at most 10 digits
            raise SearchError(f"Every entry of ciks must be a CIK number (1 to 10 digits), got {shown(ciks)}.")
        normalized_ciks = [str(int(t)) for t in texts]
    return SearchRequest(search_query.strip(), form_types or None, normalized_ciks, start, end, page, top_n_results)


def _record(filing: Filing, description: str) -> dict:
    return {
        "accessionNo": filing.accession_number,
        "cik": str(int(filing.cik)),
        "companyNameLong": filing.company_name,
        "ticker": filing.ticker,
        "description": description,
        "formType": filing.form,
        "type": filing.form,
        "filingUrl": filing.filing_url,
        "filedAt": filing.filing_date,
    }


@dataclass(frozen=True)
class _Index:
    """One complete build: a retry builds a new one, never adds to a half-made one."""

    filings: list[Filing]
    first_lines: list[str]
    passage_filing: np.ndarray  # passage number -> filing number
    passages: Bm25Index
    metadata: Bm25Index


def _index_documents(documents: list[tuple[Filing, str]]) -> _Index:
    passages, owners = [], []
    for number, (_filing, text) in enumerate(documents):
        for passage in cut_passages(text):
            passages.append(tokenize(text[passage.start : passage.end]))
            owners.append(number)
    filings = [filing for filing, _ in documents]
    return _Index(
        filings=filings,
        first_lines=[f"{f.form} of {f.company_name} filed {f.filing_date}" for f in filings],
        passage_filing=np.array(owners, dtype=np.int64),
        passages=Bm25Index(passages),
        metadata=Bm25Index(
            [tokenize(f"{f.company_name} {f.ticker} {f.form} {f.filing_date[:4]} {f.report_date[:4]}") for f in filings]
        ),
    )


class LocalFullTextIndex:
    def __init__(
        self,
        source: EdgarSource,
        directory: CompanyDirectory,
        tickers: list[str],
        *,
        first_backoff: float = 5.0,
        max_backoff: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._source = source
        self._directory = directory
        self._tickers = tickers
        self._index = RetriedBuild(
            "edgar_search's index of the local corpus",
            self._build_index,
            first_backoff=first_backoff,
            max_backoff=max_backoff,
            clock=clock,
        )

    def start_building(self) -> None:
        self._index.start()

    async def _build_index(self) -> _Index:
        documents: list[tuple[Filing, str]] = []
        for ticker in self._tickers:
            company = self._directory.lookup(ticker)
            try:
                filings = await self._directory.filings(company) if company else []
            except FilingsUnavailable:
                log.warning("edgar_search: no submissions data for %s; its filings are not indexed", ticker)
                continue
            for filing in filings:
                url = parse_filing_url(filing.filing_url)
                html = await self._source.read_archive(url.archive_path) if url else None
                if html is None:
                    continue
                try:
                    documents.append((filing, await asyncio.to_thread(html_to_text, html)))
                except HtmlTextError:
                    log.warning("edgar_search: could not parse %s; not indexed", filing.filing_url)
        index = await asyncio.to_thread(_index_documents, documents)
        log.info("edgar_search: indexed %d filings", len(index.filings))
        return index

    async def search(self, request: SearchRequest) -> list[dict]:
        try:
            index = await self._index.result()
        except BuildFailed as failed:
            raise SearchError(
                "edgar_search is unavailable just now: its index of the filings could not be built. The server "
                f"builds it again in {failed.retry_in:.0f} s; call edgar_search again then, or use "
                "sec_filing_search meanwhile."
            ) from None
        dates = [f.filing_date for f in index.filings]
        if dates and (request.start > max(dates) or (request.end and request.end < min(dates))):
            raise SearchError(
                f"No filings are indexed between {request.start} and {request.end or 'today'}. "
                f"This local corpus covers {min(dates)} through {max(dates)}. Search within that range."
            )
        forms, ciks = frozenset(request.form_types or ()), frozenset(request.ciks or ())  # lists can be long
        eligible = [
            i
            for i, f in enumerate(index.filings)
            if (not forms or f.form in forms)
            and (not ciks or str(int(f.cik)) in ciks)
            and request.start <= f.filing_date
            and (not request.end or f.filing_date <= request.end)
        ]
        ranked = _rank(index, request.query, eligible)
        if not ranked and request.ciks:  # a company filter with no hits browses that company's filings instead
            ranked = _rank(index, "*", eligible)
        offset = (request.page - 1) * PAGE_SIZE
        return [_record(index.filings[i], index.first_lines[i]) for i in ranked[offset : offset + request.top_n]]


def _rank(index: _Index, query: str, eligible: list[int]) -> list[int]:
    newest_first = sorted(eligible, key=lambda i: index.filings[i].filing_date, reverse=True)
    if query == "*":
        return newest_first
    terms = tokenize(query)
    best = np.zeros(len(index.filings))
    np.maximum.at(best, index.passage_filing, index.passages.scores(terms))
    best += METADATA_WEIGHT * index.metadata.scores(terms)
    hits = [i for i in newest_first if best[i] > 0]
    return sorted(hits, key=lambda i: -best[i])  # stable: equal scores stay newest first


class LiveFullTextSearch:
    """sec-api.io's full-text search (contract §A.7 step 4, live)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        attempts: int = 3,
        backoff_seconds: float = 1.0,
        timeout_seconds: float = 30.0,
        metrics: Metrics = NO_METRICS,
    ):
        self._url = base_url.rstrip("/") + "/full-text-search"
        self._retries = RetryPolicy(attempts=attempts, first_wait=backoff_seconds, jitter=backoff_seconds / 2)
        self._metrics = metrics
        self._client = httpx.AsyncClient(headers={"Authorization": api_key}, timeout=timeout_seconds)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def search(self, request: SearchRequest) -> list[dict]:
        body: dict = {
            "query": request.query,
            "startDate": request.start,
            "endDate": request.end or date.today().isoformat(),
        }
        if request.page > 1:
            body["page"] = str(request.page)
        if request.form_types:
            body["formTypes"] = request.form_types
        if request.ciks:
            body["ciks"] = request.ciks

        def attempt():  # busy (429, 503) is retried; any other error status refuses for good (a bad key, query)
            return asked(
                self._client,
                self._url,
                body,
                who="sec-api.io full-text search",
                field="filings",
                retried=(429, 503).__contains__,
                refused=SearchError,
            )

        try:
            return (await with_retries(self._retries, "sec_api", attempt, self._metrics))[: request.top_n]
        except TryAgain as spent:
            raise SearchError(spent.detail) from None


async def edgar_search(backend, request_args: dict, cutoff: date | None) -> str:
    if backend is None:
        return json.dumps({"error": "edgar_search is not available. edgar_search_mode is not set."})
    try:
        request = normalize_request(**request_args, cutoff=cutoff)
        return json.dumps(await backend.search(request))
    except SearchError as error:
        return json.dumps({"error": str(error)})
