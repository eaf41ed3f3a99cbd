"""The primary financial statements read whole, as an analyst opens them before the notes: the balance sheet,
the statement of operations (income, earnings) and the statement of cash flows, each with its own title, unit
and column header, so a row is never read with a neighbouring table's scale or columns.

Finding them: the balance sheet's "Total assets" row, which every balance sheet has, anchors the statements (they
are printed together); the text around it is read in windows through retrieve_information's
input_character_ranges, with words that every statement passage has, so every passage of a window comes back.
The windows' passages are put back in document order, and the statements are the text under their title lines."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from finsec_client.policies.passages import (
    _AMOUNT,
    _SHARE_UNIT,
    _UNIT,
    SCALES,
    Row,
    column_heading,
)

__all__ = [
    "AFTER_ANCHOR",
    "ANCHOR_PROMPT",
    "anchors",
    "BEFORE_ANCHOR",
    "blocks",
    "parse_rows",
    "read_statements",
    "read_table",
    "Retrieve",
    "Statement",
    "statement_kind",
    "statements",
    "TABLE_AFTER",
    "TABLE_BEFORE",
    "WINDOW_CHARS",
    "WINDOW_PROMPT",
]

# retrieve_information, restricted to a (start, end) range of the stored document when one is given: the reply's
# text, or None on an error
Retrieve = Callable[[str, "tuple[int, int] | None"], Awaitable[str | None]]

ANCHOR_PROMPT = "total assets"
# Words some line of every statement passage has (a passage with none of the prompt's words is not returned).
WINDOW_PROMPT = (
    "total net cash income loss assets liabilities equity stock revenue sales expenses cost operating "
    "investing financing activities consolidated statements balance sheets share per"
)
WINDOW_CHARS = 5_000  # a window's passages and their context lines fit one reply (7,600 characters)
BEFORE_ANCHOR = 9_000  # the statements printed before the balance sheet (operations, comprehensive income)
AFTER_ANCHOR = 12_000  # and after it (equity, cash flows)

_BLOCK = re.compile(r"^\[[^\]\n]* characters (\d+)-(\d+)\]\n", re.M)
# A statement's title on a line of its own; "(Unaudited)" and "(continued)" may follow it.
_TITLE = re.compile(
    r"^(?:condensed\s+)?(?:consolidated\s+)?(balance\s+sheets?|statements?\s+of\s+[^|.:;]{4,80}?)"
    r"(?:\s*\((?:unaudited|continued)\))*\s*$",
    re.I,
)
_DASH = re.compile(r"^\$?\s?[—–-]+$")
_END = re.compile(r"^(?:see (?:the )?accompanying|notes? to (?:the )?(?:condensed )?consolidated)", re.I)


@dataclass(frozen=True)
class Statement:
    kind: str  # "balance", "income", "cash_flow", "other" (comprehensive income, equity), or "note" (a table)
    title: str
    start: int  # where its title line starts in the document
    end: int  # where its last line read ends
    rows: tuple[Row, ...]

    def holds(self, at: int) -> bool:
        return self.start <= at < self.end


def statement_kind(title: str) -> str:
    words = title.lower()
    if "comprehensive" in words and "operations" not in words or "equity" in words or "deficit" in words:
        return "other"
    if "balance sheet" in words or "financial position" in words or "financial condition" in words:
        return "balance"
    if "cash flow" in words:
        return "cash_flow"
    if any(w in words for w in ("operations", "income", "earnings")):
        return "income"
    return "other"


async def read_statements(retrieve: Retrieve, key: str) -> list[Statement]:
    """The filing's primary statements, or [] when no balance sheet is found."""
    anchor_reply = await retrieve(f"{ANCHOR_PROMPT} {{{{{key}}}}}", None)
    for anchor in anchors(anchor_reply or ""):
        start = max(0, anchor - BEFORE_ANCHOR)
        text: dict[int, str] = {}
        for at in range(start, anchor + AFTER_ANCHOR, WINDOW_CHARS):
            reply = await retrieve(f"{WINDOW_PROMPT} {{{{{key}}}}}", (at, at + WINDOW_CHARS))
            text.update(blocks(reply or ""))
        found = statements(text)
        if any(s.kind == "balance" for s in found):
            return found
    return []


def anchors(reply: str) -> list[int]:
    """Where the reply's "Total assets" rows are in the document, in the reply's order."""
    out = []
    for start, body in blocks(reply).items():
        for line in _lines_at(start, body):
            if line[1].split("|")[0].strip().lower() == "total assets" and "|" in line[1] and line[0] not in out:
                out.append(line[0])
    return out[:2]


def blocks(reply: str) -> dict[int, str]:
    """Each passage of a reply by where it starts in the document, its text as the document has it. A context
    line is told from the text by the passage's length: the text is exactly end - start characters."""
    out: dict[int, str] = {}
    heads = list(_BLOCK.finditer(reply))
    for i, head in enumerate(heads):
        body = reply[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(reply)]
        start, end = int(head.group(1)), int(head.group(2))
        if len(body.rstrip("\n")) != end - start and body.startswith("("):
            body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body[: end - start]
        if len(body) > len(out.get(start, "")):
            out[start] = body
    return out


def _lines_at(start: int, body: str) -> list[tuple[int, str]]:
    out, at = [], start
    for line in body.split("\n"):
        out.append((at, line))
        at += len(line) + 1
    return out


def _document_lines(text: dict[int, str]) -> list[tuple[int, str]]:
    """The passages put back together in document order, as lines with where each starts. A passage ends before
    its newline, and a window's edge may cut a line: the next passage then starts where this one ends."""
    merged: list[tuple[int, str]] = []  # (start, text) of each stretch read without a gap
    for start, body in sorted(text.items()):
        if merged and start <= merged[-1][0] + len(merged[-1][1]) + 1:
            at, so_far = merged[-1]
            end = at + len(so_far)
            joined = so_far + ("\n" if start == end + 1 else "") + body[max(0, end - start) :]
            merged[-1] = (at, joined if start + len(body) > end else so_far)
        else:
            merged.append((start, body))
    return [line for start, stretch in merged for line in _lines_at(start, stretch)]


def statements(text: dict[int, str]) -> list[Statement]:
    """The statements in the text read: each from its title line to the next title, or to the line that sends the
    reader to the notes."""
    out: list[Statement] = []
    title: tuple[int, str] | None = None
    lines: list[tuple[int, str]] = []
    for at, line in _document_lines(text):
        stripped = line.strip()
        if _TITLE.match(stripped) or (title and _END.match(stripped)):
            if title:
                out.append(_statement(title, lines))
            title, lines = ((at, stripped) if _TITLE.match(stripped) else None), []
        elif title:
            lines.append((at, line))
    if title:
        out.append(_statement(title, lines))
    return out


def _statement(title: tuple[int, str], lines: list[tuple[int, str]]) -> Statement:
    kind = statement_kind(title[1])
    end = lines[-1][0] + len(lines[-1][1]) if lines else title[0] + len(title[1])
    return Statement(kind, title[1], title[0], end, tuple(parse_rows(title[1], kind, [ln for _, ln in lines])))


def _closes(label: str, group: str) -> bool:
    words = re.findall(r"[a-z]+", group.lower())
    return bool(words) and label.lower().startswith("total") and " ".join(words) in label.lower()


def _shares_beside(cells: list[str], n_periods: int) -> bool:
    """Each period's amount followed by its percentage: twice the periods' cells, every second one a percentage."""
    return (
        len(cells) == 2 * n_periods
        and all(c.endswith("%") for c in cells[1::2])
        and not any(c.endswith("%") for c in cells[::2])
    )


def parse_rows(
    title: str, kind: str, lines: list[str], unit: str | None = None, share_unit: str | None = None
) -> list[Row]:
    """One statement's or table's rows: its caption gives the unit (and the share counts' unit; `unit` when the
    sentence above the table said it), its header the periods (and, in a quarter's statement, the spans), a line
    without figures the group of the rows below it."""
    periods: tuple[str, ...] = ()
    spans: tuple[str, ...] = ()
    group = ""
    with_shares = False
    rows = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        cells = [c.strip() for c in line.split("|")]
        if (columns_now := column_heading(cells, periods, spans)) is not None:
            periods, spans = columns_now
            continue
        if unit is None and len(cells) == 1 and (m := _UNIT.search(line)) and len(line) < 200:
            unit = SCALES[m.group(1).lower()]  # the caption: "(In millions, except ... shares in thousands)"
            if shares := _SHARE_UNIT.search(line):
                share_unit = SCALES[shares.group(1).lower()]
            continue
        # a dash is a zero: "Common stock repurchased | — | — | (6,000)"
        values = tuple(
            "0" if _DASH.fullmatch(c) else c
            for c in cells[1:]
            if _DASH.fullmatch(c) or _AMOUNT.fullmatch(c.replace(" ", ""))
        )
        if periods and _shares_beside(cells[1:], len(periods)):
            with_shares = True  # "United States | $134,814 | 48% | ...": each amount beside its share of the total
        if with_shares and len(values) == 2 * len(periods):
            values = values[::2]  # "EMEA | 82,062 | 29 | 91,038 | 30 | ...": the shares without their % signs
        if len(cells) > 1 and values and periods:
            rows.append(
                Row(
                    title,
                    unit,
                    periods,
                    cells[0],
                    values,
                    -1,
                    share_unit,
                    spans if len(spans) == len(values) else (),
                    group,
                    kind,
                )
            )
            if _closes(cells[0], group):
                group = ""  # "Total current liabilities" ends "Current liabilities:"; "Long-term debt" is not in it
        elif len(cells) == 1 and len(line) < 100 and not line.endswith("."):
            group = line  # "Current assets:", "Operating activities", "LIABILITIES AND STOCKHOLDERS' EQUITY"
    return rows


TABLE_BEFORE = 2_500  # a note's table, from the sentence that introduces it to the row asked about
TABLE_AFTER = 1_500


async def read_table(retrieve: Retrieve, key: str, at: int, words: str) -> Statement | None:
    """The table a row of a note sits in, read whole around the row (at `at`): the sentence that introduces it
    gives its unit ("... is as follows (in millions):"), its header the periods, its lines without figures the
    groups ("North America" over "Net sales"). A passage cut from a table shows none of that."""
    start = max(0, at - TABLE_BEFORE)
    reply = await retrieve(f"{WINDOW_PROMPT} {words} {{{{{key}}}}}", (start, at + TABLE_AFTER))
    lines = _document_lines(blocks(reply or ""))
    row = next((i for i, (line_at, _) in enumerate(lines) if line_at == at), None)
    if row is None:
        return None
    first, above = _table_top(lines, row)
    last = row
    while last + 1 < len(lines) and _in_table(lines[last + 1][1]) and _contiguous(lines, last):
        last += 1
    title = lines[first - 1][1].strip() if first > 0 else ""
    body = [line for _, line in lines[first : last + 1]]
    shares = _SHARE_UNIT.search(above)  # "(net income in millions and shares in thousands)"
    unit = next((m for m in _UNIT.finditer(above) if not (shares and shares.start() <= m.start() < shares.end())), None)
    rows = parse_rows(
        title,
        "note",
        body,
        SCALES[unit.group(1).lower()] if unit else None,
        SCALES[shares.group(1).lower()] if shares else None,
    )
    end = lines[last][0] + len(lines[last][1])
    return Statement("note", title, lines[first][0], end, tuple(rows))


def _table_top(lines: list[tuple[int, str]], row: int) -> tuple[int, str]:
    """The first line of the table holding line `row`, and the line above it (the sentence introducing it)."""
    first = row
    while first > 0 and _in_table(lines[first - 1][1]) and _contiguous(lines, first - 1):
        first -= 1
    return first, lines[first - 1][1] if first > 0 and _contiguous(lines, first - 1) else ""


def _in_table(line: str) -> bool:
    """A row, a header, a caption or a group label: not a sentence."""
    stripped = line.strip()
    return bool(stripped) and (
        "|" in stripped
        or len(stripped) < 80
        and not stripped.endswith((".", ":"))
        or stripped.endswith(":")
        and len(stripped) < 60
        or stripped.startswith("(")
        and stripped.endswith(")")
        and len(stripped) < 200
    )


def _contiguous(lines: list[tuple[int, str]], i: int) -> bool:
    """Line i + 1 follows line i in the document (no passage left unread between them)."""
    return lines[i][0] + len(lines[i][1]) + 1 == lines[i + 1][0]
