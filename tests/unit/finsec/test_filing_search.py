"""sec_filing_search's rules (contract §A.6, Decision 9) on the embedded corpus, in process."""

from __future__ import annotations

import asyncio
import json
from datetime import date

import pytest

from finsec.corpus.generate import ISSUERS, filings, write_corpus
from finsec.edgar.companies import CompanyDirectory
from finsec.edgar.source import MirrorSource
from finsec.tools.filing_search import sec_filing_search

ISSUER = ISSUERS[0]


@pytest.fixture(scope="module")
def directory(tmp_path_factory) -> CompanyDirectory:
    directory = CompanyDirectory(MirrorSource(write_corpus(tmp_path_factory.mktemp("c") / "mirror")))
    asyncio.run(directory.load())
    return directory


def search(directory, *, max_results=200, max_end_date=None, **args):
    args = {"ticker": ISSUER.ticker, "form_types": None, "start_date": None, "end_date": None, **args}
    return json.loads(
        asyncio.run(sec_filing_search(directory, **args, max_results=max_results, max_end_date=max_end_date))
    )


def test_all_forms_newest_first_by_default(directory):
    rows = search(directory)
    own = [f for f in filings() if f.issuer == ISSUER]
    assert [r["accession_number"] for r in rows] == [
        f.accession for f in sorted(own, key=lambda f: f.filing_date, reverse=True)
    ]


def test_results_are_capped(directory):
    assert len(search(directory, max_results=2)) == 2


def test_max_end_date_clamps_even_an_explicit_end_date(directory):
    rows = search(directory, end_date="2030-01-01", max_end_date=date(2025, 2, 1))
    assert rows and max(r["filing_date"] for r in rows) <= "2025-02-01"


def test_start_and_end_filters_are_inclusive(directory):
    first = search(directory)[-1]["filing_date"]
    assert [r["filing_date"] for r in search(directory, start_date=first, end_date=first)] == [first]


def test_calendar_dates_are_validated(directory):
    assert search(directory, start_date="2024-02-30") == {
        "error": "Invalid start_date: '2024-02-30' is not a calendar date. Expected YYYY-MM-DD."
    }
