"""Questions over the real filings of ../shared/data/edgar-real, with answers read from the filings' own inline
XBRL: each asked figure is a tagged fact of the filing's reporting period (no dimensions: the company total),
named by the label of the table row it sits in, scaled as the tag says. Nothing is typed in by hand, so a
question cannot carry a wrong answer, and the data is read at run time, never copied.

    .venv/bin/python bench/real_questions.py > runs/real-questions.jsonl    # one JSON task a line

Kinds: per 10-K, the fiscal year's revenue, net income, operating income, cash from operations and diluted EPS,
and total assets at year end; per 10-Q, the quarter's revenue and net income.
"""

from __future__ import annotations

import html
import json
import re
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from _common import DATA  # noqa: F401 (puts the project on sys.path)

# What a row labelled only "Total" or "Diluted" (under a heading) names.
PLAIN_NAMES = {"revenue": "total revenues", "quarter_revenue": "total revenues", "diluted_eps":
               "diluted earnings per share", "net_income": "net income", "quarter_net_income": "net income"}
# kind -> (10-K or 10-Q, XBRL concepts in order of preference, the duration asked: year, quarter or instant)
KINDS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "revenue": ("10-K", ("Revenues", "RevenueFromContractWithCustomerExcludingAssessedTax"), "year"),
    "net_income": ("10-K", ("NetIncomeLoss",), "year"),
    "operating_income": ("10-K", ("OperatingIncomeLoss",), "year"),
    "operating_cash_flow": ("10-K", ("NetCashProvidedByUsedInOperatingActivities",), "year"),
    "diluted_eps": ("10-K", ("EarningsPerShareDiluted",), "year"),
    "total_assets": ("10-K", ("Assets",), "instant"),
    "quarter_revenue": ("10-Q", ("Revenues", "RevenueFromContractWithCustomerExcludingAssessedTax"), "quarter"),
    "quarter_net_income": ("10-Q", ("NetIncomeLoss",), "quarter"),
}
_CONTEXT = re.compile(r'<xbrli:context id="([^"]+)">(.*?)</xbrli:context>', re.S)
_FACT = re.compile(r"<ix:nonFraction\b([^>]*)>(.*?)</ix:nonFraction>", re.S)
_ATTR = re.compile(r'(\w+(?::\w+)?)="([^"]*)"')
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Fact:
    concept: str
    context: str
    value: float
    scale: int
    row_label: str


def contexts(document: str) -> dict[str, tuple[date | None, date, bool]]:
    """id -> (start, end or instant, whether it has dimensions)."""
    out = {}
    for cid, body in _CONTEXT.findall(document):
        dates = re.findall(r"<xbrli:(?:startDate|endDate|instant)>([\d-]+)<", body)
        if not dates:
            continue
        start = date.fromisoformat(dates[0]) if len(dates) == 2 else None
        out[cid] = (start, date.fromisoformat(dates[-1]), "<xbrli:segment>" in body)
    return out


def facts(document: str) -> list[Fact]:
    found = []
    for match in _FACT.finditer(document):
        attrs = dict(_ATTR.findall(match.group(1)))
        text = _TAG.sub("", match.group(2)).strip().replace(",", "")
        try:
            value = float(text) if text not in ("", "-", "—") else 0.0
        except ValueError:
            continue
        if attrs.get("sign") == "-":
            value = -value
        found.append(Fact(attrs.get("name", "").split(":")[-1], attrs.get("contextRef", ""), value,
                          int(attrs.get("scale", "0")), row_label(document, match.start())))
    return found


def row_label(document: str, at: int) -> str:
    """The text of the first cell of the table row a fact sits in: how the filing names the figure."""
    row_start = document.rfind("<tr", 0, at)
    if row_start < 0 or document.rfind("</tr>", row_start, at) > 0:
        return ""
    cell = re.search(r"<td\b.*?</td>", document[row_start:at + 1], re.S)
    return re.sub(r"\s+", " ", html.unescape(_TAG.sub(" ", cell.group(0)))).strip(" :") if cell else ""


def dei(document: str, name: str) -> str | None:
    match = re.search(rf'name="dei:{name}"[^>]*>(.*?)</ix:non', document, re.S)
    return _TAG.sub("", match.group(1)).strip() if match else None


def amount(value: float, scale: int, per_share: bool) -> str:
    if per_share:
        return f"${value:,.2f}" if value >= 0 else f"-${-value:,.2f}"
    unit = {6: " million", 3: " thousand", 9: " billion"}.get(scale, "")
    shown = value  # the figure as the table prints it, in the tag's scale
    text = f"{abs(shown):,.0f}" if shown == int(shown) else f"{abs(shown):,}"
    return f"{'-' if shown < 0 else ''}${text}{unit}"


def questions(root: Path = DATA) -> list[dict]:
    manifest = json.loads((root / "MANIFEST.json").read_text())
    out = []
    for row in manifest:
        document = (root / row["url_path"]).read_text(errors="replace")
        known = contexts(document)
        period_end = _period_end(document, known)
        year = int(dei(document, "DocumentFiscalYearFocus") or period_end.year)
        by_concept: dict[str, list[Fact]] = {}
        for fact in facts(document):
            by_concept.setdefault(fact.concept, []).append(fact)
        for kind, (form, concepts, span) in KINDS.items():
            if form != row["form"]:
                continue
            fact = _the_fact(by_concept, concepts, known, period_end, span)
            if fact is None or not fact.row_label:
                continue
            per_share = kind == "diluted_eps"
            out.append({
                "question": _ask(row, kind, fact.row_label, year, period_end, span),
                "expected_answer": amount(fact.value, fact.scale, per_share),
                "ticker": row["ticker"], "form": form, "kind": kind, "url": "https://www.sec.gov/" + row["url_path"],
                "task_id": f"{row['ticker']}-{form}-{period_end.isoformat()}-{kind}",
            })
    return out


def _period_end(document: str, known: dict) -> date:
    """The end of the period the document reports: its DocumentPeriodEndDate's context (the text of that tag is
    often split over nested tags)."""
    match = re.search(r'<ix:nonNumeric\b[^>]*name="dei:DocumentPeriodEndDate"[^>]*>', document)
    context = dict(_ATTR.findall(match.group(0))).get("contextRef") if match else None
    if context not in known:
        raise ValueError("no DocumentPeriodEndDate with a known context")
    return known[context][1]


def _the_fact(by_concept, concepts, known, period_end: date, span: str) -> Fact | None:
    for concept in concepts:
        for fact in by_concept.get(concept, []):
            start, end, dimensional = known.get(fact.context, (None, None, True))
            if dimensional or end is None or abs((end - period_end).days) > 7:
                continue
            days = (end - start).days if start else 0
            if (span == "instant" and start is None) or (span == "year" and 350 <= days <= 380) or \
                    (span == "quarter" and 80 <= days <= 100):
                return fact
    return None


def _ask(row: dict, kind: str, label: str, year: int, period_end: date, span: str) -> str:
    who = f"{row['company']} ({row['ticker']})"
    label = re.sub(r"\s*\(Note \d+\)", "", label)
    if len(label.split()) < 2 and kind in PLAIN_NAMES:
        label = PLAIN_NAMES[kind]
    figure = label[0].lower() + label[1:] if not label[:2].isupper() else label
    if span == "quarter":
        when = f"the quarter ended {period_end.strftime('%B')} {period_end.day}, {period_end.year}"
        return f"What was {who}'s {figure} for {when}, as reported in its 10-Q?"
    if span == "instant":
        return f"What were {who}'s {figure} at the end of fiscal year {year}?"
    return f"What was {who}'s {figure} for fiscal year {year}?"


if __name__ == "__main__":
    if not (DATA / "MANIFEST.json").is_file():
        sys.exit(f"no real filings at {DATA}")
    for question in questions():
        print(json.dumps(question))
