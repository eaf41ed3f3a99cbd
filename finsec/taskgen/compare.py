"""Tasks across companies: which of two named companies had the higher margin or revenue growth over its fiscal
year, with both figures, from two companies' 10-Ks.

Each side is a percentage a kept task of its filing computed from facts that read the same tagged and printed
(`Built.comparables`: the gross, operating and net margins, and revenue growth from the year before). Two
companies are compared only within one split (a held-out company never meets a training one) and when their
fiscal years end within half a year of each other (NVIDIA's fiscal 2025, ended January 26, 2025, beside a
calendar 2024); the question names each company's own year. The answer names each company with its figure; the grader binds each
figure to its company, so the higher one follows from them.
"""

from __future__ import annotations

from datetime import date
from itertools import combinations
from typing import Any

from finsec.taskgen.build import TIERS, Built, Comparable, Source

__all__ = ["COMPARED", "comparison_tasks"]

_NEAR_DAYS = 183  # fiscal years ending this close are one period to compare
COMPARED = {
    "gross_margin": "gross margin (gross profit as a percentage of total revenue)",
    "operating_margin": "operating margin (operating income as a percentage of total revenue)",
    "net_margin": "net profit margin (net income as a percentage of total revenue)",
    "revenue_growth": "growth in total revenue from the year before",
}


def comparison_tasks(filings: list[tuple[Source, Built, str]]) -> list[dict[str, Any]]:
    """Every comparison two 10-Ks of different companies in one split allow; each task carries its split."""
    annual = sorted(
        ((source, built, split) for source, built, split in filings if source.form == "10-K" and built.comparables),
        key=lambda row: (row[0].ticker, row[0].accession),
    )
    tasks = []
    for (a, built_a, split), (b, built_b, split_b) in combinations(annual, 2):
        if a.cik == b.cik or split != split_b:
            continue
        for key, name in COMPARED.items():
            first, second = built_a.comparables.get(key), built_b.comparables.get(key)
            if first is None or second is None or abs((first.period_end - second.period_end).days) > _NEAR_DAYS:
                continue
            if first.value != second.value:
                tasks.append(_task(key, name, (a, first), (b, second), split))
    return tasks


def _task(key: str, name: str, a: tuple[Source, Comparable], b: tuple[Source, Comparable], split: str) -> dict:
    (source_a, first), (source_b, second) = a, b
    higher = first if first.value > second.value else second
    question = (
        f"Which had the higher {name}: {first.company} for its fiscal year ended {_long_date(first.period_end)}, "
        f"or {second.company} for its fiscal year ended {_long_date(second.period_end)}? Give each company's figure."
    )
    return {
        "task_id": f"{source_a.ticker}-{source_b.ticker}-{first.period_end.year}-comparison-{key.replace('_', '-')}",
        "question": question,
        "expected_answer": f"{first.company}: {first.answer}; {second.company}: {second.answer}",
        "ticker": f"{source_a.ticker}+{source_b.ticker}",
        "company": f"{first.company} and {second.company}",
        "documents": [
            {"ticker": s.ticker, "cik": s.cik, "form": s.form, "accession": s.accession, "url": s.url}
            for s in (source_a, source_b)
        ],
        "url": source_a.url,
        "period_end": max(first.period_end, second.period_end).isoformat(),
        "kind": "comparison",
        "tier": TIERS["comparison"],
        "figure": key,
        "split": split,
        "canonical_answer": {
            "value": {first.company: first.value, second.company: second.value},
            "unit": "percent",
            "higher": higher.company,
        },
        "facts": [*first.facts, *second.facts],
        "difficulty": {
            "documents": 2,
            "facts": len(first.facts) + len(second.facts),
            "operations": first.operations + second.operations + 1,  # and the comparison
        },
    }


def _long_date(day: date) -> str:
    return f"{day:%B} {day.day}, {day.year}"
