"""The printed reading of a fact: the number as a reader sees it where the fact sits in the filing, scaled as
the table's caption (or the word after it in a sentence) says, negative when printed in parentheses.

It shares nothing with the tagged reading but the fact's position: not the `scale` or `sign` attributes, not
the format. A fact whose two readings disagree is one whose task cannot be trusted (a caption in thousands over
a tag in millions, parentheses over a positive tag); `agrees` says so."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from finsec.xbrl.facts import Fact, Filing, text_of

__all__ = ["Printed", "agrees", "printed"]

_SCALES = {"thousand": 3, "thousands": 3, "million": 6, "millions": 6, "billion": 9, "billions": 9, "trillion": 12}
_CAPTION = re.compile(
    r"\bin\s+(thousands|millions|billions)\b|\(\s*(?:\$|dollars|usd)?\s*(thousands|millions|"
    r"billions)\b|\$\s*in\s+(thousands|millions|billions)\b",
    re.I,
)
_SHARES_SCALE = re.compile(
    r"shares?,?\s+(?:which\s+are\s+|are\s+)?(?:reflected\s+|presented\s+|stated\s+|shown\s+)?"
    r"in\s+(thousands|millions)\b|\b(thousands|millions)\s+of\s+shares",
    re.I,
)
_EXCEPT_SHARES = re.compile(r"except\s+(?:for\s+)?(?:the\s+)?(?:number\s+of\s+)?shares?\b", re.I)
_AFTER_NUMBER = re.compile(r"^\s*(thousand|million|billion|trillion)\b", re.I)
_PRINTED_NUMBER = re.compile(r"(\d[\d,]*)(?:\.(\d+))?")
_CAPTION_REACH = 3000  # characters of markup before a table where its caption may sit
_CELL_REACH = 2000
_HEADER_REACH = 30_000  # characters of a table above a fact's row where its column headings may say the scale


@dataclass(frozen=True)
class Printed:
    value: float
    scale: int  # the power of ten the caption or the sentence gives
    stated: bool  # whether anything stated the scale (a table with no caption in reach states none)
    places: int  # decimal places printed
    in_table: bool


def printed(filing: Filing, fact: Fact) -> Printed | None:
    """The fact as printed; None when it is not printed (hidden), or is not a plain figure."""
    if fact.unit == "xbrli:pure" or fact.hidden:
        return None
    document = filing.document
    number = _number(fact.shown)
    if number is None:
        return None
    magnitude, places = number
    table, previous = _table_around(filing, fact.at)
    if table is None:
        after = _AFTER_NUMBER.match(text_of(document[fact.end : fact.end + 200]))
        scale = _SCALES[after.group(1).lower()] if after and not fact.per_share else 0
        return Printed(magnitude * 10**scale, scale, True, places, in_table=False)
    table_scale = _table_scale(document, table, previous, fact)
    negative = _in_parentheses(document, fact)
    value = magnitude * 10 ** (table_scale or 0)
    return Printed(-value if negative else value, table_scale or 0, table_scale is not None, places, in_table=True)


def agrees(fact: Fact, reading: Printed, *, signed: bool = True) -> bool:
    """The two readings give one figure, to the precision printed. A sentence states direction in words ("fell
    by"), so outside tables only the magnitude is compared; so too when the question asks a magnitude."""
    tagged, shown = fact.value, reading.value
    if not signed or not reading.in_table:
        tagged, shown = abs(tagged), abs(shown)
    tolerance = 0.5 * 10 ** (reading.scale - reading.places) + 1e-9 * abs(tagged)
    return abs(tagged - shown) <= tolerance


def _number(shown: str) -> tuple[float, int] | None:
    text = shown.strip()
    if text in ("-", "—", "–", ""):
        return 0.0, 0
    match = _PRINTED_NUMBER.fullmatch(text.replace(" ", ""))
    if not match or not re.fullmatch(r"\d{1,3}(,\d{3})*|\d+", match.group(1)):
        return None
    places = match.group(2) or ""
    return float(match.group(1).replace(",", "") + ("." + places if places else "")), len(places)


def _table_around(filing: Filing, at: int) -> tuple[int | None, int]:
    """Where the table holding `at` opens (None outside tables), and where the table before it closes."""
    opens, closes = filing.tables
    index = bisect.bisect_right(opens, at) - 1
    if index < 0:
        return None, -1
    table = opens[index]
    closed = bisect.bisect_right(closes, at) - 1
    previous = closes[closed] if closed >= 0 else -1
    return (None if previous > table else table), previous


def _table_scale(document: str, table: int, previous: int, fact: Fact) -> int | None:
    """The scale the caption gives this fact: the caption above the table and the table's rows above the
    fact's, the closest statement winning; shares and per-share amounts by the caption's exceptions."""
    caption = text_of(document[max(previous, table - _CAPTION_REACH, 0) : table])
    row = document.rfind("<tr", max(table, fact.at - _CELL_REACH), fact.at)
    header = text_of(document[max(table, row - _HEADER_REACH) : row]) if row > table else ""
    words = f"{caption} {header}"
    if fact.per_share:
        return 0
    if fact.unit == "xbrli:shares":
        if stated := _SHARES_SCALE.findall(words):
            return _SCALES[next(group for group in stated[-1] if group).lower()]
        if _EXCEPT_SHARES.search(words):
            return 0
    stated = _CAPTION.findall(_SHARES_SCALE.sub(" ", words))  # "shares ... in thousands" is the exception
    return _SCALES[next(group for group in stated[-1] if group).lower()] if stated else None


def _in_parentheses(document: str, fact: Fact) -> bool:
    """Printed as "(1,234)": an opening parenthesis before the number in its cell (or an earlier cell of the
    row holding only "$" and "("), a closing one after it, in its cell or the next."""
    cell = document.rfind("<td", max(0, fact.at - _CELL_REACH), fact.at)
    row = document.rfind("<tr", max(0, fact.at - _CELL_REACH), fact.at)
    before = text_of(document[cell : fact.at] if cell >= 0 else "").replace("$", "").strip()
    if not before and row >= 0:  # "(" alone in the previous cell
        before = text_of(document[row : fact.at]).replace("$", "").strip()[-1:]
    closing = document.find("</tr", fact.end, fact.end + _CELL_REACH)
    after = text_of(document[fact.end : closing if closing > 0 else fact.end + 200]).replace("$", "").strip()
    return before.endswith("(") and after.startswith(")")
