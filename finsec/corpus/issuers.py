"""The embedded corpus's fictional issuers and their filings, with deterministic financial facts.

Tickers end in a digit and CIKs start at 990,000,001, so they cannot collide with a real ticker or CIK.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["CORPUS_VERSION", "Filing", "filings", "FISCAL_YEARS", "Issuer", "ISSUERS", "previous_annual"]

CORPUS_VERSION = "3"  # names the cached folder: bump it whenever a document's text changes
_FACTS_SEED = "2"  # seeds the figures: kept when only the layout changes, so every figure stays the same


@dataclass(frozen=True)
class Issuer:
    ticker: str
    cik: int
    name: str
    state: str
    business: str
    loss_making: bool = False


ISSUERS = (
    Issuer("HLXR1", 990000001, "Helixar Analytics Corp.", "Delaware", "industrial data analytics software"),
    Issuer("BRWN2", 990000002, "Brightwater Grid Holdings, Inc.", "Nevada", "regulated electric transmission"),
    Issuer("QMTF3", 990000003, "Quillmont Foods Group Inc.", "Ohio", "packaged foods and beverages"),
    Issuer("VTRS4", 990000004, "Vantrell Biosciences, Inc.", "Delaware", "clinical-stage gene therapies", True),
)
FISCAL_YEARS = (2023, 2024)


@dataclass(frozen=True)
class Filing:
    issuer: Issuer
    form: str  # 10-K, 10-Q or 8-K
    fiscal_year: int
    period_end: str  # the report date; for an 8-K, the date of the event
    filing_date: str
    accession: str  # dashed
    document: str
    facts: dict[str, int]  # thousands of dollars, except Employees

    @property
    def url_path(self) -> str:
        return f"Archives/edgar/data/{self.issuer.cik}/{self.accession.replace('-', '')}/{self.document}"

    @property
    def url(self) -> str:
        return "https://www.sec.gov/" + self.url_path


def _facts(rng: random.Random, loss_making: bool) -> dict[str, int]:
    revenue = rng.randrange(400_000, 4_000_000)
    cost = int(revenue * rng.uniform(0.45, 0.7))
    opex = int(revenue * (rng.uniform(0.5, 0.9) if loss_making else rng.uniform(0.12, 0.25)))
    operating_income = revenue - cost - opex
    net_income = int(operating_income * rng.uniform(0.6, 0.8))
    return {
        "Revenues": revenue,
        "CostOfRevenue": cost,
        "OperatingExpenses": opex,
        "OperatingIncomeLoss": operating_income,
        "NetIncomeLoss": net_income,
        "NetCashProvidedByUsedInOperatingActivities": int(abs(net_income) * rng.uniform(1.1, 1.5))
        * (-1 if loss_making else 1),
        "PaymentsToAcquirePropertyPlantAndEquipment": int(revenue * rng.uniform(0.03, 0.12)),
        "CashAndCashEquivalentsAtCarryingValue": int(revenue * rng.uniform(0.1, 0.4)),
        "FourthQuarterRevenues": int(revenue * rng.uniform(0.24, 0.28)),
        "Employees": rng.randrange(300, 20_000),
    }


def _split_revenues(facts: dict[str, int]) -> dict[str, int]:
    """Revenues split into products and services, as statements that state the top line as a total do. The share
    comes from the figure itself, not from the random stream, so adding the split changed no other figure."""
    products = facts["Revenues"] * (55 + facts["Revenues"] % 23) // 100
    return {**facts, "ProductRevenues": products, "ServiceRevenues": facts["Revenues"] - products}


def _accession(rng: random.Random, issuer: Issuer, year: int) -> str:
    return f"{issuer.cik:010d}-{year % 100:02d}-{rng.randrange(1, 999999):06d}"


def filings() -> list[Filing]:
    """Per issuer: a 10-K and a results 8-K for each fiscal year, then a 10-Q; in filing order."""
    out = []
    for issuer in ISSUERS:
        rng = random.Random(f"{_FACTS_SEED}:{issuer.ticker}")
        for n, year in enumerate(FISCAL_YEARS):
            facts = _split_revenues(_facts(rng, issuer.loss_making))
            out.append(
                Filing(
                    issuer,
                    "8-K",
                    year,
                    f"{year + 1}-01-{28 + n:02d}",
                    f"{year + 1}-01-{29 + n:02d}",
                    _accession(rng, issuer, year + 1),
                    f"{issuer.ticker.lower()}-8k-{year + 1}01{28 + n:02d}.htm",
                    facts,
                )
            )
            out.append(
                Filing(
                    issuer,
                    "10-K",
                    year,
                    f"{year}-12-31",
                    f"{year + 1}-02-{10 + n:02d}",
                    _accession(rng, issuer, year + 1),
                    f"{issuer.ticker.lower()}-{year}1231.htm",
                    facts,
                )
            )
        year = FISCAL_YEARS[-1] + 1
        quarter = _split_revenues({k: v // 4 for k, v in _facts(rng, issuer.loss_making).items()})
        out.append(
            Filing(
                issuer,
                "10-Q",
                year,
                f"{year}-03-31",
                f"{year}-05-02",
                _accession(rng, issuer, year),
                f"{issuer.ticker.lower()}-{year}0331.htm",
                quarter,
            )
        )
    return out


def previous_annual(filing: Filing) -> Filing | None:
    """The issuer's 10-K for the year before, for a 10-K's comparative column."""
    return next(
        (
            f
            for f in filings()
            if f.issuer == filing.issuer and f.form == "10-K" and f.fiscal_year == filing.fiscal_year - 1
        ),
        None,
    )
