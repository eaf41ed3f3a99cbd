"""Inline-XBRL primary documents for the embedded corpus, marked up the way real filings are: a hidden
`ix:header`, facts in `ix:nonFraction`, nested spans, tables with `$` and `(` `)` in cells of their own, and
a `display:none` block that must never reach the text."""

from __future__ import annotations

from finsec.corpus.issuers import Filing, previous_annual

__all__ = ["cells", "current_report", "money", "periodic_report", "render", "tagged"]

_STATEMENT_ROWS = (
    ("ProductRevenues", "Product revenues"),  # the top line split, then stated as its total
    ("ServiceRevenues", "Service revenues"),
    ("Revenues", "Total net revenues"),
    ("CostOfRevenue", "Cost of revenues"),
    ("OperatingExpenses", "Selling, general and administrative"),
    ("OperatingIncomeLoss", "Operating income (loss)"),
    ("NetIncomeLoss", "Net income (loss)"),
)
_CASH_ROWS = (
    ("NetCashProvidedByUsedInOperatingActivities", "Net cash provided by (used in) operating activities"),
    ("PaymentsToAcquirePropertyPlantAndEquipment", "Purchases of property and equipment"),
    ("CashAndCashEquivalentsAtCarryingValue", "Cash and cash equivalents, end of period"),
)
_OUTFLOWS = {"PaymentsToAcquirePropertyPlantAndEquipment"}


def money(value: int) -> str:
    return f"{abs(value):,}"


def tagged(name: str, value: int, context: str) -> str:
    """A figure in thousands as an `ix:nonFraction` fact of `context`, negative by its sign attribute."""
    sign = ' sign="-"' if value < 0 else ""
    return (
        f'<ix:nonFraction name="us-gaap:{name}" contextRef="{context}" unitRef="usd" decimals="-3" scale="3"'
        f'{sign} format="ixt:num-dot-decimal">{money(value)}</ix:nonFraction>'
    )


def cells(value_html: str, negative: bool) -> str:
    """`$`, `(` and `)` in cells of their own, as EDGAR's table markup does."""
    open_, close = ("<span>(</span>", "<td><span>)</span></td>") if negative else ("", "<td></td>")
    return f'<td><span>$</span></td><td style="text-align:right">{open_}{value_html}</td>{close}'


def _header(filing: Filing, title: str, context: str) -> str:
    issuer = filing.issuer
    return f"""<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/inlineXBRL"
 xmlns:us-gaap="http://fasb.org/us-gaap/2024"><head><title>{issuer.ticker.lower()}-{filing.period_end}</title>
<style>.hidden {{ display: none }}</style></head>
<body>
<div style="display:none"><ix:header><ix:hidden>
<ix:nonNumeric name="dei:EntityCentralIndexKey" contextRef="{context}">{issuer.cik:010d}</ix:nonNumeric>
<ix:nonNumeric name="dei:DocumentType" contextRef="{context}">{filing.form}</ix:nonNumeric>
<ix:nonNumeric name="dei:AmendmentDescription" contextRef="{context}">\
Hidden header text that readers never see</ix:nonNumeric>
</ix:hidden><ix:resources><xbrli:context id="{context}"><xbrli:entity>{issuer.cik}</xbrli:entity></xbrli:context>
</ix:resources></ix:header></div>
<div style="text-align:center"><span>UNITED STATES</span><br/><span>SECURITIES AND EXCHANGE COMMISSION</span>
<br/><span>Washington, D.C. 20549</span></div>
<div style="text-align:center"><span style="font-weight:700">FORM {filing.form}</span></div>
<p><span>{title}</span></p>
<p><span style="font-weight:700">{issuer.name}</span><br/>\
<span>(Exact name of registrant as specified in its charter)</span></p>
<table><tr><td><span>{issuer.state}</span></td><td><span>{issuer.cik:010d}</span></td></tr>
<tr><td><span>(State of incorporation)</span></td><td><span>(Commission CIK)</span></td></tr></table>
<p><span>Trading symbol: {issuer.ticker}</span></p>
"""


_FOOTER = """<div class="hidden" style="display:none"><span>Draft note, not part of the filing.</span></div>
</body></html>
"""


def periodic_report(filing: Filing) -> str:
    """A 10-K (with the prior year alongside) or a 10-Q."""
    f, issuer = filing.facts, filing.issuer
    annual = filing.form == "10-K"
    context = f"FY{filing.fiscal_year}" if annual else f"Q1{filing.fiscal_year}"
    prior_filing = previous_annual(filing) if annual else None
    prior = prior_filing.facts if prior_filing else None
    period = "fiscal year" if annual else "quarterly period"
    heading = f'<td><span style="font-weight:700">{filing.period_end[:4]}</span></td><td></td><td></td>'
    if prior_filing is not None and prior:  # prior holds facts only with a prior filing
        heading += f'<td><span style="font-weight:700">{prior_filing.fiscal_year}</span></td><td></td><td></td>'

    def row(name: str, label: str) -> str:
        negative = f[name] < 0 or name in _OUTFLOWS
        shown = cells(f"<span>{tagged(name, f[name], context)}</span>", negative)
        if prior:
            shown += cells(money(prior[name]), prior[name] < 0 or name in _OUTFLOWS)
        return f'<tr><td><div><span style="font-family:Times">{label}</span></div></td>{shown}</tr>'

    growth = ""
    if prior_filing is not None and prior:
        change = (f["Revenues"] - prior["Revenues"]) / prior["Revenues"] * 100
        growth = (
            f", compared with ${money(prior['Revenues'])} thousand in {prior_filing.fiscal_year}, "
            f"{'an increase' if change >= 0 else 'a decrease'} of {abs(change):.1f}%"
        )
    result = "net income" if f["NetIncomeLoss"] >= 0 else "a net loss"
    people = (
        f"<p><span>As of {filing.period_end}, we had approximately {f['Employees']:,} full-time employees.</span></p>"
        if annual
        else ""
    )
    return (
        _header(filing, f"For the {period} ended {filing.period_end}", context)
        + f"""
<p><span style="font-weight:700">Item 7. Management's Discussion and Analysis of Financial Condition</span></p>
<p><span>{issuer.name} operates in {issuer.business}. Total net revenues for the {period} ended
{filing.period_end} were ${money(f["Revenues"])} thousand{growth}. We reported {result} of
${money(f["NetIncomeLoss"])} thousand. Net cash {
            "provided by" if f["NetCashProvidedByUsedInOperatingActivities"] >= 0 else "used in"
        } operating activities was ${money(f["NetCashProvidedByUsedInOperatingActivities"])} thousand, and
capital expenditures were ${money(f["PaymentsToAcquirePropertyPlantAndEquipment"])} thousand.</span></p>
{people}
<p><span style="font-weight:700">Consolidated Statements of Operations</span><br/><span>(in thousands)</span></p>
<table>
<tr><td></td>{heading}</tr>
{"".join(row(name, label) for name, label in _STATEMENT_ROWS)}
</table>
<p><span style="font-weight:700">Consolidated Statements of Cash Flows</span><br/><span>(in thousands)</span></p>
<table>
<tr><td></td>{heading}</tr>
{"".join(row(name, label) for name, label in _CASH_ROWS)}
</table>
"""
        + _FOOTER
    )


def current_report(filing: Filing) -> str:
    """An 8-K under Item 2.02 announcing the fiscal year's results."""
    f, issuer = filing.facts, filing.issuer
    context = f"D{filing.period_end.replace('-', '')}"
    return (
        _header(
            filing, "CURRENT REPORT Pursuant to Section 13 or 15(d) of the Securities Exchange Act of 1934", context
        )
        + f"""
<p><span>Date of Report (Date of earliest event reported): {filing.period_end}</span></p>
<p><span style="font-weight:700">Item 2.02 Results of Operations and Financial Condition.</span></p>
<p><span>On {filing.period_end}, {issuer.name} issued a press release announcing its results for the fourth quarter
and fiscal year ended December 31, {filing.fiscal_year}. Fourth-quarter revenues were
$<span>{tagged("Revenues", f["FourthQuarterRevenues"], context)}</span> thousand and full-year revenues were
${money(f["Revenues"])} thousand.</span></p>
<p><span style="font-weight:700">Item 9.01 Financial Statements and Exhibits.</span></p>
<table><tr><td><span>Exhibit 99.1</span></td><td><span>Press release dated {filing.period_end}</span></td></tr></table>
"""
        + _FOOTER
    )


def render(filing: Filing) -> str:
    return current_report(filing) if filing.form == "8-K" else periodic_report(filing)
