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

import hashlib
from datetime import date
from typing import Any

from finsec.taskgen.build import TIERS, Built, Comparable, Source, long_date

__all__ = ["COMPARED", "comparison_tasks"]

_NEAR_DAYS = 183  # fiscal years ending this close are one period to compare
_PEERS = 5  # the 10-Ks each is compared with: every pair of up to six 10-Ks
COMPARED = {
    "gross_margin": "gross margin (gross profit as a percentage of total revenue)",
    "operating_margin": "operating margin (operating income as a percentage of total revenue)",
    "net_margin": "net profit margin (net income as a percentage of total revenue)",
    "revenue_growth": "growth in total revenue from the year before",
}


def comparison_tasks(filings: list[tuple[Source, Built, str]]) -> list[dict[str, Any]]:
    """The comparisons of 10-Ks of different companies in one split, each 10-K set against the next `_PEERS` in
    the order of their fiscal years' ends (ties in an order fixed by a digest), so a corpus of n 10-Ks gives at
    most n x `_PEERS` pairs, not n squared; each task carries its split."""
    by_split: dict[str, list[tuple[Source, Built]]] = {}
    for source, built, split in filings:
        if source.form == "10-K" and built.comparables:
            by_split.setdefault(split, []).append((source, built))
    pairs: list[tuple[tuple[Source, Built], tuple[Source, Built], str]] = []
    for split, annual in by_split.items():
        annual.sort(key=lambda row: (_year_end(row[1]), _digest(row[0])))
        for i, (a, built_a) in enumerate(annual):
            for b, built_b in annual[i + 1 : i + 1 + _PEERS]:
                if a.cik != b.cik:  # the pair as the tasks name it: the two in ticker order
                    one, other = sorted(((a, built_a), (b, built_b)), key=lambda row: _order(row[0]))
                    pairs.append((one, other, split))
    tasks = []
    for (a, built_a), (b, built_b), split in sorted(pairs, key=lambda p: (_order(p[0][0]), _order(p[1][0]))):
        for key, name in COMPARED.items():
            first, second = built_a.comparables.get(key), built_b.comparables.get(key)
            if first is None or second is None or abs((first.period_end - second.period_end).days) > _NEAR_DAYS:
                continue
            if first.value != second.value:
                tasks.append(_task(key, name, (a, first), (b, second), split))
    return tasks


def _year_end(built: Built) -> date:
    return min(comparable.period_end for comparable in built.comparables.values())


def _digest(source: Source) -> bytes:
    return hashlib.blake2b(f"{source.ticker}:{source.accession}".encode(), digest_size=8).digest()


def _order(source: Source) -> tuple[str, str]:
    return source.ticker, source.accession


def _task(key: str, name: str, a: tuple[Source, Comparable], b: tuple[Source, Comparable], split: str) -> dict:
    (source_a, first), (source_b, second) = a, b
    higher = first if first.value > second.value else second
    question = (
        f"Which had the higher {name}: {first.company} for its fiscal year ended {long_date(first.period_end)}, "
        f"or {second.company} for its fiscal year ended {long_date(second.period_end)}? Give each company's figure."
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
