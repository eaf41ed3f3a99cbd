"""The scripted policy's answer: the figure of the retrieved passages that the question names, for the period it
asks about, written with its unit ("$979,207 thousand", "an increase of 206.0%", "19,267").

Candidates are table rows (the cell of the asked period) and prose clauses; each is scored by how many of the
question's keywords its label has, less a little for the words it has that the question lacks, so "net income"
picks "Net income (loss)" over "Operating income (loss)". A candidate for another period is dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass

from finsec_client.policies.passages import Clause, Reading, read_reply
from finsec_client.policies.question import Question, stems

_YEAR_OR_DATE = re.compile(r"\b(\d{4})(?:-\d{2}-\d{2})?\b")
_NEGATIVE_WORDS = frozenset(stems("loss losses use used decrease decline outflow deficit"))
_DOWN = ("decrease", "decline", "fell", "down", "lower")
_UP = ("increase", "grew", "growth", "rose", "up", "higher")
ROW_PREFERENCE = 0.5  # a table row states its period and unit; prose sometimes only implies them
EXTRA_WORD_COST = 0.25
QUARTER_LAYOUT = 0.25


@dataclass(frozen=True)
class Candidate:
    score: float
    rank: int
    answer: str


def answer(question: Question, reply: str) -> str | None:
    """The answer to `question` from the text of a retrieve_information reply, or None if it holds none."""
    reading = read_reply(reply)
    if question.kind == "percent_change":
        found = _percent_candidates(question, reading) or _computed_change(question, reading)
    elif question.kind == "count":
        found = _count_candidates(question, reading)
    else:
        found = _row_candidates(question, reading) + _money_candidates(question, reading)
    if not found:
        return None
    return max(found, key=lambda c: (c.score, -c.rank)).answer


def _label_score(question: Question, label_stems: set[str]) -> float:
    hits = len(question.keywords & label_stems)
    return hits - EXTRA_WORD_COST * len(label_stems - question.keywords) if hits else 0.0


def _period_index(question: Question, periods: tuple[str, ...], n_values: int) -> int | None:
    """Which cell holds the asked period; None when the row holds another period only. A quarter's header
    names each date twice (three months, then the year to date): the first is the quarter."""
    if question.year is None or not periods or len(periods) != n_values:
        return 0 if n_values == 1 or question.year is None else None
    if question.date:
        exact = [i for i, period in enumerate(periods) if period == question.date]
        if exact:
            return exact[0]
        if any(len(p) == 10 for p in periods):
            return None  # dated columns, none the asked one
    for i, period in enumerate(periods):
        if period[:4] == str(question.year):
            return i
    return None


def _row_candidates(question: Question, reading: Reading) -> list[Candidate]:
    per_share = _per_share(question)
    out = []
    for row in reading.rows:
        # "Diluted" under "Earnings per share:": the heading names the figure too
        label = f"{row.heading} {row.label}" if len(row.label.split()) == 1 else row.label
        score = _label_score(question, stems(label))
        index = _period_index(question, row.periods, len(row.values))
        if score <= 0 or index is None:
            continue
        cell = row.values[index]
        if per_share != ("." in cell and _number(cell) < 10_000):
            continue  # a per-share figure has cents; a total in a table does not
        unit = None if per_share else row.unit
        # A quarter's own statement names its date twice (the three months, the year to date); a cash-flow
        # statement of a 10-Q names it once, for the year to date.
        quarterly = QUARTER_LAYOUT if question.date and row.periods.count(question.date) >= 2 else 0.0
        out.append(Candidate(score + ROW_PREFERENCE + quarterly, row.rank, _amount(question, cell, unit)))
    return out


_PER_SHARE = frozenset(stems("per share"))


def _per_share(question: Question) -> bool:
    return _PER_SHARE <= question.keywords


def _clause_period_fits(question: Question, clause: Clause) -> float | None:
    """+1 when the clause (or, failing that, its sentence) names the asked year, None when it names only others;
    a sentence that names no year is taken to be about the years its passage names."""
    if question.year is None:
        return 0.0
    for text in (clause.before + clause.after, clause.sentence):
        years = {int(y) for y in _YEAR_OR_DATE.findall(text)}
        if years:
            return 1.0 if question.year in years else None
    return 0.0 if not clause.passage_years or question.year in clause.passage_years else None


def _money_candidates(question: Question, reading: Reading) -> list[Candidate]:
    out = []
    if _per_share(question):
        return []  # prose rounds per-share figures and mixes them with totals: the table row says it
    for clause in reading.money:
        if any(word in clause.before.lower().split()[-4:] for word in (*_UP, *_DOWN, "increased", "decreased",
                                                                       "by")):
            continue  # "net sales increased $7.7 billion": a change, not the amount
        score = _label_score(question, stems(clause.before))
        fits = _clause_period_fits(question, clause)
        if score <= 0 or fits is None:
            continue
        figure = clause.figure if re.search(r"thousand|million|billion", clause.figure, re.I) else None
        if figure is None:
            continue  # a bare dollar figure in prose: its scale is unknown
        out.append(Candidate(score + fits, clause.rank, figure))
    return out


def _count_candidates(question: Question, reading: Reading) -> list[Candidate]:
    out = []
    for clause in reading.counts:
        # "approximately 19,267 full-time employees": the counted thing follows the number
        after = " ".join(clause.after.split()[:4])
        score = _label_score(question, stems(after)) + 0.5 * len(question.keywords & stems(clause.before))
        fits = _clause_period_fits(question, clause)
        if score <= 0 or fits is None:
            continue
        out.append(Candidate(score + fits, clause.rank, clause.figure))
    return out


def _percent_candidates(question: Question, reading: Reading) -> list[Candidate]:
    out = []
    for clause in reading.percents:
        before = clause.before.lower()
        direction = "down" if any(w in before for w in _DOWN) else "up" if any(w in before for w in _UP) else None
        if direction is None and not clause.figure.startswith("-"):
            continue  # a share or a rate, not a change
        score = _label_score(question, stems(clause.sentence)) + 1.0
        fits = _clause_period_fits(question, Clause("", "", "", clause.sentence, clause.rank,
                                                    clause.passage_years))
        if fits is None:
            continue
        value = clause.figure.lstrip("-")
        text = {"down": f"a decrease of {value}", "up": f"an increase of {value}"}.get(direction, clause.figure)
        out.append(Candidate(score + fits, clause.rank, text))
    return out


def _computed_change(question: Question, reading: Reading) -> list[Candidate]:
    """No stated change: compute it from a row that holds both periods, as an analyst would."""
    if len(question.years) < 2:
        return []
    current, prior = str(question.years[0]), str(question.years[1])
    out = []
    for row in reading.rows:
        score = _label_score(question, stems(row.label))
        if score <= 0 or len(row.periods) != len(row.values):
            continue
        by_year = {p[:4]: v for p, v in zip(row.periods, row.values)}
        if current in by_year and prior in by_year:
            now, then = _number(by_year[current]), _number(by_year[prior])
            if then:
                change = (now - then) / abs(then) * 100
                out.append(Candidate(score, row.rank, f"{change:.1f}%"))
    return out


def _number(cell: str) -> float:
    digits = re.sub(r"[^\d.]", "", cell)
    value = float(digits) if digits else 0.0
    return -value if "(" in cell or "-" in cell else value


def _amount(question: Question, cell: str, unit: str | None) -> str:
    """A cell as an answer: "$(303,791)" in a table in thousands is "$303,791 thousand" for "net loss" (the question
    says which way) and "-$303,791 thousand" otherwise."""
    negative = "(" in cell or "-" in cell
    digits = re.sub(r"[^\d,.]", "", cell)
    money = "$" in cell or unit is not None
    text = (f"${digits}" if money else digits) + (f" {unit}" if unit else "")
    if negative and not (question.keywords & _NEGATIVE_WORDS):
        return "-" + text
    return text
