"""The filings tasks are built from: companies' 10-K and 10-Q primary documents, read through an EDGAR source (a
folder in the sec.gov layout, or live EDGAR through the guarded, rate-limited path), newest first.

The company registry and each company's submissions list the filings, so a folder needs no manifest and the
live path reads exactly what an agent's tools would."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable

from finsec.edgar.companies import CompanyDirectory, FilingsUnavailable
from finsec.edgar.source import EdgarSource
from finsec.taskgen.build import Source

__all__ = ["FORMS", "read_filings"]

log = logging.getLogger(__name__)
FORMS = ("10-K", "10-Q")


async def read_filings(
    source: EdgarSource, tickers: Iterable[str] | None = None, *, forms: Iterable[str] = FORMS, per_form: int = 1
) -> AsyncIterator[tuple[Source, str | None]]:
    """Each company's newest `per_form` filings of each form, with the primary document's text (None when the
    source gave none). `tickers` None: every company of the registry."""
    companies = CompanyDirectory(source)
    await companies.load(attempts=3, backoff_seconds=1.0)
    forms = tuple(forms)
    for ticker in tickers if tickers is not None else companies.tickers():
        company = companies.lookup(ticker)
        if company is None:
            log.warning("no company %s in the registry", ticker)
            continue
        try:
            filings = await companies.filings(company)
        except FilingsUnavailable as error:
            log.warning("skipping %s: %s", ticker, error)
            continue
        taken = dict.fromkeys(forms, 0)
        for filing in sorted(filings, key=lambda f: f.filing_date, reverse=True):
            if filing.form not in taken or taken[filing.form] >= per_form:
                continue
            taken[filing.form] += 1
            path = filing.filing_url.removeprefix("https://www.sec.gov/")
            raw = await source.read_archive(path)
            meta = Source(
                company.cik, company.ticker, filing.form, filing.accession_number, filing.filing_url, filing.filing_date
            )
            yield meta, raw.decode("utf-8", errors="replace") if raw is not None else None
