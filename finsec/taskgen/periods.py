"""Tasks across periods that no one filing holds, each from two filings of one company, as an analyst would read
them:
- `growth`: the compound annual growth in total revenue over three fiscal years, from the 10-K of the last year and
  the 10-K that states the first (a 10-K states its year and the year before only);
- `quarter_change`: a quarter's total revenue against the same quarter a year before, each from its own 10-Q (as
  first reported, which a later 10-Q's comparative column may not repeat).
Each figure is a fact a kept task of its filing rests on (read the same tagged and printed): the `line_item`
revenue task of its own filing or, for a year, failing one, the prior-year side of a later 10-K's `change` task.
The two figures come from different filings, and all of a company's filings are in its one split, so the task's
split is theirs.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from finsec.taskgen.build import TIERS, Built, Source, long_date

__all__ = ["YEARS", "growth_tasks", "quarter_tasks"]

YEARS = 3  # the span of a growth rate, in fiscal years
_YEAR_DAYS = (350, 380)  # a fiscal year's length, as build.py reads one
_QUARTER_DAYS = (80, 100)
_DRIFT_DAYS = 7  # a 52/53-week year ends within a week of the date a year on
_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}


def growth_tasks(filings: list[tuple[Source, Built, str]]) -> list[dict[str, Any]]:
    """Every three-year revenue growth rate a company's 10-Ks allow; each task carries its company's split."""
    return [
        _growth_task(company, first, last, split)
        for company, first, last, split in _pairs(filings, "10-K", _YEAR_DAYS, YEARS, comparatives=True)
        if first[1]["value"] > 0 and last[1]["value"] > 0
    ]


def quarter_tasks(filings: list[tuple[Source, Built, str]]) -> list[dict[str, Any]]:
    """Every quarter's change in revenue from the same quarter a year before, each from its own 10-Q."""
    return [
        _quarter_task(company, before, now, split)
        for company, before, now, split in _pairs(filings, "10-Q", _QUARTER_DAYS, 1, comparatives=False)
        if before[1]["value"] > 0
    ]


_Figure = tuple[Source, dict]  # a revenue fact and the filing it was read from


def _pairs(filings: list[tuple[Source, Built, str]], form: str, span: tuple[int, int], years: int, comparatives: bool):
    """(company, the earlier figure, the later one, split) for each period of `span` days ended `years` years
    before another, the two read from different filings of the form."""
    by_company: dict[str, list[tuple[Source, Built, str]]] = {}
    for source, built, split in filings:
        if source.form == form:
            by_company.setdefault(source.cik, []).append((source, built, split))
    for rows in by_company.values():
        revenue = _revenue_by_end(rows, span, comparatives)  # period end -> (fact, source, company name)
        for end, (last, last_source, company) in sorted(revenue.items()):
            first_end = next((e for e in revenue if abs((end - e).days - 365 * years) <= _DRIFT_DAYS), None)
            if first_end is None:
                continue
            first, first_source, _ = revenue[first_end]
            if first_source.accession == last_source.accession:
                continue
            split = next(split for source, _, split in rows if source.accession == last_source.accession)
            yield company, (first_source, first), (last_source, last), split


def _revenue_by_end(
    rows: list[tuple[Source, Built, str]], span: tuple[int, int], comparatives: bool
) -> dict[date, tuple[dict, Source, str]]:
    """Each period's company-wide revenue fact a kept task rests on, from the filing whose own period it is if one
    was read, else (with `comparatives`) from a later filing's comparative column."""
    found: dict[date, tuple[dict, Source, str, bool]] = {}
    kinds = ("line_item", "change") if comparatives else ("line_item",)
    for source, built, _ in sorted(rows, key=lambda row: row[0].accession):
        for task in built.tasks:
            if task.get("figure") != "revenue" or task["kind"] not in kinds:
                continue
            company = f"{task['company']} ({source.ticker})"
            for n, fact in enumerate(task["facts"]):
                own = task["kind"] == "line_item"
                if not _spans(fact, span) or (task["kind"] == "change" and n != 0):  # a change's first: the prior
                    continue
                end = date.fromisoformat(fact["period"]["end"])
                if end not in found or (own and not found[end][3]):
                    found[end] = (fact, source, company, own)
    return {end: (fact, source, company) for end, (fact, source, company, _) in found.items()}


def _spans(fact: dict, span: tuple[int, int]) -> bool:
    period = fact["period"]
    if period["start"] is None or fact["dimensions"]:
        return False
    days = (date.fromisoformat(period["end"]) - date.fromisoformat(period["start"])).days
    return span[0] <= days <= span[1]


def _documents(*sources: Source) -> list[dict[str, str]]:
    return [{"ticker": s.ticker, "cik": s.cik, "form": s.form, "accession": s.accession, "url": s.url} for s in sources]


def _quarter_task(company: str, before: _Figure, now: _Figure, split: str) -> dict[str, Any]:
    (before_source, before_fact), (now_source, now_fact) = before, now
    before_end, now_end = (date.fromisoformat(f["period"]["end"]) for f in (before_fact, now_fact))
    change = round((now_fact["value"] - before_fact["value"]) / before_fact["value"] * 100, 1)
    word = "an increase" if change > 0 else "a decrease" if change < 0 else "no change"
    question = (
        f"By what percentage did {company}'s total revenue for the three months ended {long_date(now_end)} change "
        f"from the three months ended {long_date(before_end)}, each as first reported in its own quarterly report?"
    )
    return {
        "task_id": f"{now_source.ticker}-{now_end.isoformat()}-quarter-change-revenue",
        "question": question,
        "expected_answer": f"{word} of {abs(change):.1f}%" if change else "no change (0.0%)",
        "ticker": now_source.ticker,
        "company": company,
        "documents": _documents(now_source, before_source),
        "url": now_source.url,
        "period_end": now_end.isoformat(),
        "kind": "quarter_change",
        "tier": TIERS["quarter_change"],
        "figure": "revenue_quarter_change",
        "split": split,
        "formula": "revenue / revenue_same_quarter_a_year_before - 1",
        "canonical_answer": {"value": change, "unit": "percent"},
        "facts": [before_fact, now_fact],
        "difficulty": {"documents": 2, "facts": 2, "operations": 2},  # a difference, a quotient
    }


def _growth_task(company: str, first: _Figure, last: _Figure, split: str) -> dict[str, Any]:
    (first_source, first_fact), (last_source, last_fact) = first, last
    first_end, last_end = (date.fromisoformat(f["period"]["end"]) for f in (first_fact, last_fact))
    rate = round(((last_fact["value"] / first_fact["value"]) ** (1 / YEARS) - 1) * 100, 1)
    question = (
        f"What was {company}'s compound annual growth rate of total revenue over the {_WORDS[YEARS]} fiscal years from "
        f"the year ended {long_date(first_end)} to the year ended {long_date(last_end)}?"
    )
    return {
        "task_id": f"{last_source.ticker}-{last_end.year}-growth-revenue-cagr-{YEARS}y",
        "question": question,
        "expected_answer": f"{rate:.1f}%",
        "ticker": last_source.ticker,
        "company": company,
        "documents": _documents(last_source, first_source),
        "url": last_source.url,
        "period_end": last_end.isoformat(),
        "kind": "growth",
        "tier": TIERS["growth"],
        "figure": "revenue_cagr",
        "split": split,
        "formula": f"(revenue / revenue_{YEARS}_years_before) ** (1 / {YEARS}) - 1",
        "canonical_answer": {"value": rate, "unit": "percent"},
        "facts": [first_fact, last_fact],
        "difficulty": {"documents": 2, "facts": 2, "operations": 3},  # a quotient, a root, a difference
    }
