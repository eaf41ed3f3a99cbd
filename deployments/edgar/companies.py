"""Companies and their filings: the ticker registry and submissions metadata (contract §F.1-F.3)."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .cache import DiskCache
from .source import TICKERS_PATH, EdgarSource, submissions_path
from .urls import dashed_accession

log = logging.getLogger(__name__)


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
    if not isinstance(raw, dict):
        raise ValueError("company_tickers.json must be a JSON object of {cik_str, ticker, title} rows")
    table = {}
    for row in raw.values():
        ticker = str(row["ticker"]).upper()
        table[ticker] = Company(ticker, str(row["cik_str"]).zfill(10), str(row["title"]))
    return table


def _rows(columns: dict[str, list]) -> list[dict[str, str]]:
    """submissions JSON keeps filings as parallel column arrays."""
    names = ("accessionNumber", "form", "filingDate", "reportDate", "primaryDocument")
    length = len(columns.get("accessionNumber", []))
    return [{n: (columns.get(n) or [""] * length)[i] or "" for n in names} for i in range(length)]


class CompanyDirectory:
    def __init__(self, source: EdgarSource, cache: DiskCache | None = None,
                 supplementary_tickers: Path | None = None):
        self._source = source
        self._cache = cache
        self._supplementary = supplementary_tickers
        self._companies: dict[str, Company] = {}
        self._filings: dict[str, list[Filing]] = {}  # by CIK: process-wide, never released (contract §C.1)
        self._locks: dict[str, asyncio.Lock] = {}

    async def load(self, attempts: int = 5, backoff_seconds: float = 1.0) -> None:
        """Load the ticker registry; the server cannot start without it (contract §F.2)."""
        raw = await self._cache.read_json(self._cache.tickers_file) if self._cache else None
        for attempt in range(attempts):
            if raw is not None:
                break
            raw = await self._source.read_json(TICKERS_PATH)
            if raw is None and attempt < attempts - 1:
                await asyncio.sleep(backoff_seconds * 2**attempt)
        if raw is None:
            raise RuntimeError(
                "Failed to load SEC ticker data after retries. Server cannot start without company_tickers.json."
            )
        self._companies = parse_tickers(raw)
        if self._cache:
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
            raise RuntimeError(f"supplementary_tickers_fpath {path} is not a company_tickers.json object: {error}")

    def tickers(self) -> list[str]:
        return sorted(self._companies)

    def lookup(self, ticker: str) -> Company | None:
        return self._companies.get(ticker.strip().upper())

    def known_filing(self, cik10: str, accession: str) -> Filing | None:
        """A filing whose metadata is already in memory (the dump's layout convention needs it, §F.5)."""
        return next((f for f in self._filings.get(cik10, []) if f.accession_number == accession), None)

    async def filings(self, company: Company) -> list[Filing]:
        """Memory, then the disk cache, then EDGAR; one fetch per company at a time (contract §F.3)."""
        if company.cik in self._filings:
            return self._filings[company.cik]
        async with self._locks.setdefault(company.cik, asyncio.Lock()):
            if company.cik not in self._filings:
                self._filings[company.cik] = await self._load_filings(company)
        return self._filings[company.cik]

    async def _load_filings(self, company: Company) -> list[Filing]:
        cached = await self._cache.read_json(self._cache.metadata_file(company.cik)) if self._cache else None
        if isinstance(cached, dict):
            return [Filing(**row) for row in cached.values()]
        main = await self._source.read_json(submissions_path(company.cik))
        if not isinstance(main, dict):
            return []  # no data: an empty filing set, reported as "no filings found"
        by_accession: dict[str, dict[str, str]] = {}
        pages = [main.get("filings", {}).get("recent", {})]
        for page in main.get("filings", {}).get("files", []) or []:
            older = await self._source.read_json(f"submissions/{page.get('name', '')}")
            if isinstance(older, dict):
                pages.append(older)
            else:
                log.warning("skipping unreadable submissions page %s for CIK %s", page.get("name"), company.cik)
        for columns in pages:
            for row in _rows(columns):
                by_accession.setdefault(row["accessionNumber"].replace("-", ""), row)
        filings = [
            Filing(
                ticker=company.ticker,
                cik=company.cik,
                company_name=company.name,
                form=row["form"],
                filing_date=row["filingDate"],
                report_date=row["reportDate"],
                accession_number=dashed_accession(row["accessionNumber"]),
                primary_document=row["primaryDocument"],
                filing_url=filing_url(company.cik, row["accessionNumber"], row["primaryDocument"]),
            )
            for row in by_accession.values()
        ]
        if self._cache and filings:
            await self._cache.write_json(
                self._cache.metadata_file(company.cik), {f.accession_number.replace("-", ""): asdict(f) for f in filings}
            )
        return filings
