"""A corpus folder in the sec.gov URL layout: the company registry (`files/company_tickers.json`), each company's
submissions (`submissions/CIK##########.json`) and the primary documents under `Archives/edgar/data/...`, which
`finsec.edgar`'s folder source reads as it reads live EDGAR."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from finsec.corpus.issuers import Filing, Issuer

__all__ = ["write_layout"]


def write_layout(
    out: Path,
    issuers: Iterable[Issuer],
    filings: list[Filing],
    render: Callable[[Filing], str],
    extra: Callable[[Path], None] | None = None,
    done: str = "files/company_tickers.json",
) -> Path:
    """Write the folder into `out` (replaced atomically if it exists) and return it. `extra(staging)` writes what
    else the folder holds before it is moved in place; `done` is a file that only a finished folder holds."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".corpus-", dir=out.parent))
    issuers = list(issuers)
    tickers = {str(i): {"cik_str": s.cik, "ticker": s.ticker, "title": s.name} for i, s in enumerate(issuers)}
    (staging / "files").mkdir()
    (staging / "files" / "company_tickers.json").write_text(json.dumps(tickers, indent=1))
    (staging / "submissions").mkdir()
    own: dict[Issuer, list[Filing]] = {issuer: [] for issuer in issuers}  # one pass: corpora of any size
    for filing in filings:
        own[filing.issuer].append(filing)
    for issuer in issuers:
        (staging / "submissions" / f"CIK{issuer.cik:010d}.json").write_text(
            json.dumps(_submissions(issuer, own[issuer]))
        )
    for filing in filings:
        path = staging / filing.url_path
        path.parent.mkdir(parents=True)
        path.write_text(render(filing))
    if extra is not None:
        extra(staging)
    if out.exists():
        shutil.rmtree(out, ignore_errors=True)
    try:
        os.replace(staging, out)
    except OSError:  # another process wrote it first; a corpus is deterministic, so theirs is the same
        shutil.rmtree(staging, ignore_errors=True)
        if not (out / done).is_file():
            raise
    return out


def _submissions(issuer: Issuer, own: list[Filing]) -> dict:
    own = sorted(own, key=lambda f: f.filing_date, reverse=True)
    columns = {
        "accessionNumber": [f.accession for f in own],
        "form": [f.form for f in own],
        "filingDate": [f.filing_date for f in own],
        "reportDate": [f.period_end for f in own],
        "primaryDocument": [f.document for f in own],
    }
    return {
        "cik": str(issuer.cik),
        "name": issuer.name,
        "tickers": [issuer.ticker],
        "filings": {"recent": columns, "files": []},
    }
