"""The embedded default corpus: a deterministic, EDGAR-shaped folder of fictional issuers.

It lets the server run with no network. Tickers end in a digit and CIKs start at 990,000,001, so they cannot
collide with a real ticker or CIK. Primary documents are inline-XBRL HTML shaped like real ones: a hidden
`ix:header`, nested spans, financial tables with `ix:nonFraction` facts. `questions()` gives question/answer
pairs whose answers appear in the documents.

    python -m deployments.corpus.generate OUT_DIR
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

CORPUS_VERSION = "1"


@dataclass(frozen=True)
class Issuer:
    ticker: str
    cik: int
    name: str
    state: str
    business: str


ISSUERS = (
    Issuer("HLXR1", 990000001, "Helixar Analytics Corp.", "Delaware", "industrial data analytics software"),
    Issuer("BRWN2", 990000002, "Brightwater Grid Holdings, Inc.", "Nevada", "regulated electric transmission"),
    Issuer("QMTF3", 990000003, "Quillmont Foods Group Inc.", "Ohio", "packaged foods and beverages"),
)
FISCAL_YEARS = (2023, 2024)


@dataclass(frozen=True)
class Filing:
    issuer: Issuer
    form: str
    fiscal_year: int
    period_end: str
    filing_date: str
    accession: str  # dashed
    document: str
    facts: dict[str, int]  # in thousands of dollars

    @property
    def url_path(self) -> str:
        return f"Archives/edgar/data/{self.issuer.cik}/{self.accession.replace('-', '')}/{self.document}"


def _facts(rng: random.Random, scale: int) -> dict[str, int]:
    revenue = rng.randrange(400_000, 4_000_000) * scale
    cost = int(revenue * rng.uniform(0.45, 0.7))
    opex = int(revenue * rng.uniform(0.12, 0.25))
    operating_income = revenue - cost - opex
    net_income = int(operating_income * rng.uniform(0.6, 0.8))
    return {
        "Revenues": revenue,
        "CostOfRevenue": cost,
        "OperatingExpenses": opex,
        "OperatingIncomeLoss": operating_income,
        "NetIncomeLoss": net_income,
        "NetCashProvidedByUsedInOperatingActivities": int(net_income * rng.uniform(1.1, 1.5)),
        "PaymentsToAcquirePropertyPlantAndEquipment": int(revenue * rng.uniform(0.03, 0.12)),
        "CashAndCashEquivalentsAtCarryingValue": int(revenue * rng.uniform(0.1, 0.4)),
    }


def filings() -> list[Filing]:
    out = []
    for issuer in ISSUERS:
        rng = random.Random(f"{CORPUS_VERSION}:{issuer.ticker}")
        for n, year in enumerate(FISCAL_YEARS):
            out.append(
                Filing(
                    issuer, "10-K", year, f"{year}-12-31", f"{year + 1}-02-{10 + n:02d}",
                    f"{issuer.cik:010d}-{(year + 1) % 100:02d}-{rng.randrange(1, 999999):06d}",
                    f"{issuer.ticker.lower()}-{year}1231.htm", _facts(rng, 1),
                )
            )
        year = FISCAL_YEARS[-1] + 1
        out.append(
            Filing(
                issuer, "10-Q", year, f"{year}-03-31", f"{year}-05-02",
                f"{issuer.cik:010d}-{year % 100:02d}-{rng.randrange(1, 999999):06d}",
                f"{issuer.ticker.lower()}-{year}0331.htm", {k: v // 4 for k, v in _facts(rng, 1).items()},
            )
        )
    return out


def _money(value: int) -> str:
    return f"{value:,}"


def _fact(name: str, value: int, context: str) -> str:
    return (
        f'<ix:nonFraction name="us-gaap:{name}" contextRef="{context}" unitRef="usd" decimals="-3" '
        f'scale="3" format="ixt:num-dot-decimal">{_money(value)}</ix:nonFraction>'
    )


_ROWS = (
    ("Revenues", "Total net revenues"),
    ("CostOfRevenue", "Cost of revenues"),
    ("OperatingExpenses", "Selling, general and administrative"),
    ("OperatingIncomeLoss", "Operating income"),
    ("NetIncomeLoss", "Net income"),
)


def _document(filing: Filing, previous: Filing | None) -> str:
    issuer, f = filing.issuer, filing.facts
    period = "fiscal year" if filing.form == "10-K" else "quarterly period"
    context = f"FY{filing.fiscal_year}" if filing.form == "10-K" else f"Q1{filing.fiscal_year}"
    prior = previous.facts if previous else None
    header_cells = f'<td><span style="font-weight:700">{filing.fiscal_year}</span></td>'
    if prior:
        header_cells += f'<td><span style="font-weight:700">{previous.fiscal_year}</span></td>'

    def row(name: str, label: str) -> str:
        cells = f'<td><span>$</span></td><td style="text-align:right"><span>{_fact(name, f[name], context)}</span></td>'
        if prior:
            cells += f"<td><span>$</span></td><td>{_money(prior[name])}</td>"
        return f'<tr><td><div><span style="font-family:Times">{label}</span></div></td>{cells}</tr>'

    rows = "\n".join(row(name, label) for name, label in _ROWS)
    growth = (f["Revenues"] - prior["Revenues"]) / prior["Revenues"] * 100 if prior else None
    growth_text = (
        f" compared with ${_money(prior['Revenues'])} thousand in {previous.fiscal_year}, "
        f"a change of {growth:.1f}%" if prior else ""
    )
    return f"""<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/inlineXBRL"
 xmlns:us-gaap="http://fasb.org/us-gaap/2024"><head><title>{issuer.ticker.lower()}-{filing.period_end}</title>
<style>.hidden {{ display: none }}</style></head>
<body>
<div style="display:none"><ix:header><ix:hidden>
<ix:nonNumeric name="dei:EntityCentralIndexKey" contextRef="{context}">{issuer.cik:010d}</ix:nonNumeric>
<ix:nonNumeric name="dei:DocumentType" contextRef="{context}">{filing.form}</ix:nonNumeric>
</ix:hidden><ix:resources><xbrli:context id="{context}"><xbrli:entity>{issuer.cik}</xbrli:entity></xbrli:context>
</ix:resources></ix:header></div>
<div style="text-align:center"><span>UNITED STATES</span><br/><span>SECURITIES AND EXCHANGE COMMISSION</span></div>
<div style="text-align:center"><span style="font-weight:700">FORM {filing.form}</span></div>
<p><span>For the {period} ended {filing.period_end}</span></p>
<p><span style="font-weight:700">{issuer.name}</span><br/><span>(Exact name of registrant as specified in its charter)</span></p>
<table><tr><td><span>{issuer.state}</span></td><td><span>{issuer.cik:010d}</span></td></tr>
<tr><td><span>(State of incorporation)</span></td><td><span>(Commission CIK)</span></td></tr></table>
<p><span>Trading symbol: {issuer.ticker}</span></p>
<p><span style="font-weight:700">Item 7. Management's Discussion and Analysis</span></p>
<p><span>{issuer.name} operates in {issuer.business}. Total net revenues for the {period} ended {filing.period_end}
were ${_money(f["Revenues"])} thousand{growth_text}. Net cash provided by operating activities was
${_money(f["NetCashProvidedByUsedInOperatingActivities"])} thousand, and capital expenditures were
${_money(f["PaymentsToAcquirePropertyPlantAndEquipment"])} thousand.</span></p>
<p><span style="font-weight:700">Consolidated Statements of Operations</span><br/><span>(in thousands)</span></p>
<table>
<tr><td></td>{header_cells}</tr>
{rows}
</table>
<p><span style="font-weight:700">Consolidated Statements of Cash Flows</span><br/><span>(in thousands)</span></p>
<table>
<tr><td><span>Net cash provided by (used in) operating activities</span></td><td><span>$</span></td>
<td>{_fact("NetCashProvidedByUsedInOperatingActivities", f["NetCashProvidedByUsedInOperatingActivities"], context)}</td></tr>
<tr><td><span>Purchases of property and equipment</span></td><td><span>$</span></td>
<td><span>(</span>{_fact("PaymentsToAcquirePropertyPlantAndEquipment", f["PaymentsToAcquirePropertyPlantAndEquipment"], context)}</td><td><span>)</span></td></tr>
<tr><td><span>Cash and cash equivalents, end of period</span></td><td><span>$</span></td>
<td>{_fact("CashAndCashEquivalentsAtCarryingValue", f["CashAndCashEquivalentsAtCarryingValue"], context)}</td></tr>
</table>
<div class="hidden" style="display:none"><span>Draft note, not part of the filing.</span></div>
</body></html>
"""


def questions() -> list[dict[str, str]]:
    """Question/answer pairs over the corpus, answers in the documents' own words and units."""
    out = []
    for filing in filings():
        if filing.form != "10-K":
            continue
        who, year, f = filing.issuer, filing.fiscal_year, filing.facts
        out += [
            {
                "question": f"What were {who.name}'s ({who.ticker}) total net revenues for fiscal year {year}?",
                "expected_answer": f"${_money(f['Revenues'])} thousand",
                "url": "https://www.sec.gov/" + filing.url_path,
            },
            {
                "question": f"How much net cash did {who.name} ({who.ticker}) provide from operating activities in {year}?",
                "expected_answer": f"${_money(f['NetCashProvidedByUsedInOperatingActivities'])} thousand",
                "url": "https://www.sec.gov/" + filing.url_path,
            },
        ]
    return out


def _submissions(issuer: Issuer, own: list[Filing]) -> dict:
    own = sorted(own, key=lambda f: f.filing_date, reverse=True)
    return {
        "cik": str(issuer.cik),
        "name": issuer.name,
        "tickers": [issuer.ticker],
        "filings": {
            "recent": {
                "accessionNumber": [f.accession for f in own],
                "form": [f.form for f in own],
                "filingDate": [f.filing_date for f in own],
                "reportDate": [f.period_end for f in own],
                "primaryDocument": [f.document for f in own],
            },
            "files": [],
        },
    }


def write_corpus(out: Path) -> Path:
    """Write the corpus into `out` (created; replaced atomically if it exists) and return it."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".corpus-", dir=out.parent))
    all_filings = filings()
    tickers = {str(i): {"cik_str": s.cik, "ticker": s.ticker, "title": s.name} for i, s in enumerate(ISSUERS)}
    (staging / "files").mkdir()
    (staging / "files" / "company_tickers.json").write_text(json.dumps(tickers, indent=1))
    (staging / "submissions").mkdir()
    for issuer in ISSUERS:
        own = [f for f in all_filings if f.issuer == issuer]
        (staging / "submissions" / f"CIK{issuer.cik:010d}.json").write_text(json.dumps(_submissions(issuer, own)))
        previous = None
        for filing in own:
            path = staging / filing.url_path
            path.parent.mkdir(parents=True)
            path.write_text(_document(filing, previous if filing.form == "10-K" else None))
            if filing.form == "10-K":
                previous = filing
    (staging / "questions.json").write_text(json.dumps(questions(), indent=1))
    if out.exists():
        shutil.rmtree(out, ignore_errors=True)
    try:
        os.replace(staging, out)
    except OSError:  # another process wrote it first; the corpus is deterministic, so theirs is the same
        shutil.rmtree(staging, ignore_errors=True)
        if not (out / "questions.json").is_file():
            raise
    return out


def embedded_corpus_dir() -> Path:
    """The embedded corpus in the user's cache, written on first use (deterministic, so any writer's copy is right)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    target = cache / "finsec-serve" / f"embedded-corpus-v{CORPUS_VERSION}"
    if not (target / "questions.json").is_file():
        write_corpus(target)
    return target


if __name__ == "__main__":
    print(write_corpus(Path(sys.argv[1])))
