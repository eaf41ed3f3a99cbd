"""The embedded default corpus: a deterministic folder in the sec.gov URL layout, and its questions.

It lets the server run with no network. `write_corpus` writes `files/company_tickers.json`,
`submissions/CIK##########.json`, the primary documents under `Archives/edgar/data/...`, and
`questions.json`, a question/answer set whose every answer is checked against the parsed text of its filing.

    python -m finsec.corpus.generate OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from finsec.corpus.documents import money, render
from finsec.corpus.issuers import CORPUS_VERSION, ISSUERS, Filing, Issuer, filings, previous_annual
from finsec.corpus.layout import write_layout
from finsec.text.html_to_text import html_to_text

__all__ = [
    "CORPUS_VERSION",
    "ISSUERS",
    "Filing",
    "Issuer",
    "filings",
    "questions",
    "write_corpus",
    "embedded_corpus_dir",
]


def _question(filing: Filing, question: str, expected: str, evidence: str) -> dict[str, str]:
    """`evidence` is the exact string the parsed filing must contain for the question to be answerable."""
    return {
        "question": question,
        "expected_answer": expected,
        "url": filing.url,
        "evidence": evidence,
        "ticker": filing.issuer.ticker,
        "form": filing.form,
    }


def _questions_for(filing: Filing) -> list[dict[str, str]]:
    who, f = filing.issuer, filing.facts
    name = f"{who.name} ({who.ticker})"
    if filing.form == "8-K":
        return [
            _question(
                filing,
                f"What fourth-quarter {filing.fiscal_year} revenues did {name} announce in its 8-K results release?",
                f"${money(f['FourthQuarterRevenues'])} thousand",
                money(f["FourthQuarterRevenues"]),
            )
        ]
    if filing.form == "10-Q":
        return [
            _question(
                filing,
                f"What were {name}'s total net revenues for the quarter ended {filing.period_end}?",
                f"${money(f['Revenues'])} thousand",
                money(f["Revenues"]),
            )
        ]
    year, out = filing.fiscal_year, []
    out.append(
        _question(
            filing,
            f"What were {name}'s total net revenues for fiscal year {year}?",
            f"${money(f['Revenues'])} thousand",
            money(f["Revenues"]),
        )
    )
    cash = f["NetCashProvidedByUsedInOperatingActivities"]
    out.append(
        _question(
            filing,
            f"How much net cash did {name} {'provide from' if cash >= 0 else 'use in'} operating activities in {year}?",
            f"${money(cash)} thousand",
            money(cash),
        )
    )
    loss = f["NetIncomeLoss"] < 0
    out.append(
        _question(
            filing,
            f"What was {name}'s net {'loss' if loss else 'income'} for fiscal {year}?",
            f"{'a net loss of ' if loss else ''}${money(f['NetIncomeLoss'])} thousand",
            money(f["NetIncomeLoss"]),
        )
    )
    out.append(
        _question(
            filing,
            f"How many full-time employees did {name} report at the end of {year}?",
            f"{f['Employees']:,}",
            f"{f['Employees']:,}",
        )
    )
    prior = previous_annual(filing)
    if prior:
        change = (f["Revenues"] - prior.facts["Revenues"]) / prior.facts["Revenues"] * 100
        out.append(
            _question(
                filing,
                f"By what percentage did {name}'s total net revenues change in fiscal {year} "
                f"compared with {prior.fiscal_year}?",
                f"{change:.1f}%",
                f"{abs(change):.1f}%",
            )
        )
    return out


def _reworded_questions_for(filing: Filing) -> list[dict[str, str]]:
    """Figures the filing states in other words than the question asks for them (finsec/retrieval/concepts.py):
    the headcount, and the top line that the statement splits into products and services and states as a total."""
    if filing.form == "8-K":
        return []
    who, f = filing.issuer, filing.facts
    name = f"{who.name} ({who.ticker})"
    period = f"fiscal year {filing.fiscal_year}" if filing.form == "10-K" else f"the quarter ended {filing.period_end}"
    out = [
        _question(
            filing,
            f"What were {name}'s net sales for {period}?",
            f"${money(f['Revenues'])} thousand",
            money(f["Revenues"]),
        )
    ]
    if filing.form == "10-K":
        out.append(
            _question(
                filing,
                f"What was {name}'s headcount at the end of {filing.fiscal_year}?",
                f"{f['Employees']:,}",
                f"{f['Employees']:,}",
            )
        )
    return out


def questions() -> list[dict[str, str]]:
    """The question set, annual-report questions first; the reworded ones last, so the first tasks of a run (the
    rollout tests play those) stay the same."""
    order = {"10-K": 0, "10-Q": 1, "8-K": 2}
    ordered = sorted(filings(), key=lambda f: order[f.form])
    return [q for filing in ordered for q in _questions_for(filing)] + [
        q for filing in ordered for q in _reworded_questions_for(filing)
    ]


def _check_answerable(root: Path, asked: list[dict[str, str]]) -> None:
    texts: dict[str, str] = {}
    for q in asked:
        path = root / q["url"].removeprefix("https://www.sec.gov/")
        text = texts.setdefault(q["url"], html_to_text(path.read_bytes()))
        if q["evidence"] not in text:
            raise AssertionError(f"corpus bug: {q['evidence']!r} is not in the text of {q['url']} ({q['question']})")


def write_corpus(out: Path) -> Path:
    """Write the corpus into `out` (replaced atomically if it exists) and return it."""
    asked = questions()

    def with_questions(staging: Path) -> None:
        _check_answerable(staging, asked)
        (staging / "questions.json").write_text(json.dumps(asked, indent=1))

    return write_layout(Path(out), ISSUERS, filings(), render, with_questions, done="questions.json")


def embedded_corpus_dir() -> Path:
    """The embedded corpus in the user's cache, written on first use."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    target = cache / "finsec-serve" / f"embedded-corpus-v{CORPUS_VERSION}"
    if not (target / "questions.json").is_file():
        write_corpus(target)
    return target


if __name__ == "__main__":
    print(write_corpus(Path(sys.argv[1])))
