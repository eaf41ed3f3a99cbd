"""Tasks across periods that no one filing holds: a company's compound annual growth in total revenue over three
fiscal years, from the 10-K of the last year and the 10-K that states the first.

A 10-K states its year and the year before, so three years of growth need two filings, as an analyst would read
them. Each year's revenue is a fact a kept task of its filing rests on (read the same tagged and printed): the
`line_item` revenue task of its own 10-K or, failing one, the prior-year side of a later 10-K's `change` task.
The figures of the first and the last year come from different filings, and all of a company's filings are in its
one split, so the task's split is theirs.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from finsec.taskgen.build import TIERS, Built, Source, long_date

__all__ = ["YEARS", "growth_tasks"]

YEARS = 3  # the span of a growth rate, in fiscal years
_YEAR_DAYS = (350, 380)  # a fiscal year's length, as build.py reads one
_DRIFT_DAYS = 7  # a 52/53-week year ends within a week of the date a year on
_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}


def growth_tasks(filings: list[tuple[Source, Built, str]]) -> list[dict[str, Any]]:
    """Every three-year revenue growth rate a company's 10-Ks allow; each task carries its company's split."""
    by_company: dict[str, list[tuple[Source, Built, str]]] = {}
    for source, built, split in filings:
        if source.form == "10-K":
            by_company.setdefault(source.cik, []).append((source, built, split))
    tasks = []
    for rows in by_company.values():
        revenue = _revenue_by_year_end(rows)  # year end -> (fact, source, company name)
        for end, (last, last_source, company) in sorted(revenue.items()):
            first_end = next((e for e in revenue if abs((end - e).days - 365 * YEARS) <= _DRIFT_DAYS), None)
            if first_end is None:
                continue
            first, first_source, _ = revenue[first_end]
            if first_source.accession == last_source.accession or first["value"] <= 0 or last["value"] <= 0:
                continue
            split = next(split for source, _, split in rows if source.accession == last_source.accession)
            tasks.append(_task(company, (first_source, first), (last_source, last), split))
    return tasks


def _revenue_by_year_end(rows: list[tuple[Source, Built, str]]) -> dict[date, tuple[dict, Source, str]]:
    """Each fiscal year's company-wide revenue fact a kept task rests on, from the filing whose own year it is if
    one was read, else from the next year's comparative column."""
    found: dict[date, tuple[dict, Source, str, bool]] = {}
    for source, built, _ in sorted(rows, key=lambda row: row[0].accession):
        for task in built.tasks:
            if task.get("figure") != "revenue" or task["kind"] not in ("line_item", "change"):
                continue
            company = f"{task['company']} ({source.ticker})"
            for n, fact in enumerate(task["facts"]):
                own = task["kind"] == "line_item"
                if not _a_year(fact) or (task["kind"] == "change" and n != 0):  # a change's first fact is the prior
                    continue
                end = date.fromisoformat(fact["period"]["end"])
                if end not in found or (own and not found[end][3]):
                    found[end] = (fact, source, company, own)
    return {end: (fact, source, company) for end, (fact, source, company, _) in found.items()}


def _a_year(fact: dict) -> bool:
    period = fact["period"]
    if period["start"] is None or fact["dimensions"]:
        return False
    days = (date.fromisoformat(period["end"]) - date.fromisoformat(period["start"])).days
    return _YEAR_DAYS[0] <= days <= _YEAR_DAYS[1]


def _task(company: str, first: tuple[Source, dict], last: tuple[Source, dict], split: str) -> dict[str, Any]:
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
        "documents": [
            {"ticker": s.ticker, "cik": s.cik, "form": s.form, "accession": s.accession, "url": s.url}
            for s in (last_source, first_source)
        ],
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
