"""sec_filing_search: a company's filings by ticker, newest first (contract §A.6, Decision 9)."""

from __future__ import annotations

import json
from datetime import date

from finsec.edgar.companies import CompanyDirectory, FilingsUnavailable
from finsec.tool_error import shown
from finsec.tools.dates import DateError, date_window

__all__ = ["sec_filing_search"]

_RESULT_FIELDS = ("ticker", "company_name", "form", "filing_date", "report_date", "accession_number", "filing_url")


async def sec_filing_search(
    directory: CompanyDirectory,
    ticker: str,
    form_types: list[str] | None,
    start_date: str | None,
    end_date: str | None,
    *,
    max_results: int,
    max_end_date: date | None,
) -> str:
    try:
        start, end = date_window(start_date, end_date, max_end_date)
    except DateError as error:
        return json.dumps({"error": str(error)})
    company = directory.lookup(ticker)
    if company is None:
        return json.dumps(
            {
                "error": f"No company found for ticker '{ticker}'",
                "suggestion": "Use the exact stock ticker symbol (e.g., 'AAPL' for Apple, 'MSFT' for Microsoft). "
                "Note: only companies listed at https://www.sec.gov/files/company_tickers.json are supported.",
            }
        )
    try:
        filings = await directory.filings(company)
    except FilingsUnavailable:  # an outage is not "no filings" (§A.6 step 3 would say so): tell the agent to retry
        return json.dumps(
            {
                "error": f"Could not load the filings of '{ticker}' from SEC EDGAR just now: it did not answer, or "
                "its answer could not be read.",
                "suggestion": "This is temporary and says nothing about the company: call sec_filing_search again "
                "shortly.",
            }
        )
    if form_types:
        forms = frozenset(form_types)  # a list can be long: one lookup a filing, not a scan
        filings = [f for f in filings if f.form in forms]
    filings = sorted(filings, key=lambda f: f.filing_date, reverse=True)  # stable: ties keep their order
    if start:
        filings = [f for f in filings if f.filing_date >= start]
    if end:
        filings = [f for f in filings if f.filing_date <= end]
    filings = filings[:max_results]
    if not filings:
        filters = []
        if form_types:
            filters.append(f"form types {shown(form_types, 500)}")
        if start_date:
            filters.append(f"start_date={start_date}")
        if end_date:
            filters.append(f"end_date={end_date}")
        return json.dumps(
            {
                "error": f"No filings found for '{ticker}'" + (" with " + ", ".join(filters) if filters else ""),
                "suggestion": "Try broadening your search: remove form_types filter, widen the date range, "
                "or check the ticker symbol.",
            }
        )
    return json.dumps([{k: getattr(f, k) for k in _RESULT_FIELDS} for f in filings], indent=2)
