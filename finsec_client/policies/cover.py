"""Cover-page facts read where the cover states them: the public float ("the aggregate market value of the voting
stock held by non-affiliates ... was approximately $2.0 trillion") and the shares outstanding on a date ("X shares
of common stock were outstanding as of <date>", or a cover table row that says so).

The cover states these in full, not in a table's scale: "$2,628,553,000,000" is dollars, "$1,815,014,489,485"
in a cover row is not in millions however the statements are printed, and a scale word after the figure
("$2.0 trillion", "5,833 million shares") is part of it."""

from __future__ import annotations

import re

from finsec_client.policies.passages import MONTHS
from finsec_client.policies.question import Question

__all__ = ["cover_answer", "is_public_float", "is_shares_outstanding"]

_FLOAT_WORDS = re.compile(r"non-?affiliates|aggregate market value|public float", re.I)
_MONEY = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:\s*(thousand|million|billion|trillion)s?\b)?", re.I)
_SHARES = re.compile(r"(?<![\d$.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(thousand|million|billion)?\s*shares\b", re.I)
_NUMBER_CELL = re.compile(r"^\s*(\d{1,3}(?:,\d{3})+)\s*$")
_CLASS = re.compile(r"\bclass ([a-z])\b", re.I)
_WRITTEN_DATE = re.compile(r"\b([A-Z][a-z]{2,8})\.?\s+(\d{1,2}),\s+((?:19|20)\d{2})\b")
_PASSAGE_HEAD = re.compile(r"^\[[^\]\n]* characters \d+-\d+\]$")


def is_public_float(question: Question) -> bool:
    return bool(_FLOAT_WORDS.search(question.text))


def is_shares_outstanding(question: Question) -> bool:
    return question.kind == "shares" and question.span == "instant"


def cover_answer(question: Question, reply: str) -> str | None:
    """The public float or the shares outstanding, from the cover page's lines in a reply; None if not there."""
    lines = [line for line in reply.splitlines() if line.strip() and not _PASSAGE_HEAD.match(line)]
    if is_public_float(question):
        return _public_float(lines)
    if is_shares_outstanding(question):
        return _shares_outstanding(question, lines)
    return None


def _public_float(lines: list[str]) -> str | None:
    for line in lines:
        words = _FLOAT_WORDS.search(line)
        money = _MONEY.search(line, words.end()) if words else None
        if money:
            number, decimals, scale = money.groups()
            return f"${number}{decimals or ''}" + (f" {scale.lower()}" if scale else "")
    return None


def _shares_outstanding(question: Question, lines: list[str]) -> str | None:
    """The count of the line that says "outstanding" and names the asked date (else any that says
    "outstanding"), of the asked class of stock when the question names one."""
    asked = _CLASS.search(question.text)
    found: list[tuple[bool, str]] = []
    for line in lines:
        if "outstanding" not in line.lower():
            continue
        on_date = question.date is not None and question.date in _iso_dates(line)
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 1 and "shares" in cells[0].lower():  # "Number of shares ... outstanding as of ... | 10,597,729"
            number = next((m.group(1) for c in cells[1:] if (m := _NUMBER_CELL.match(c))), None)
            if number and _class_fits(asked, cells[0]):
                found.append((on_date, f"{number} shares"))
            continue
        for clause in re.split(r"[;,](?:\s+and)?\s+(?=\d)", line):  # "5,833 million shares of Class A ..., 860 ..."
            m = _SHARES.search(clause)
            if m and _class_fits(asked, clause[m.end() :]):
                scale = f" {m.group(2).lower()}" if m.group(2) else ""
                found.append((on_date, f"{m.group(1)}{scale} shares"))
    dated = [answer for on_date, answer in found if on_date]
    return dated[0] if dated else found[0][1] if found else None


def _class_fits(asked: re.Match | None, text: str) -> bool:
    if asked is None:
        return True
    stated = _CLASS.search(text)
    return stated is not None and stated.group(1).lower() == asked.group(1).lower()


def _iso_dates(text: str) -> set[str]:
    out = set()
    for month, day, year in _WRITTEN_DATE.findall(text):
        if number := MONTHS.get(month.lower()):
            out.add(f"{year}-{number:02d}-{int(day):02d}")
    return out
