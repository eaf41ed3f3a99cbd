"""The figures a task may ask for: us-gaap concepts an analyst asks about, by the name an analyst uses.

Several concepts can carry one figure (filers choose between `Revenues` and
`RevenueFromContractWithCustomerExcludingAssessedTax`); the first one a filing tags is the figure. `signed`
says whether the question asks for a signed figure (net income can be a loss) or a magnitude ("how much did it
spend"), which is how the two readings compare it: a payment printed in parentheses is still a payment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["CHANGES", "FIGURES", "Figure", "FORMULAS", "Formula", "RATIOS", "Ratio", "SEGMENT_AXES"]


@dataclass(frozen=True)
class Figure:
    key: str
    name: str  # as an analyst says it
    concepts: tuple[str, ...]  # us-gaap local names, in order of preference
    statement: str  # "income", "balance" or "cash_flow"
    signed: bool = True
    ask: str = ""  # a question of its own; default "What was {company}'s {name} {period}?"


def _f(key, name, concepts, statement, signed=True, ask=""):
    return Figure(key, name, tuple(concepts.split()), statement, signed, ask)


FIGURES: tuple[Figure, ...] = (
    _f(
        "revenue",
        "total revenue",
        "Revenues RevenueFromContractWithCustomerExcludingAssessedTax SalesRevenueNet",
        "income",
        ask="How much total revenue did {company} report {period}?",
    ),
    _f("cost_of_revenue", "cost of revenue", "CostOfRevenue CostOfGoodsAndServicesSold", "income", False),
    _f("gross_profit", "gross profit", "GrossProfit", "income"),
    _f(
        "research_and_development",
        "research and development expense",
        "ResearchAndDevelopmentExpense",
        "income",
        False,
        "How much did {company} spend on research and development {period}?",
    ),
    _f("sga", "selling, general and administrative expense", "SellingGeneralAndAdministrativeExpense", "income", False),
    _f("operating_expenses", "total operating expenses", "OperatingExpenses CostsAndExpenses", "income", False),
    _f("operating_income", "operating income", "OperatingIncomeLoss", "income"),
    _f("interest_expense", "interest expense", "InterestExpense InterestExpenseNonoperating", "income", False),
    _f(
        "other_income",
        "other income (expense), net",
        "NonoperatingIncomeExpense OtherNonoperatingIncomeExpense",
        "income",
    ),
    _f(
        "pretax_income",
        "income before income taxes",
        "IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest "
        "IncomeLossFromContinuingOperationsBeforeIncomeTaxesMinorityInterestAndIncomeLossFromEquityMethodInvestments",
        "income",
    ),
    _f("income_tax", "provision for income taxes", "IncomeTaxExpenseBenefit", "income"),
    _f("net_income", "net income", "NetIncomeLoss", "income"),
    _f("eps_basic", "basic earnings per share", "EarningsPerShareBasic", "income"),
    _f("eps_diluted", "diluted earnings per share", "EarningsPerShareDiluted", "income"),
    _f(
        "shares_basic",
        "weighted-average basic share count",
        "WeightedAverageNumberOfSharesOutstandingBasic",
        "income",
        False,
        "How many weighted-average basic shares did {company} have outstanding {period}?",
    ),
    _f(
        "shares_diluted",
        "weighted-average diluted share count",
        "WeightedAverageNumberOfDilutedSharesOutstanding",
        "income",
        False,
        "How many weighted-average diluted shares did {company} have outstanding {period}?",
    ),
    _f("cash", "cash and cash equivalents", "CashAndCashEquivalentsAtCarryingValue", "balance", False),
    _f(
        "marketable_securities",
        "current marketable securities",
        "MarketableSecuritiesCurrent AvailableForSaleSecuritiesDebtSecuritiesCurrent ShortTermInvestments",
        "balance",
        False,
    ),
    _f("receivables", "accounts receivable, net", "AccountsReceivableNetCurrent", "balance", False),
    _f("inventory", "inventories", "InventoryNet", "balance", False),
    _f("current_assets", "total current assets", "AssetsCurrent", "balance", False),
    _f(
        "ppe",
        "net property and equipment",
        "PropertyPlantAndEquipmentNet "
        "PropertyPlantAndEquipmentAndFinanceLeaseRightOfUseAssetAfterAccumulatedDepreciationAndAmortization",
        "balance",
        False,
    ),
    _f("goodwill", "goodwill", "Goodwill", "balance", False),
    _f("total_assets", "total assets", "Assets", "balance", False),
    _f("payables", "accounts payable", "AccountsPayableCurrent", "balance", False),
    _f("current_liabilities", "total current liabilities", "LiabilitiesCurrent", "balance", False),
    _f("long_term_debt", "long-term debt, excluding the current portion", "LongTermDebtNoncurrent", "balance", False),
    _f("total_liabilities", "total liabilities", "Liabilities", "balance", False),
    _f("equity", "total shareholders' equity", "StockholdersEquity", "balance"),
    _f("retained_earnings", "retained earnings (accumulated deficit)", "RetainedEarningsAccumulatedDeficit", "balance"),
    _f(
        "depreciation",
        "depreciation and amortization",
        "DepreciationDepletionAndAmortization DepreciationAmortizationAndAccretionNet DepreciationAndAmortization",
        "cash_flow",
        False,
    ),
    _f(
        "stock_compensation",
        "stock-based compensation expense",
        "ShareBasedCompensation AllocatedShareBasedCompensationExpense",
        "cash_flow",
        False,
    ),
    _f(
        "operating_cash_flow",
        "net cash provided by operating activities",
        "NetCashProvidedByUsedInOperatingActivities",
        "cash_flow",
    ),
    _f(
        "capex",
        "capital expenditures",
        "PaymentsToAcquirePropertyPlantAndEquipment PaymentsToAcquireProductiveAssets",
        "cash_flow",
        False,
        "How much did {company} spend on capital expenditures {period}?",
    ),
    _f(
        "investing_cash_flow",
        "net cash provided by (used in) investing activities",
        "NetCashProvidedByUsedInInvestingActivities",
        "cash_flow",
    ),
    _f(
        "buybacks",
        "share repurchases",
        "PaymentsForRepurchaseOfCommonStock",
        "cash_flow",
        False,
        "How much cash did {company} spend repurchasing its common stock {period}?",
    ),
    _f(
        "dividends",
        "dividends paid",
        "PaymentsOfDividends PaymentsOfDividendsCommonStock",
        "cash_flow",
        False,
        "How much did {company} pay in dividends {period}?",
    ),
    _f(
        "financing_cash_flow",
        "net cash provided by (used in) financing activities",
        "NetCashProvidedByUsedInFinancingActivities",
        "cash_flow",
    ),
    _f("taxes_paid", "cash paid for income taxes", "IncomeTaxesPaidNet IncomeTaxesPaid", "cash_flow", False),
)

# Figures whose change from the prior period is asked, by key.
CHANGES = (
    "revenue",
    "net_income",
    "operating_income",
    "operating_cash_flow",
    "eps_diluted",
    "total_assets",
    "cash",
    "research_and_development",
)


@dataclass(frozen=True)
class Ratio:
    key: str
    name: str
    numerator: str  # a Figure key
    denominator: str
    percent: bool = True


RATIOS: tuple[Ratio, ...] = (
    Ratio("gross_margin", "gross margin (gross profit as a percentage of total revenue)", "gross_profit", "revenue"),
    Ratio(
        "operating_margin",
        "operating margin (operating income as a percentage of total revenue)",
        "operating_income",
        "revenue",
    ),
    Ratio("net_margin", "net profit margin (net income as a percentage of total revenue)", "net_income", "revenue"),
    Ratio(
        "rd_intensity",
        "research and development expense as a percentage of total revenue",
        "research_and_development",
        "revenue",
    ),
    Ratio(
        "effective_tax_rate",
        "effective tax rate (provision for income taxes over income before income taxes)",
        "income_tax",
        "pretax_income",
    ),
    Ratio(
        "current_ratio",
        "current ratio (total current assets over total current liabilities)",
        "current_assets",
        "current_liabilities",
        percent=False,
    ),
)


@dataclass(frozen=True)
class Formula:
    """A figure an analyst computes from several tagged ones, across statements; the task records `formula`.
    `terms` are Figure keys of the filing's period; `averaged` balance figures are averaged over the year's start
    and end (the instant a year before, which a 10-K's balance sheet also tags), as `<key>_start` and `<key>`."""

    key: str
    name: str
    formula: str
    terms: tuple[str, ...]
    compute: Callable[[dict[str, float]], float]
    answer: Literal["amount", "percent", "multiple", "days"] = "amount"
    averaged: tuple[str, ...] = ()
    annual_only: bool = False  # a year's figures (a 10-K)


FORMULAS: tuple[Formula, ...] = (
    Formula(
        "free_cash_flow",
        "free cash flow (net cash provided by operating activities less capital expenditures)",
        "operating_cash_flow - capex",
        ("operating_cash_flow", "capex"),
        lambda v: v["operating_cash_flow"] - v["capex"],
    ),
    Formula(
        "net_debt",
        "net debt (long-term debt, excluding the current portion, less cash and cash equivalents)",
        "long_term_debt - cash",
        ("long_term_debt", "cash"),
        lambda v: v["long_term_debt"] - v["cash"],
    ),
    Formula(
        "interest_coverage",
        "interest coverage (operating income over interest expense, as a multiple)",
        "operating_income / interest_expense",
        ("operating_income", "interest_expense"),
        lambda v: v["operating_income"] / v["interest_expense"],
        answer="multiple",
    ),
    Formula(
        "return_on_average_equity",
        "return on average equity (net income over the average of total shareholders' equity at the start and "
        "the end of the year)",
        "net_income / ((equity_start + equity) / 2)",
        ("net_income",),
        lambda v: v["net_income"] / ((v["equity_start"] + v["equity"]) / 2),
        answer="percent",
        averaged=("equity",),
        annual_only=True,
    ),
    Formula(
        "days_sales_outstanding",
        "days sales outstanding (accounts receivable at the year's end over the year's total revenue, times 365)",
        "receivables / revenue * 365",
        ("receivables", "revenue"),
        lambda v: v["receivables"] / v["revenue"] * 365,
        answer="days",
        annual_only=True,
    ),
)

# Dimension axes whose members are the segments, products and regions a company reports revenue by.
SEGMENT_AXES = {
    "us-gaap:StatementBusinessSegmentsAxis": "segment",
    "srt:ProductOrServiceAxis": "product",
    "srt:StatementGeographicalAxis": "region",
}
