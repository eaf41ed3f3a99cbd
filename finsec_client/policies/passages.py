"""The reply of retrieve_information read as an analyst reads it: table rows (label, one value per period, the
table's unit) and prose clauses (the words before a figure, the figure, the words after it).

The embedded backend's reply is a list of passages, each `[<key> characters a-b]`, an optional context line in
parentheses (`(heading / in thousands / 2024 | 2023)`), then the text. Any other text is read as prose."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace

__all__ = [
    "Clause",
    "column_heading",
    "MONTHS",
    "period_of",
    "periods_of",
    "read_reply",
    "Reading",
    "Row",
    "SCALES",
    "SPAN_WORDS",
]

_PASSAGE_HEAD = re.compile(r"^\[[^\]\n]* characters \d+-\d+\]$", re.M)
_PASSAGE_START = re.compile(r" characters (\d+)-")
_UNIT = re.compile(r"\bin (thousands|millions|billions)\b", re.I)
# a caption's exception for share counts: "except number of shares, which are reflected in thousands"
_SHARE_UNIT = re.compile(r"\bshares?\b[^()]{0,40}?\bin (thousands|millions|billions)\b", re.I)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")
_PERIOD_CELL = re.compile(r"^(?:\d{4}|\d{4}-\d{2}-\d{2})$")
# A column header as real filings print it: "September 28, 2024", "Jul 27, 2025", "December 31, 2024".
_DATED_CELL = re.compile(r"^([A-Z][a-z]{2,8})\.?\s+(\d{1,2}),?\s+((?:19|20)\d{2})$")
MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        1,
    )
    for name in names
}
_AMOUNT = re.compile(r"(-)?\$?\s?\(?\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s?\)?")
_MONEY = re.compile(r"(-)?\$\s?(\()?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\)?(?:\s(thousand|million|billion)s?\b)?", re.I)
_PERCENT = re.compile(r"(-)?(\d+(?:\.\d+)?)\s?%")
_COUNT = re.compile(r"(?<![\d$.,-])(\d{1,3}(?:,\d{3})+|\d+)(?![\d,]*%)(?!-\d)")
_SPAN_CELL = re.compile(r"^(three|six|nine|twelve) months ended\b.*|^(?:fiscal )?years? ended\b.*", re.I)
SPAN_WORDS = {"three": "quarter", "six": "six_months", "nine": "nine_months", "twelve": "year"}
_CLAUSE_SPLIT = re.compile(r"(?<!\d),\s|;\s|\s(?:and|while|whereas)\s|(?<=[a-z0-9)%])\.\s(?=[A-Z])")
SCALES = {"thousands": "thousand", "millions": "million", "billions": "billion"}


@dataclass(frozen=True)
class Row:
    """A table row: `values[i]` is the cell for `periods[i]` when the header names as many periods."""

    heading: str
    unit: str | None  # "thousand", "million", "billion", or None when the passage does not say
    periods: tuple[str, ...]
    label: str
    values: tuple[str, ...]
    rank: int  # the passage's place in the reply: 0 is the best match
    share_unit: str | None = None  # "(In millions, except number of shares, which are reflected in thousands)"
    spans: tuple[str, ...] = ()  # per cell, when a header says: "quarter", "six_months", "nine_months", "year"
    group: str = ""  # the group label above the row inside its table: "Europe:" over "Net sales", "Operating income"
    statement: str = ""  # a primary statement's row (statements.py): "balance", "income", "cash_flow" or "other"
    at: int = -1  # where the row starts in the document, when the passage's head says


@dataclass(frozen=True)
class Clause:
    before: str  # the words before the figure, back to the clause's start
    figure: str  # as written: "$264,121 thousand", "206.0%", "19,267"
    after: str  # the words after it, to the clause's end
    sentence: str  # the whole sentence, for the periods it names
    rank: int
    passage_years: frozenset[int] = frozenset()  # every year its passage names


@dataclass
class Reading:
    rows: list[Row]
    money: list[Clause]
    percents: list[Clause]
    counts: list[Clause]
    units_by_heading: dict[str, str]
    share_units_by_heading: dict[str, str] = field(default_factory=dict)
    share_unit: str | None = None  # the reply's captions' scale of share counts, when one says


def period_of(cell: str) -> str | None:
    """A column header cell as a period: "2024", "2024-12-31", or a dated cell as its ISO date; None otherwise."""
    cell = cell.strip()
    if _PERIOD_CELL.match(cell):
        return cell
    match = _DATED_CELL.match(cell)
    if match and (month := MONTHS.get(match.group(1).lower())):
        return f"{match.group(3)}-{month:02d}-{int(match.group(2)):02d}"
    return None


def column_heading(cells: list[str], periods: tuple, spans: tuple) -> tuple[tuple, tuple] | None:
    """(periods, spans) after a heading row; None for any other row. A row of periods takes the spans of the row
    above it ("Three Months Ended | Nine Months Ended"), spread over its columns; a row of span words sets them."""
    if header := periods_of(cells):
        if spans and len(header) % len(spans) == 0:
            spans = tuple(s for s in spans for _ in range(len(header) // len(spans)))
        return header, spans
    if all(_SPAN_CELL.match(c) for c in cells):
        return periods, tuple(SPAN_WORDS.get(c.split()[0].lower(), "year") for c in cells)
    return None


def periods_of(cells: list[str]) -> tuple[str, ...] | None:
    """A header row's periods, when every cell is one."""
    found = [period_of(c) for c in cells]
    return tuple(found) if cells and all(found) else None  # type: ignore[arg-type]


def read_reply(text: str) -> Reading:
    reading = Reading([], [], [], [], {})
    for rank, (context, body, start) in enumerate(_passages(text)):
        _read_passage(context, body, rank, reading, start)
    # A passage cut from the middle of a table may not say its unit or its columns: another passage of the same
    # table (by heading), or else the reply's usual unit and its usual columns for that many values, does.
    usual_unit = Counter(r.unit for r in reading.rows if r.unit).most_common(1) or Counter(
        SCALES[m.lower()] for m in _UNIT.findall(text)
    ).most_common(1)  # "(in millions)" in prose
    columns: dict[int, Counter] = {}
    for row in reading.rows:
        if row.periods:
            columns.setdefault(len(row.periods), Counter())[row.periods] += 1
    if shares := _SHARE_UNIT.search(text):
        reading.share_unit = SCALES[shares.group(1).lower()]
    reading.rows = [
        _completed(
            row,
            reading.units_by_heading,
            usual_unit[0][0] if usual_unit else None,
            columns,
            reading.share_units_by_heading,
        )
        for row in reading.rows
    ]
    return reading


def _completed(
    row: Row, units: dict[str, str], usual_unit: str | None, columns: dict[int, Counter], share_units: dict[str, str]
) -> Row:
    unit = row.unit or units.get(row.heading.lower()) or usual_unit
    share_unit = row.share_unit or share_units.get(row.heading.lower())
    periods, n = row.periods, len(row.values)
    if not periods and n > 1 and n in columns:
        periods = columns[n].most_common(1)[0][0]
    elif not periods and n % 2 == 0 and n // 2 in columns and n > 2:
        # a quarter's statement: the three months' pair of dates, then the year to date's, the same pair again
        periods = columns[n // 2].most_common(1)[0][0] * 2
    return replace(row, unit=unit, periods=periods, share_unit=share_unit)


def _passages(text: str) -> list[tuple[str | None, str, int]]:
    """Each passage's context line, its text, and where the text starts in the document (-1: not said)."""
    heads = list(_PASSAGE_HEAD.finditer(text))
    if not heads:
        return [(None, text, -1)]
    out = []
    for i, head in enumerate(heads):
        body = text[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip("\n")
        context = None
        first, _, rest = body.partition("\n")
        if first.startswith("(") and first.endswith(")"):
            context, body = first[1:-1], rest
        start = _PASSAGE_START.search(head.group(0))
        assert start is not None  # every _PASSAGE_HEAD match holds " characters N-"
        out.append((context, body, int(start.group(1))))
    return out


def _read_passage(context: str | None, body: str, rank: int, reading: Reading, start: int = -1) -> None:  # noqa: C901 (one pass over a passage's lines, each line kind a branch)
    periods: tuple[str, ...] = ()
    spans: tuple = ()
    heading, unit, share_unit, group = "", None, None, ""
    if context:
        parts = [p.strip() for p in context.split(" / ")]
        heading = parts[0]
        for part in parts[1:]:
            if part.endswith(":"):
                group = part
            elif found := _UNIT.search(part):  # not `m`: the lines' `m` below may also be False
                unit = SCALES[found.group(1).lower()]
                if shares := _SHARE_UNIT.search(part):  # "in millions and shares in thousands"
                    share_unit = SCALES[shares.group(1).lower()]
            elif header := periods_of(part.split("|")):
                periods = header
        if unit and heading:
            reading.units_by_heading.setdefault(heading.lower(), unit)
    prose: list[str] = []
    at = start
    for line in body.split("\n"):
        line_at, at = at, at + len(line) + 1
        stripped = line.strip()
        if not stripped:
            continue
        cells = [c.strip() for c in stripped.split("|")]
        if (columns_now := column_heading(cells, periods, spans)) is not None:
            periods, spans = columns_now  # the periods (and their lengths) of the rows below
            continue
        caption = stripped.startswith("(") and stripped.endswith(")") and len(stripped) < 200
        if m := _UNIT.fullmatch(stripped.strip("()")) or ((len(stripped) < 40 or caption) and _UNIT.search(stripped)):
            unit = SCALES[m.group(1).lower()]
            if shares := _SHARE_UNIT.search(stripped):
                share_unit = SCALES[shares.group(1).lower()]
            if heading:
                reading.units_by_heading.setdefault(heading.lower(), unit)
                if share_unit:
                    reading.share_units_by_heading.setdefault(heading.lower(), share_unit)
            continue
        values = tuple(c for c in cells[1:] if _AMOUNT.fullmatch(c.replace(" ", "")))
        if len(cells) > 1 and values:
            reading.rows.append(
                Row(
                    heading,
                    unit,
                    periods,
                    cells[0],
                    values,
                    rank,
                    share_unit,
                    spans if len(spans) == len(values) else (),
                    group,
                    at=line_at if start >= 0 else -1,
                )
            )
            continue
        if len(cells) == 1 and stripped.endswith(":") and periods:
            group = stripped  # "Cash flows from operating activities:": a group of rows inside the table
            continue
        if len(cells) == 1 and len(stripped) < 80 and not _MONEY.search(stripped) and not stripped.endswith("."):
            heading, unit, periods, share_unit, spans, group = stripped, None, (), None, (), ""  # a new table
            continue
        prose.append(stripped)
    years = frozenset(int(y) for y in _YEAR.findall((context or "") + " " + body))
    for sentence in _sentences(" ".join(prose)):
        _read_sentence(sentence, rank, years, reading)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[a-z0-9)%])\.\s+(?=[A-Z])", text) if s]


def _read_sentence(sentence: str, rank: int, years: frozenset[int], reading: Reading) -> None:
    for clause in _CLAUSE_SPLIT.split(sentence):
        taken: list[tuple[int, int]] = []
        for m in _MONEY.finditer(clause):
            reading.money.append(
                Clause(clause[: m.start()], m.group(0).strip(), clause[m.end() :], sentence, rank, years)
            )
            taken.append(m.span())
        for m in _PERCENT.finditer(clause):
            reading.percents.append(Clause(clause[: m.start()], m.group(0), clause[m.end() :], sentence, rank, years))
            taken.append(m.span())
        for m in _COUNT.finditer(clause):
            if any(a <= m.start() < b for a, b in taken) or _is_date_part(clause, m):
                continue
            reading.counts.append(Clause(clause[: m.start()], m.group(0), clause[m.end() :], sentence, rank, years))


def _is_date_part(clause: str, m: re.Match) -> bool:
    text = m.group(0)
    if len(text) == 4 and text.isdigit() and 1900 <= int(text) <= 2100:
        return True  # a year
    return clause[max(0, m.start() - 1) : m.start()] == "-" or clause[m.end() : m.end() + 1] == "-"
