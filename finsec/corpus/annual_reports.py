"""A generated corpus of many companies' 10-Ks with full inline XBRL, for building tasks at scale.

The embedded corpus (`generate.py`) is four companies written for an agent to read; this one is as many as asked,
written for the task builder (finsec/taskgen): every statement figure tagged for the year and the year before,
contexts with their periods, segments as dimensions, and the cover page's facts, printed as real filings print them
(a table's scale in its caption, outflows in parentheses). Each company files one 10-K a fiscal year (and, asked,
a 10-Q of each year's first quarter), so a corpus holds the filings that tasks across periods need, and its figures
agree across them (a filing's prior-year column is the year before's current one).

    python -m finsec.corpus.annual_reports OUT_DIR --companies 250 --years 4    # 1,000 filings
    python -m finsec.corpus.annual_reports OUT_DIR --companies 20 --years 3 --quarters  # and 10-Qs of each Q1

Deterministic: the same arguments write the same bytes. Tickers end in a digit and CIKs start at 980,000,001, so
they cannot collide with a real company's, nor with the embedded corpus's.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from finsec.corpus.documents import cells, tagged
from finsec.corpus.issuers import Filing, Issuer
from finsec.corpus.layout import write_layout

__all__ = ["Company", "LAST_YEAR", "annual_reports", "companies", "first_quarter", "render", "write_annual_reports"]

LAST_YEAR = 2024  # the newest fiscal year a corpus holds
_CIK_BASE = 980_000_000
_FIRST = ("Alder", "Birch", "Cobalt", "Delta", "Ember", "Fjord", "Granite", "Harbor", "Iris", "Juniper", "Kestrel")
_SECOND = ("Ridge", "Point", "Crest", "Field", "Stone", "Bay", "Vale", "Brook", "Peak", "Grove", "Haven", "Mesa")
_KIND = ("Systems", "Industries", "Holdings", "Technologies", "Brands", "Energy", "Logistics", "Materials")
_NAMES = len(_FIRST) * len(_SECOND)
_SEGMENTS = (
    ("Cloud Services", "Devices", "Licensing"),
    ("Commercial", "Residential", "Industrial"),
    ("North America Retail", "International Retail"),
    ("Specialty Chemicals", "Performance Coatings", "Agriculture"),
)
_INCOME = (  # (concept, label, statement sign): income statement rows, top to bottom
    ("Revenues", "Total revenue", 1),
    ("CostOfRevenue", "Cost of revenue", 1),
    ("GrossProfit", "Gross profit", 1),
    ("ResearchAndDevelopmentExpense", "Research and development", 1),
    ("SellingGeneralAndAdministrativeExpense", "Selling, general and administrative", 1),
    ("OperatingExpenses", "Total operating expenses", 1),
    ("OperatingIncomeLoss", "Operating income (loss)", 1),
    ("InterestExpense", "Interest expense", -1),
    (
        "IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest",
        "Income (loss) before income taxes",
        1,
    ),
    ("IncomeTaxExpenseBenefit", "Provision for income taxes", 1),
    ("NetIncomeLoss", "Net income (loss)", 1),
)
_BALANCE = (
    ("CashAndCashEquivalentsAtCarryingValue", "Cash and cash equivalents", 1),
    ("AccountsReceivableNetCurrent", "Accounts receivable, net", 1),
    ("InventoryNet", "Inventories", 1),
    ("AssetsCurrent", "Total current assets", 1),
    ("PropertyPlantAndEquipmentNet", "Property and equipment, net", 1),
    ("Goodwill", "Goodwill", 1),
    ("Assets", "Total assets", 1),
    ("AccountsPayableCurrent", "Accounts payable", 1),
    ("LiabilitiesCurrent", "Total current liabilities", 1),
    ("LongTermDebtNoncurrent", "Long-term debt, net of current portion", 1),
    ("Liabilities", "Total liabilities", 1),
    ("StockholdersEquity", "Total stockholders' equity", 1),
)
_CASH_FLOW = (  # (concept, label, statement sign): -1 is an outflow, printed in parentheses and tagged positive
    ("DepreciationDepletionAndAmortization", "Depreciation and amortization", 1),
    ("ShareBasedCompensation", "Stock-based compensation", 1),
    ("NetCashProvidedByUsedInOperatingActivities", "Net cash provided by operating activities", 1),
    ("PaymentsToAcquirePropertyPlantAndEquipment", "Purchases of property and equipment", -1),
    ("NetCashProvidedByUsedInInvestingActivities", "Net cash used in investing activities", 1),
    ("PaymentsForRepurchaseOfCommonStock", "Repurchases of common stock", -1),
    ("PaymentsOfDividends", "Dividends paid", -1),
)


@dataclass(frozen=True)
class Company:
    """A fictional company and its figures, year by year."""

    issuer: Issuer
    segments: tuple[str, ...]
    years: dict[int, dict[str, int]]  # fiscal year -> figures in thousands; segment revenue as "segment:<name>"


def companies(count: int, years: int) -> list[Company]:
    """`count` companies, each with figures for `years` fiscal years ending at LAST_YEAR and the year before them."""
    out = []
    for n in range(1, count + 1):
        rng = random.Random(f"annual-reports:{n}")
        name = f"{_FIRST[n % len(_FIRST)]}{_SECOND[n // len(_FIRST) % len(_SECOND)]} {_KIND[n // _NAMES % len(_KIND)]}"
        name += f" {n // (_NAMES * len(_KIND)) + 1}, Inc." if n >= _NAMES * len(_KIND) else ", Inc."  # each its own
        issuer = Issuer(f"G{n:03d}{n % 10}", _CIK_BASE + n, name, "Delaware", "diversified operations")
        segments = rng.choice(_SEGMENTS)
        revenue, shares = rng.randrange(200_000, 20_000_000), [rng.uniform(0.2, 0.6) for _ in segments]
        figures = {}
        for year in range(LAST_YEAR - years, LAST_YEAR + 1):
            revenue = int(revenue * rng.uniform(0.9, 1.3))
            shares = [share * rng.uniform(0.85, 1.15) for share in shares]
            figures[year] = _year(rng, revenue, dict(zip(segments, shares, strict=True)))
        out.append(Company(issuer, segments, figures))
    return out


def _year(rng: random.Random, revenue: int, shares: dict[str, float]) -> dict[str, int]:
    f = {"Revenues": revenue, "CostOfRevenue": int(revenue * rng.uniform(0.4, 0.7))}
    f["GrossProfit"] = revenue - f["CostOfRevenue"]
    f["ResearchAndDevelopmentExpense"] = int(revenue * rng.uniform(0.02, 0.15))
    f["SellingGeneralAndAdministrativeExpense"] = int(revenue * rng.uniform(0.08, 0.2))
    f["OperatingExpenses"] = f["ResearchAndDevelopmentExpense"] + f["SellingGeneralAndAdministrativeExpense"]
    f["OperatingIncomeLoss"] = f["GrossProfit"] - f["OperatingExpenses"]
    f["InterestExpense"] = int(revenue * rng.uniform(0.003, 0.02))
    pretax = f["OperatingIncomeLoss"] - f["InterestExpense"]
    f["IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest"] = pretax
    f["IncomeTaxExpenseBenefit"] = int(pretax * rng.uniform(0.12, 0.26)) if pretax > 0 else 0
    f["NetIncomeLoss"] = pretax - f["IncomeTaxExpenseBenefit"]
    f["CashAndCashEquivalentsAtCarryingValue"] = int(revenue * rng.uniform(0.08, 0.35))
    f["AccountsReceivableNetCurrent"] = int(revenue * rng.uniform(30, 75) / 365)
    f["InventoryNet"] = int(revenue * rng.uniform(0.03, 0.15))
    current = sum(
        f[k] for k in ("CashAndCashEquivalentsAtCarryingValue", "AccountsReceivableNetCurrent", "InventoryNet")
    )
    f["AssetsCurrent"] = current + int(revenue * rng.uniform(0.01, 0.05))
    f["PropertyPlantAndEquipmentNet"] = int(revenue * rng.uniform(0.2, 0.6))
    f["Goodwill"] = int(revenue * rng.uniform(0.05, 0.3))
    f["Assets"] = f["AssetsCurrent"] + f["PropertyPlantAndEquipmentNet"] + f["Goodwill"] + int(revenue * 0.1)
    f["AccountsPayableCurrent"] = int(revenue * rng.uniform(0.04, 0.1))
    f["LiabilitiesCurrent"] = f["AccountsPayableCurrent"] + int(revenue * rng.uniform(0.05, 0.15))
    f["LongTermDebtNoncurrent"] = int(revenue * rng.uniform(0.1, 0.5))
    f["Liabilities"] = f["LiabilitiesCurrent"] + f["LongTermDebtNoncurrent"] + int(revenue * rng.uniform(0.0, 0.05))
    f["StockholdersEquity"] = f["Assets"] - f["Liabilities"]
    f["DepreciationDepletionAndAmortization"] = int(revenue * rng.uniform(0.02, 0.06))
    f["ShareBasedCompensation"] = int(revenue * rng.uniform(0.005, 0.04))
    f["NetCashProvidedByUsedInOperatingActivities"] = (
        f["NetIncomeLoss"] + f["DepreciationDepletionAndAmortization"] + f["ShareBasedCompensation"]
    )
    f["PaymentsToAcquirePropertyPlantAndEquipment"] = int(revenue * rng.uniform(0.02, 0.1))
    f["NetCashProvidedByUsedInInvestingActivities"] = -f["PaymentsToAcquirePropertyPlantAndEquipment"] - int(
        revenue * rng.uniform(0.0, 0.05)
    )
    f["PaymentsForRepurchaseOfCommonStock"] = int(revenue * rng.uniform(0.0, 0.05))
    f["PaymentsOfDividends"] = int(revenue * rng.uniform(0.0, 0.03))
    f["SharesOutstanding"] = rng.randrange(50_000_000, 3_000_000_000)
    total = sum(shares.values())
    names = list(shares)
    for name in names[:-1]:
        f[f"segment:{name}"] = int(revenue * shares[name] / total)
    f[f"segment:{names[-1]}"] = revenue - sum(f[f"segment:{name}"] for name in names[:-1])
    return f


def annual_reports(count: int, years: int, quarters: bool = False) -> list[tuple[Filing, Company]]:
    """Each company's 10-K for each of its `years` fiscal years, oldest first; with `quarters`, each year's first
    quarter 10-Q too (filed before that year's 10-K)."""
    out = []
    for company in companies(count, years):
        issuer, n = company.issuer, company.issuer.cik % 1_000_000
        for year in range(LAST_YEAR - years + 1, LAST_YEAR + 1):
            if quarters:
                filed = f"{year}-05-{1 + issuer.cik % 12:02d}"
                out.append(
                    (
                        _filing(issuer, "10-Q", f"{year}-03-31", filed, 500_000 + n, first_quarter(company, year)),
                        company,
                    )
                )
            filed = f"{year + 1}-02-{10 + issuer.cik % 18:02d}"
            out.append((_filing(issuer, "10-K", f"{year}-12-31", filed, n, company.years[year]), company))
    return out


def _filing(issuer: Issuer, form: str, period_end: str, filed: str, sequence: int, facts: dict[str, int]) -> Filing:
    """A filing of the fiscal year its period ends in, its accession numbered in the year it was filed."""
    accession = f"{issuer.cik:010d}-{int(filed[:4]) % 100:02d}-{sequence:06d}"
    document = f"{issuer.ticker.lower()}-{period_end.replace('-', '')}.htm"
    return Filing(issuer, form, int(period_end[:4]), period_end, filed, accession, document, facts)


def first_quarter(company: Company, year: int) -> dict[str, int]:
    """The income statement of the three months ended March 31 of `year`: a share of the year's costs and revenue,
    its subtotals summed as the year's are (the same for the 10-Q of that quarter and the year after's)."""
    share = random.Random(f"first-quarter:{company.issuer.cik}:{year}").uniform(0.2, 0.28)
    f = {key: int(company.years[year][key] * share) for key in _QUARTER_SHARED}
    f["GrossProfit"] = f["Revenues"] - f["CostOfRevenue"]
    f["OperatingExpenses"] = f["ResearchAndDevelopmentExpense"] + f["SellingGeneralAndAdministrativeExpense"]
    f["OperatingIncomeLoss"] = f["GrossProfit"] - f["OperatingExpenses"]
    pretax = f["OperatingIncomeLoss"] - f["InterestExpense"]
    f["IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest"] = pretax
    f["IncomeTaxExpenseBenefit"] = min(f["IncomeTaxExpenseBenefit"], pretax) if pretax > 0 else 0
    f["NetIncomeLoss"] = pretax - f["IncomeTaxExpenseBenefit"]
    f["SharesOutstanding"] = company.years[year]["SharesOutstanding"]
    return f


_QUARTER_SHARED = (
    "Revenues",
    "CostOfRevenue",
    "ResearchAndDevelopmentExpense",
    "SellingGeneralAndAdministrativeExpense",
    "InterestExpense",
    "IncomeTaxExpenseBenefit",
)


def _member(segment: str) -> str:
    return "gen:" + segment.replace(" ", "") + "SegmentMember"


def _context(id_: str, cik: int, period: str, member: str = "") -> str:
    dimension = (
        f'<xbrli:segment><xbrldi:explicitMember dimension="us-gaap:StatementBusinessSegmentsAxis">{member}'
        "</xbrldi:explicitMember></xbrli:segment>"
        if member
        else ""
    )
    return (
        f'<xbrli:context id="{id_}"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">'
        f"{cik:010d}</xbrli:identifier>{dimension}</xbrli:entity><xbrli:period>{period}</xbrli:period>"
        "</xbrli:context>"
    )


def _duration(start: str, end: str) -> str:
    return f"<xbrli:startDate>{start}</xbrli:startDate><xbrli:endDate>{end}</xbrli:endDate>"


def _contexts(cik: int, year: int, segments: tuple[str, ...]) -> str:
    out = []
    for y in (year, year - 1):
        out.append(_context(f"FY{y}", cik, _duration(f"{y}-01-01", f"{y}-12-31")))
        out.append(_context(f"I{y}", cik, f"<xbrli:instant>{y}-12-31</xbrli:instant>"))
        out += [
            _context(f"FY{y}_{n}", cik, _duration(f"{y}-01-01", f"{y}-12-31"), _member(s))
            for n, s in enumerate(segments)
        ]
    out.append(_context("Cover", cik, f"<xbrli:instant>{year + 1}-02-01</xbrli:instant>"))
    out.append(_context("Float", cik, f"<xbrli:instant>{year}-06-30</xbrli:instant>"))
    return "\n".join(out)


_Cell = tuple[str, bool]  # a tagged figure, and whether it is printed in parentheses


def _table(caption: str, year: int, rows: list[tuple[str, _Cell, _Cell]]) -> str:
    """`rows`: (label, this year's cell, last year's cell)."""
    heading = f'<td></td><td colspan="3"><span style="font-weight:700">{year}</span></td>'
    heading += f'<td colspan="3"><span style="font-weight:700">{year - 1}</span></td>'
    body = "".join(
        f"<tr><td><span>{label}</span></td>{cells(*now)}{cells(*before)}</tr>" for label, now, before in rows
    )
    return f'<p><span style="font-weight:700">{caption}</span></p>\n<table><tr>{heading}</tr>{body}</table>\n'


def _rows(
    table, context: str, year: int, now: dict[str, int], before: dict[str, int]
) -> list[tuple[str, _Cell, _Cell]]:
    """A statement's rows for `year` and the year before, tagged in contexts `<context><year>`. An outflow (sign -1)
    is tagged positive and printed in parentheses; a negative figure is tagged so."""

    def cell(concept: str, sign: int, y: int, figures: dict[str, int]) -> _Cell:
        return tagged(concept, figures[concept], f"{context}{y}"), sign < 0 or figures[concept] < 0

    return [
        (label, cell(concept, sign, year, now), cell(concept, sign, year - 1, before)) for concept, label, sign in table
    ]


def render(filing: Filing, company: Company) -> str:
    """The filing's primary document: a 10-K, or a first quarter's 10-Q."""
    if filing.form == "10-Q":
        return _quarterly(filing, company)
    issuer, year = filing.issuer, filing.fiscal_year
    now, before = company.years[year], company.years[year - 1]
    segments = [
        (
            name,
            (tagged("Revenues", now[f"segment:{name}"], f"FY{year}_{n}"), False),
            (tagged("Revenues", before[f"segment:{name}"], f"FY{year - 1}_{n}"), False),
        )
        for n, name in enumerate(company.segments)
    ]
    market_to_book = random.Random(f"float:{issuer.cik}:{year}").uniform(2.0, 12.0)
    float_billions = max(0.1, round(abs(now["StockholdersEquity"]) * market_to_book / 1e6, 1))
    body = f"""<p><span>The aggregate market value of the voting stock held by non-affiliates of the registrant as of June 30, {year}
was approximately $<ix:nonFraction name="dei:EntityPublicFloat" contextRef="Float" unitRef="usd" decimals="-8"
 scale="9" format="ixt:num-dot-decimal">{float_billions:.1f}</ix:nonFraction> billion.</span></p>
{_shares(f"February 1, {year + 1}", now["SharesOutstanding"])}
<p><span style="font-weight:700">Item 8. Financial Statements and Supplementary Data</span></p>
{_table("Consolidated Statements of Operations (in thousands)", year, _rows(_INCOME, "FY", year, now, before))}
{_table("Consolidated Balance Sheets (in thousands)", year, _rows(_BALANCE, "I", year, now, before))}
{_table("Consolidated Statements of Cash Flows (in thousands)", year, _rows(_CASH_FLOW, "FY", year, now, before))}
<p><span style="font-weight:700">Note 12. Segment Information</span></p>
<p><span>{issuer.name} reports {len(company.segments)} segments. Revenue by segment was as follows.</span></p>
{_table("Revenue by segment (in thousands)", year, segments)}"""
    report = "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934 for the fiscal year\nended"
    return _page(filing, _contexts(issuer.cik, year, company.segments), "FY", report, body)


def _quarterly(filing: Filing, company: Company) -> str:
    """A 10-Q of the first quarter: its income statement, the quarter beside the same quarter a year before."""
    issuer, year = filing.issuer, filing.fiscal_year
    now, before = first_quarter(company, year), first_quarter(company, year - 1)
    contexts = "\n".join(
        [
            *(_context(f"FY{y}", issuer.cik, _duration(f"{y}-01-01", f"{y}-03-31")) for y in (year, year - 1)),
            _context("Cover", issuer.cik, f"<xbrli:instant>{year}-04-25</xbrli:instant>"),
        ]
    )
    body = f"""{_shares(f"April 25, {year}", now["SharesOutstanding"])}
<p><span style="font-weight:700">Item 1. Financial Statements</span></p>
<p><span>The columns are the three months ended March 31.</span></p>
{_table("Condensed Consolidated Statements of Operations (in thousands)", year, _rows(_INCOME, "FY", year, now, before))}"""
    report = "QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934 for the quarterly\nperiod ended"
    return _page(filing, contexts, "Q1", report, body)


def _shares(as_of: str, shares: int) -> str:
    """The cover's shares outstanding, tagged at the cover's date."""
    return f"""<p><span>As of {as_of}, the registrant had <ix:nonFraction name="dei:EntityCommonStockSharesOutstanding"
 contextRef="Cover" unitRef="shares" decimals="0" format="ixt:num-dot-decimal">{shares:,}\
</ix:nonFraction> shares of common stock outstanding.</span></p>"""


def _page(filing: Filing, contexts: str, focus: str, report: str, body: str) -> str:
    """The document around its statements: the inline XBRL header, the cover page's facts."""
    issuer, year = filing.issuer, filing.fiscal_year
    end = date.fromisoformat(filing.period_end)
    return f"""<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/inlineXBRL"
 xmlns:xbrli="http://www.xbrl.org/2003/instance" xmlns:xbrldi="http://xbrl.org/2006/xbrldi"
 xmlns:us-gaap="http://fasb.org/us-gaap/2024" xmlns:dei="http://xbrl.sec.gov/dei/2024"
 xmlns:gen="http://example.invalid/gen"><head><title>{issuer.ticker.lower()}-{filing.period_end}</title></head>
<body>
<div style="display:none"><ix:header><ix:hidden>
<ix:nonNumeric name="dei:EntityCentralIndexKey" contextRef="FY{year}">{issuer.cik:010d}</ix:nonNumeric>
<ix:nonNumeric name="dei:DocumentFiscalYearFocus" contextRef="FY{year}">{year}</ix:nonNumeric>
<ix:nonNumeric name="dei:DocumentFiscalPeriodFocus" contextRef="FY{year}">{focus}</ix:nonNumeric>
</ix:hidden><ix:resources>
{contexts}
<xbrli:unit id="usd"><xbrli:measure>iso4217:USD</xbrli:measure></xbrli:unit>
<xbrli:unit id="shares"><xbrli:measure>xbrli:shares</xbrli:measure></xbrli:unit>
</ix:resources></ix:header></div>
<div style="text-align:center"><span>UNITED STATES SECURITIES AND EXCHANGE COMMISSION</span></div>
<div style="text-align:center"><span style="font-weight:700">FORM \
<ix:nonNumeric name="dei:DocumentType" contextRef="FY{year}">{filing.form}</ix:nonNumeric></span></div>
<p><span>{report} <ix:nonNumeric name="dei:DocumentPeriodEndDate" contextRef="FY{year}" format="ixt:date-monthname-day-year-en">\
{end:%B} {end.day}, {end.year}</ix:nonNumeric></span></p>
<p><span style="font-weight:700"><ix:nonNumeric name="dei:EntityRegistrantName" contextRef="FY{year}">\
{issuer.name}</ix:nonNumeric></span><br/><span>(Exact name of registrant as specified in its charter)</span></p>
<p><span>Trading symbol: <ix:nonNumeric name="dei:TradingSymbol" contextRef="FY{year}">{issuer.ticker}\
</ix:nonNumeric></span></p>
{body}
</body></html>
"""


def write_annual_reports(out: Path, companies_: int, years: int, quarters: bool = False) -> Path:
    """Write the corpus into `out` in the sec.gov layout (replaced atomically if it exists) and return it."""
    reports = annual_reports(companies_, years, quarters)
    company_of = {filing.url_path: company for filing, company in reports}  # each document rendered as written
    issuers = list(dict.fromkeys(company.issuer for _, company in reports))
    return write_layout(
        Path(out), issuers, [filing for filing, _ in reports], lambda f: render(f, company_of[f.url_path])
    )


def _main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--companies", type=int, default=250)
    parser.add_argument("--years", type=int, default=4, help="10-Ks per company, ending at fiscal 2024")
    parser.add_argument("--quarters", action="store_true", help="and each year's first-quarter 10-Q")
    options = parser.parse_args(argv)
    print(write_annual_reports(options.out, options.companies, options.years, options.quarters))


if __name__ == "__main__":
    _main()
