"""The scripted policy's answer: the figure of the retrieved passages that the question names, for the period it
asks about, written with its unit ("$979,207 thousand", "an increase of 206.0%", "19,267").

Candidates are table rows (the cell of the asked period) and prose clauses; each is scored by how many of the
question's keywords its label has, less a little for the words it has that the question lacks, so "net income"
picks "Net income (loss)" over "Operating income (loss)". A candidate for another period is dropped."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from finsec_client.policies.passages import Clause, Reading, Row, read_reply
from finsec_client.policies.question import Question, stems, word_stems
from finsec_client.policies.statements import Statement

__all__ = [
    "abbreviations",
    "answer",
    "Candidate",
    "canon",
    "COMPLETE_LABEL",
    "EXTRA_WORD_COST",
    "figure",
    "figure_words",
    "printed_name",
    "QUARTER_LAYOUT",
    "ROW_PREFERENCE",
    "spelled_out",
    "STATEMENT_PREFERENCE",
    "SUB_ITEM_COST",
    "tables_to_read",
]

_YEAR_OR_DATE = re.compile(r"\b(\d{4})(?:-\d{2}-\d{2})?\b")
_NEGATIVE_WORDS = frozenset(stems("loss losses use used decrease decline outflow deficit"))
_DOWN = ("decrease", "decline", "fell", "down", "lower")
_UP = ("increase", "grew", "growth", "rose", "up", "higher")
ROW_PREFERENCE = 0.5  # a table row states its period and unit; prose sometimes only implies them
STATEMENT_PREFERENCE = 1.0  # a company-wide figure is the primary statement's row before any note's or prose's
COMPLETE_LABEL = 0.5
SUB_ITEM_COST = 0.1  # a row its group label must name ("Products" under "Cost of sales:") is a part, not the total
EXTRA_WORD_COST = 0.25
QUARTER_LAYOUT = 0.25


@dataclass(frozen=True)
class Candidate:
    score: float
    rank: int
    answer: str
    value: float | None = None  # the figure as a number in `unit`, for arithmetic (ratios)
    unit: str | None = None


# Words an analyst takes as the same figure's names: "net sales" is revenue, "stockholders" are shareholders.
_SAME = {
    "sal": "revenu",
    "stockholder": "shareholder",
    "earning": "income",
    "expenditur": "purchas",
    "payment": "purchas",
    "acquisition": "purchas",
    "repurchas": "repurchas",
    "plant": "property",
}
# A figure's other printed names, added to the question's words when it names the figure so.
_ALSO = {
    "capital expenditur": "purchases property equipment",
    "spend repurchas": "repurchases common stock",
    "pay dividend": "payments dividends",
    "cash paid": "cash paid",
    "depreciation amortization": "depreciation amortization",
}
# A figure whose cell is printed in parentheses as an outflow but asked as an amount spent or paid.
_SPENT = re.compile(r"\b(?:spend|spent|pay|paid|expense|expenditures?|costs?)\b", re.I)
_BOTH_WAYS = re.compile(r"\((?:used in|loss|expense|accumulated deficit|deficit)\)|\bincome \(expense\)", re.I)


# "its Europe segment", "(by geography)": how the figure is broken down, not what it is
_BREAKDOWN = frozenset(stems("segment geography generate"))


def canon(words: set[str]) -> set[str]:
    return {_SAME.get(w, w) for w in words}


def figure_words(question: Question) -> set[str]:
    """The question's words for the figure, with the figure's other names where it has them."""
    words = set(question.keywords) - _BREAKDOWN
    for names, more in _ALSO.items():
        if all(stems(n) <= words for n in names.split()):
            words |= stems(more)
    return canon(words)


def answer(question: Question, reply: str, statements: Sequence[Statement] = ()) -> str | None:
    """The answer to `question` from the text of a retrieve_information reply and the rows of the filing's
    primary statements (statements.py), or None if they hold none."""
    reading = _reading(question, reply, statements)
    if question.kind == "change":
        found = _change_candidates(question, reading)
    elif question.kind == "date":
        found = _date_candidates(question, reply)
    elif question.kind == "shares":
        found = _row_candidates(question, reading) + _count_candidates(question, reading)
    elif question.kind == "percent_change":
        found = _percent_candidates(question, reading) or _computed_change(question, reading)
    elif question.kind == "count":
        found = _count_candidates(question, reading)
    else:
        found = _row_candidates(question, reading) + _money_candidates(question, reading)
    if not found:
        return None
    return max(found, key=lambda c: (c.score, -c.rank)).answer


def figure(question: Question, reply: str, statements: Sequence[Statement] = ()) -> Candidate | None:
    """The best row or clause for an amount the question names, with its value: a ratio's numerator, say."""
    reading = _reading(question, reply, statements)
    found = [
        c for c in _row_candidates(question, reading) + _money_candidates(question, reading) if c.value is not None
    ]
    return max(found, key=lambda c: (c.score, -c.rank)) if found else None


def _reading(question: Question, reply: str, statements: Sequence[Statement]) -> Reading:
    """The reply's rows and prose, with the statements' rows first. A reply row inside a statement read is that
    statement's row, read there with its title, group and columns (or left out: an equity statement's). A label
    that is an abbreviation also reads as what it stands for."""
    reading = read_reply(reply)
    rows = [row for statement in statements for row in statement.rows if _statement_fits(question, row)]
    rows += [row for row in reading.rows if not any(s.holds(row.at) for s in statements)]
    names = abbreviations(question.text + "\n" + reply)
    reading.rows = [replace(row, label=spelled_out(row.label, names)) for row in rows]
    return reading


_DEFINED = re.compile(r"([A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,4})\s*\(\s*[“\"]?([A-Z]{2,6})[”\"]?\s*\)")
_CAPITALIZED = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+){1,4}\b")
_ABBREVIATION = re.compile(r"\b[A-Z]{2,6}\b|\b(?:[A-Z]\.){2,}")  # "AWS", "U.S."


def abbreviations(text: str) -> dict[str, str]:
    """Abbreviations and what they stand for: those the text defines ("Asia-Pacific (APAC)") and the initials of
    the capitalized names it uses ("Amazon Web Services" for AWS)."""
    out = {m.group(2): m.group(1) for m in _DEFINED.finditer(text)}
    for m in _CAPITALIZED.finditer(text):
        out.setdefault("".join(word[0] for word in m.group(0).split()), m.group(0))
    return out


def spelled_out(label: str, names: dict[str, str]) -> str:
    """ "AWS" as "AWS Amazon Web Services"."""

    def spell(m: re.Match) -> str:
        letters = m.group(0).replace(".", "")
        return f"{m.group(0)} {names[letters]}" if letters in names else m.group(0)

    return _ABBREVIATION.sub(spell, label)


def _statement_fits(question: Question, row: Row) -> bool:
    """A balance is asked at a date, a flow over a period: the balance sheet answers the one, the statements of
    operations and cash flows the other."""
    if row.statement == "note":
        return True  # a note's table read whole (statements.read_table)
    if row.statement not in _PRIMARY:
        return False
    if question.span is None:
        return True
    return (row.statement == "balance") == (question.span == "instant")


def _statement_bonus(question: Question, row: Row) -> float:
    """A segment's or region's figure is a note's; any other is first the statement's."""
    return STATEMENT_PREFERENCE if row.statement in _PRIMARY and not question.keywords & _BREAKDOWN else 0.0


_PRIMARY = ("balance", "income", "cash_flow")


_PLAIN = frozenset(stems("total net"))


def printed_name(question: Question, statements: Sequence[Statement]) -> str | None:
    """The statement of operations' own name for the figure a breakdown question asks ("revenue" is "Total net
    sales" in one filing, "Revenues" in another), without "Total": the words its segment tables use. A label
    qualifies when every word of it the question lacks is "total" or "net"."""
    if not question.keywords & _BREAKDOWN:
        return None
    words = figure_words(question)
    best: tuple[int, bool, int, str] | None = None
    for row in (row for s in statements if s.kind == "income" for row in s.rows):
        label = canon(stems(row.label))
        hits = len(label & words)
        if hits and not (label - words - _PLAIN):
            key = (hits, row.label.lower().startswith("total"), -len(label), row.label)
            best = max(best, key) if best else key
    return re.sub(r"^total\s+", "", best[3], flags=re.I) if best else None


def tables_to_read(question: Question, reply: str, statements: Sequence[Statement] = (), limit: int = 3) -> list[int]:
    """Where the reply's rows that best name the figure start, outside the statements read: their tables are
    worth reading whole (a passage cut from a table may show neither its unit nor its columns nor its group)."""
    reading = read_reply(reply)
    scored = sorted(
        (
            (_row_score(question, row), -row.rank, row.at)
            for row in reading.rows
            if row.at >= 0 and not any(s.holds(row.at) for s in statements)
        ),
        reverse=True,
    )
    out: list[int] = []
    for score, _, at in scored:
        if score > 0 and at not in out:
            out.append(at)
    return out[:limit]


def _label_score(question: Question, label_stems: set[str]) -> float:
    keywords = figure_words(question)
    label_stems = canon(label_stems)
    hits = len(keywords & label_stems)
    if not hits:
        return 0.0
    score = hits - EXTRA_WORD_COST * len(label_stems - keywords)
    # a label naming every word of the figure is that figure, however long its qualification: "Depreciation and
    # amortization of property and equipment and capitalized content costs, operating lease assets, and other"
    return max(score, COMPLETE_LABEL * hits) if keywords <= label_stems else score


def _period_index(question: Question, row: Row, date: str | None = None) -> int | None:
    """Which cell holds the asked period (`date`, else the question's); None when the row holds other periods
    only. A quarter's statement names each date twice (three months, then the year to date): a header that says
    so picks the column, else the first is the quarter and the last the year to date."""
    periods, n_values = row.periods, len(row.values)
    date = date or question.date
    year = int(date[:4]) if date else question.year
    if year is None or not periods or len(periods) != n_values:
        return 0 if n_values == 1 or year is None else None
    columns: Sequence[int] = range(n_values)
    if row.spans and question.span in row.spans and question.span != "instant":
        columns = [i for i in columns if row.spans[i] == question.span]
    elif row.spans and question.span in ("quarter", "six_months", "nine_months", "year"):
        return None  # the table's columns are other spans (a cash-flow statement's year to date)
    if date:
        exact = [i for i in columns if periods[i] == date]
        if exact:
            year_to_date = question.span in ("six_months", "nine_months") and not row.spans
            return exact[-1] if year_to_date else exact[0]
        if any(len(p) == 10 for p in periods):
            return None  # dated columns, none the asked one
    for i in columns:
        if periods[i][:4] == str(year):
            return i
    return None


def _row_candidates(question: Question, reading: Reading) -> list[Candidate]:
    per_share = _per_share(question)
    out = []
    for row in reading.rows:
        score = _row_score(question, row)
        index = _period_index(question, row)
        if score <= 0 or index is None:
            continue
        cell = row.values[index]
        if per_share != ("." in cell and _number(cell) < 10_000):
            continue  # a per-share figure has cents; a total in a table does not
        unit = None if per_share else row.unit
        # A quarter's own statement names its date twice (the three months, the year to date); a cash-flow
        # statement of a 10-Q names it once, for the year to date.
        quarterly = (
            QUARTER_LAYOUT
            if question.date and question.span == "quarter" and row.periods.count(question.date) >= 2
            else 0.0
        )
        if question.kind == "shares":
            if question.span == "instant":
                continue  # shares outstanding on a date: the cover page's sentence says it, in full
            scale = row.share_unit or reading.share_unit or row.unit
            text = f"{_digits(cell)} {scale} shares" if scale else f"{_digits(cell)} shares"
            out.append(Candidate(score + ROW_PREFERENCE + _statement_bonus(question, row), row.rank, text))
            continue
        out.append(
            Candidate(
                score + ROW_PREFERENCE + quarterly + _statement_bonus(question, row),
                row.rank,
                _amount(question, cell, unit),
                _signed(question, cell),
                unit,
            )
        )
    return out


def _row_score(question: Question, row: Row) -> float:
    if question.excluded & word_stems(f"{row.group} {row.label}"):
        return 0.0  # the question leaves out what this row names: "excluding the current portion"
    # "Diluted" under "Earnings per share:", "Net sales" under "Americas:": the heading names the figure too
    alone = _label_score(question, stems(row.label))
    best = alone
    if row.group:
        best = max(best, _label_score(question, stems(f"{row.group} {row.label}")) - SUB_ITEM_COST)
    if not row.statement and (len(row.label.split()) == 1 or row.heading.endswith(":")):
        best = max(best, _label_score(question, stems(f"{row.heading} {row.label}")))
    return best


def _change_candidates(question: Question, reading: Reading) -> list[Candidate]:
    """A change from one period to another: the row that holds both, the later less the earlier."""
    if len(question.dates) < 2:
        return []
    then_date, now_date = question.dates[0], question.dates[-1]
    per_share = _per_share(question)
    out = []
    for row in reading.rows:
        score = _row_score(question, row)
        now, then = _period_index(question, row, now_date), _period_index(question, row, then_date)
        if score <= 0 or now is None or then is None or now == then:
            continue
        cells = row.values[now], row.values[then]
        if per_share != ("." in cells[0] and _number(cells[0]) < 10_000):
            continue
        delta = _number(cells[0]) - _number(cells[1])
        places = 2 if per_share else 0
        unit = "" if per_share else f" {row.unit}" if row.unit else ""
        word = "an increase" if delta > 0 else "a decrease"
        text = f"{word} of ${abs(delta):,.{places}f}{unit}" if delta else "no change (0)"
        quarterly = QUARTER_LAYOUT if question.span == "quarter" and row.periods.count(now_date) >= 2 else 0.0
        out.append(Candidate(score + quarterly + _statement_bonus(question, row), row.rank, text, delta, row.unit))
    return out


_LONG_DATE = re.compile(
    r"\b(?:fiscal year|quarterly period|period|year|quarter) ended:?\s+"
    r"([A-Z][a-z]{2,8})\.?\s+(\d{1,2}),?\s+((?:19|20)\d{2})"
)


def _date_candidates(question: Question, reply: str) -> list[Candidate]:
    """The end of the period a filing covers, as its cover page states it: "For the fiscal year ended ..."."""
    out = []
    for rank, match in enumerate(_LONG_DATE.finditer(reply)):
        month, day, year = match.groups()
        if question.year is not None and abs(int(year) - question.year) > 1:
            continue
        out.append(Candidate(1.0, rank, f"{month} {int(day)}, {year}"))
    return out


_PER_SHARE = frozenset(stems("per share"))


def _per_share(question: Question) -> bool:
    return question.keywords >= _PER_SHARE


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
        if any(word in clause.before.lower().split()[-4:] for word in (*_UP, *_DOWN, "increased", "decreased", "by")):
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
        if question.kind == "shares":
            shares = _shares(question, clause)
            if shares is None:
                continue
            out.append(Candidate(score + fits, clause.rank, shares))
            continue
        out.append(Candidate(score + fits, clause.rank, clause.figure))
    return out


_CLASS = re.compile(r"\bclass ([a-z])\b", re.I)
_SCALED_SHARES = re.compile(r"^\s*(thousand|million|billion)?\s*shares\b", re.I)


def _shares(question: Question, clause: Clause) -> str | None:
    """ "5,833 million shares of Alphabet's Class A stock outstanding" as "5,833 million shares", when the class
    is the one asked about (or the question names none)."""
    scaled = _SCALED_SHARES.match(clause.after)
    if not scaled:
        return None
    asked, stated = _CLASS.search(question.text), _CLASS.search(clause.after)
    if asked and (not stated or stated.group(1).lower() != asked.group(1).lower()):
        return None
    return f"{clause.figure} {scaled.group(1).lower()} shares" if scaled.group(1) else f"{clause.figure} shares"


def _percent_candidates(question: Question, reading: Reading) -> list[Candidate]:
    out = []
    for clause in reading.percents:
        before = clause.before.lower()
        direction = "down" if any(w in before for w in _DOWN) else "up" if any(w in before for w in _UP) else None
        if direction is None and not clause.figure.startswith("-"):
            continue  # a share or a rate, not a change
        score = _label_score(question, stems(clause.sentence)) + 1.0
        fits = _clause_period_fits(question, Clause("", "", "", clause.sentence, clause.rank, clause.passage_years))
        if fits is None:
            continue
        value = clause.figure.lstrip("-")
        text = (
            {"down": f"a decrease of {value}", "up": f"an increase of {value}"}[direction]
            if direction
            else clause.figure
        )
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
        by_year = {p[:4]: v for p, v in zip(row.periods, row.values, strict=False)}
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


def _digits(cell: str) -> str:
    return re.sub(r"[^\d,.]", "", cell)


def _signed(question: Question, cell: str) -> float:
    """The cell's value with the sign the answer gives it (see _amount)."""
    value = _number(cell)
    return abs(value) if value < 0 and _asked_as_outflow(question) else value


def _asked_as_outflow(question: Question) -> bool:
    """ "How much did X spend on capital expenditures" asks an outflow's size; "net cash provided by (used in)
    investing activities" and "retained earnings (accumulated deficit)" ask a figure that may go either way."""
    text = question.text
    if _BOTH_WAYS.search(text):
        return False
    return bool(_SPENT.search(text) or (question.keywords & _NEGATIVE_WORDS))


def _amount(question: Question, cell: str, unit: str | None) -> str:
    """A cell as an answer: "$(303,791)" in a table in thousands is "$303,791 thousand" for "net loss" or "how
    much did X spend" (the question says which way) and "-$303,791 thousand" otherwise."""
    negative = "(" in cell or "-" in cell
    digits = _digits(cell)
    money = "$" in cell or unit is not None
    text = (f"${digits}" if money else digits) + (f" {unit}" if unit else "")
    if negative and not _asked_as_outflow(question):
        return "-" + text
    return text
