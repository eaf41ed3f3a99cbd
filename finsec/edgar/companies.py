"""Companies and their filings: the ticker registry and submissions metadata (contract §F.1-F.3).

Submissions JSON is data from outside (SEC, a mirror, a cache file): a field of the wrong type or a row
whose URL would break the filing-URL rules is skipped, never a 500 and never a URL the agent cannot use.
Big documents are parsed and turned into filings in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from finsec.edgar.cache import DiskCache
from finsec.edgar.source import TICKERS_PATH, EdgarSource, submissions_path
from finsec.edgar.urls import InvalidFilingUrl, dashed_accession, is_edgar_path, parse_filing_url
from finsec.net.retry import RetryPolicy, TryAgain, with_retries
from finsec.single_flight import SingleFlight

__all__ = ["Company", "CompanyDirectory", "Filing", "filing_url", "FilingsUnavailable", "parse_tickers"]

log = logging.getLogger(__name__)


class FilingsUnavailable(Exception):
    """EDGAR gave no submissions data for a company just now (an error status after the retries, a timeout, a
    body that is not JSON). Not a fact about the company: nothing is cached, and the next search asks again."""


@dataclass(frozen=True)
class Company:
    ticker: str
    cik: str  # ten digits
    name: str


@dataclass(frozen=True)
class Filing:
    ticker: str
    cik: str
    company_name: str
    form: str
    filing_date: str
    report_date: str
    accession_number: str  # dashed
    primary_document: str
    filing_url: str


def filing_url(cik10: str, accession: str, document: str) -> str:
    """Always the canonical sec.gov URL: the agent hands it to parse_html_page, which maps it to the source."""
    return f"https://www.sec.gov/Archives/edgar/data/{int(cik10)}/{accession.replace('-', '')}/{document}"


def parse_tickers(raw: Any) -> dict[str, Company]:
    """The registry as §F.1 maps it; ValueError when `raw` is not one (a cache file or an answer of another shape)."""
    if not isinstance(raw, dict):
        raise ValueError("company_tickers.json must be a JSON object of {cik_str, ticker, title} rows")
    table = {}
    for key, row in raw.items():
        if not isinstance(row, dict) or not {"cik_str", "ticker", "title"} <= row.keys():
            raise ValueError(f"row {key!r}: not an object with cik_str, ticker and title")
        cik = str(row["cik_str"])
        if not (cik.isascii() and cik.isdigit() and 1 <= len(cik) <= 10):  # it names cache files and URLs
            raise ValueError(f"row {key!r}: cik_str must be 1 to 10 digits, not {cik[:40]!r}")
        ticker = str(row["ticker"]).upper()
        table[ticker] = Company(ticker, cik.zfill(10), str(row["title"]))
    return table


_COLUMNS = ("accessionNumber", "form", "filingDate", "reportDate", "primaryDocument")


def _rows(columns: Any) -> list[dict[str, str]]:
    """submissions JSON keeps filings as parallel column arrays; a cell that is not a string reads as ""."""
    if not isinstance(columns, dict) or not isinstance(columns.get("accessionNumber"), list):
        return []
    length = len(columns["accessionNumber"])
    arrays = {n: columns[n] if isinstance(columns.get(n), list) else [] for n in _COLUMNS}
    return [
        {n: cell if i < len(arrays[n]) and isinstance(cell := arrays[n][i], str) else "" for n in _COLUMNS}
        for i in range(length)
    ]


def _page_names(main: dict) -> list[str]:
    """The older-filings pages a submissions document lists (`filings.files[].name`)."""
    filings = main.get("filings")
    pages = filings.get("files") if isinstance(filings, dict) else None
    names = [page.get("name") for page in pages if isinstance(page, dict)] if isinstance(pages, list) else []
    return [name for name in names if isinstance(name, str)]


def _build_filings(company: Company, pages: list[Any]) -> list[Filing]:
    """Merge pages by accession (the first page naming one wins) into filings whose URLs pass the filing-URL
    rules (a row that would not is skipped). CPU work: run it off the event loop."""
    by_accession: dict[str, dict[str, str]] = {}
    for columns in pages:
        for row in _rows(columns):
            by_accession.setdefault(row["accessionNumber"].replace("-", ""), row)
    filings, skipped = [], 0
    for row in by_accession.values():
        url = filing_url(company.cik, row["accessionNumber"], row["primaryDocument"])
        if not _usable_url(url):
            skipped += 1
            continue
        filings.append(
            Filing(
                ticker=company.ticker,
                cik=company.cik,
                company_name=company.name,
                form=row["form"],
                filing_date=row["filingDate"],
                report_date=row["reportDate"],
                accession_number=dashed_accession(row["accessionNumber"]),
                primary_document=row["primaryDocument"],
                filing_url=url,
            )
        )
    if skipped:
        log.warning(
            "skipped %d submissions rows with an unusable accession or document for CIK %s", skipped, company.cik
        )
    return filings


def _cached_filings(cached: Any) -> list[Filing] | None:
    """Filings from the metadata cache file; None (a miss) when it is not what we wrote. A row whose URL
    breaks today's filing-URL rules (written by an older version, or edited) is dropped like a bad SEC row."""
    if not isinstance(cached, dict):
        return None
    try:
        filings = [Filing(**row) for row in cached.values()]
    except TypeError:
        return None
    if not all(isinstance(value, str) for f in filings for value in asdict(f).values()):
        return None  # a number where a date goes would break the newest-first sort
    return [f for f in filings if _usable_url(f.filing_url)]


def _registry(raw: Any, what: str) -> dict[str, Company] | None:
    if raw is None:
        return None
    try:
        return parse_tickers(raw)
    except ValueError as error:
        log.warning("%s is not the ticker registry (%s); not used", what, error)
        return None


def _usable_url(url: str) -> bool:
    try:
        return parse_filing_url(url) is not None
    except InvalidFilingUrl:
        return False


class CompanyDirectory:
    def __init__(self, source: EdgarSource, cache: DiskCache | None = None, supplementary_tickers: Path | None = None):
        self._source = source
        self._cache = cache
        self._supplementary = supplementary_tickers
        self._companies: dict[str, Company] = {}
        self._filings: dict[str, list[Filing]] = {}  # by CIK: process-wide, never released (contract §C.1)
        self._loading: SingleFlight[str, list[Filing]] = SingleFlight()  # by CIK: the one load in flight

    async def load(self, attempts: int = 5, backoff_seconds: float = 1.0) -> None:
        """Load the ticker registry; the server cannot start without it (contract §F.2). A cached registry
        that is not one is downloaded again; a download that is not one is retried like a failed one."""
        cached = await self._cache.read_json(self._cache.tickers_file) if self._cache else None
        raw, table = cached, _registry(cached, "the cached tickers.json")

        async def download() -> tuple[Any, dict[str, Company]]:
            got = await self._source.read_json(TICKERS_PATH)
            if (registry := _registry(got, "company_tickers.json from the source")) is None:
                raise TryAgain("unreadable")
            return got, registry

        if table is None:
            retries = RetryPolicy(attempts=attempts, first_wait=backoff_seconds, jitter=backoff_seconds / 2)
            try:
                raw, downloaded = await with_retries(retries, "sec", download)
            except TryAgain:
                raise RuntimeError(
                    "Failed to load SEC ticker data after retries. Server cannot start without company_tickers.json."
                ) from None
            table = downloaded
        self._companies = table
        if self._cache and raw is not cached:
            await self._cache.write_json(self._cache.tickers_file, raw)
        if self._supplementary is not None:
            self._companies.update(self._overlay(self._supplementary))

    @staticmethod
    def _overlay(path: Path) -> dict[str, Company]:
        if not path.is_file():
            raise RuntimeError(f"supplementary_tickers_fpath not found: {path}")
        try:
            return parse_tickers(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as error:
            raise RuntimeError(
                f"supplementary_tickers_fpath {path} is not a company_tickers.json object: {error}"
            ) from error

    def tickers(self) -> list[str]:
        return sorted(self._companies)

    def lookup(self, ticker: str) -> Company | None:
        return self._companies.get(ticker.strip().upper())

    def known_filing(self, cik10: str, accession: str) -> Filing | None:
        """A filing whose metadata is already in memory (the dump's layout convention needs it, §F.5)."""
        return next((f for f in self._filings.get(cik10, []) if f.accession_number == accession), None)

    async def filings(self, company: Company) -> list[Filing]:
        """Memory, then the disk cache, then EDGAR; one fetch per company at a time (contract §F.3): concurrent
        callers share the load in flight. Only a complete answer is kept: raises FilingsUnavailable when EDGAR
        gave none, and returns a partial set (an older page could not be read) without keeping it, so an
        outage is never remembered as "this company has no filings"."""
        if company.cik in self._filings:
            return self._filings[company.cik]
        return await self._loading.run(company.cik, lambda: self._load_and_keep(company))

    async def _load_and_keep(self, company: Company) -> list[Filing]:
        filings, complete = await self._load_filings(company)
        if complete:
            self._filings[company.cik] = filings
        return filings

    async def _load_filings(self, company: Company) -> tuple[list[Filing], bool]:
        """The company's filings, and whether they are complete (every page EDGAR lists was read)."""
        if self._cache:
            raw = await self._cache.read_json(self._cache.metadata_file(company.cik))
            cached = await asyncio.to_thread(_cached_filings, raw) if raw is not None else None
            if cached is not None:
                return cached, True
        main = await self._source.read_json(submissions_path(company.cik))
        if main is None:
            raise FilingsUnavailable(f"EDGAR gave no submissions data for CIK {company.cik}")
        if not isinstance(main, dict):  # JSON, but not a submissions document: not a fact about the company
            raise FilingsUnavailable(f"EDGAR's submissions data for CIK {company.cik} is not a JSON object")
        recent = main.get("filings", {}).get("recent") if isinstance(main.get("filings"), dict) else None
        pages, complete = [recent], True
        for name in _page_names(main):
            path = f"submissions/{name}"
            older = await self._source.read_json(path) if is_edgar_path(path) else None
            if isinstance(older, dict):
                pages.append(older)
                continue
            log.warning("skipping unreadable submissions page %.100r for CIK %s", name, company.cik)
            if is_edgar_path(path):  # EDGAR gave no page (or not an object) for it: ask again next time
                complete = False
        filings = await asyncio.to_thread(_build_filings, company, pages)
        if not complete and not filings:
            raise FilingsUnavailable(f"EDGAR gave no readable submissions pages for CIK {company.cik}")
        if self._cache and filings and complete:
            await self._cache.write_json(
                self._cache.metadata_file(company.cik),
                {f.accession_number.replace("-", ""): asdict(f) for f in filings},
            )
        return filings, complete
