"""The tagged reading of an inline XBRL filing: its contexts, units and numeric facts, valued as the tags say
(the displayed number, its `format`, `scale` and `sign`), and the cover page's `dei:` facts.

Only linear regular expressions over the document: a filing is untrusted input, and a multi-megabyte one is
read in one pass per pattern. A fact whose value cannot be read (a format this reader does not know, a nested
fact) is left out, never guessed."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import date

__all__ = ["Context", "Fact", "Filing", "read_filing"]

_CONTEXT = re.compile(r"<(?:\w+:)?context\b[^>]*?\bid=\"([^\"]+)\"[^>]*>(.*?)</(?:\w+:)?context>", re.S)
_DATE = re.compile(r"<(?:\w+:)?(startDate|endDate|instant)>\s*(\d{4}-\d{2}-\d{2})\s*<")
_MEMBER = re.compile(r"<(?:\w+:)?explicitMember\b[^>]*?dimension=\"([^\"]+)\"[^>]*>\s*([^<\s]+)\s*<")
_TYPED = re.compile(r"<(?:\w+:)?typedMember\b")
_UNIT = re.compile(r"<(?:\w+:)?unit\b[^>]*?\bid=\"([^\"]+)\"[^>]*>(.*?)</(?:\w+:)?unit>", re.S)
_MEASURE = re.compile(r"<(?:\w+:)?measure>\s*([^<\s]+)\s*<")
_NUMERIC = re.compile(r"<ix:nonFraction\b([^>]*)>(.*?)</ix:nonFraction>", re.S)
_TEXT_FACT = re.compile(r"<ix:nonNumeric\b([^>]*)>(.*?)</ix:nonNumeric>", re.S)
_ATTRIBUTE = re.compile(r"([\w:.-]+)\s*=\s*\"([^\"]*)\"")
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"^\d{1,3}(?:,\d{3})*(?:\.\d+)?$|^\d+(?:\.\d+)?$")
_ZERO = {"", "-", "—", "–", "nil", "none", "no"}
# dei facts a task may be built from, or that say what the filing is
_COVER = ("DocumentType", "DocumentPeriodEndDate", "DocumentFiscalYearFocus", "DocumentFiscalPeriodFocus",
          "EntityRegistrantName", "TradingSymbol", "EntityCentralIndexKey", "CurrentFiscalYearEndDate")


@dataclass(frozen=True)
class Context:
    id: str
    start: date | None  # None for an instant
    end: date  # the instant, or the last day of the duration
    dimensions: tuple[tuple[str, str], ...]  # (axis, member) pairs, sorted; empty: the company as a whole
    typed: bool = False  # a typed dimension, which this reader does not interpret

    @property
    def days(self) -> int:
        return (self.end - self.start).days if self.start else 0


@dataclass(frozen=True)
class Fact:
    concept: str  # with its prefix, e.g. "us-gaap:Revenues"
    context: Context
    unit: str  # "iso4217:USD", "xbrli:shares", "iso4217:USD/xbrli:shares", "xbrli:pure", ...
    value: float  # the tagged reading: displayed number x 10^scale, negated when sign="-"
    scale: int
    decimals: int | None  # None for INF
    shown: str  # the number as printed
    at: int  # where the fact's tag starts in the document
    end: int  # where its closing tag ends

    @property
    def per_share(self) -> bool:
        return self.unit.endswith("/xbrli:shares")


@dataclass(frozen=True)
class Filing:
    document: str
    cover: dict[str, str]  # dei facts by local name, their text
    cover_contexts: dict[str, str]  # dei facts by local name, their context id
    contexts: dict[str, Context]
    facts: list[Fact]

    @property
    def period_end(self) -> date | None:
        context = self.contexts.get(self.cover_contexts.get("DocumentPeriodEndDate", ""))
        return context.end if context else None

    def by_concept(self) -> dict[str, list[Fact]]:
        out: dict[str, list[Fact]] = {}
        for fact in self.facts:
            out.setdefault(fact.concept, []).append(fact)
        return out


def read_filing(document: str) -> Filing | None:
    """The filing's tagged reading; None when the document carries no inline XBRL."""
    if "<ix:nonFraction" not in document and "<ix:header" not in document:
        return None
    contexts = _contexts(document)
    units = _units(document)
    facts = [fact for match in _NUMERIC.finditer(document) if (fact := _fact(match, contexts, units))]
    cover, cover_contexts = {}, {}
    for match in _TEXT_FACT.finditer(document):
        attributes = dict(_ATTRIBUTE.findall(match.group(1)))
        prefix, _, name = attributes.get("name", "").partition(":")
        if prefix == "dei" and name in _COVER and name not in cover:
            cover[name] = text_of(match.group(2))
            cover_contexts[name] = attributes.get("contextRef", "")
    return Filing(document, cover, cover_contexts, contexts, facts)


def text_of(fragment: str) -> str:
    """A fragment of HTML as the reader sees it: tags dropped, entities decoded, white space collapsed."""
    return _SPACE.sub(" ", html.unescape(_TAG.sub(" ", fragment))).strip()


def _contexts(document: str) -> dict[str, Context]:
    out = {}
    for cid, body in _CONTEXT.findall(document):
        dates = dict(_DATE.findall(body))
        try:
            if "instant" in dates:
                start, end = None, date.fromisoformat(dates["instant"])
            elif "startDate" in dates and "endDate" in dates:
                start, end = date.fromisoformat(dates["startDate"]), date.fromisoformat(dates["endDate"])
            else:
                continue
        except ValueError:
            continue
        out[cid] = Context(cid, start, end, tuple(sorted(_MEMBER.findall(body))), bool(_TYPED.search(body)))
    return out


def _units(document: str) -> dict[str, str]:
    return {uid: "/".join(_MEASURE.findall(body)) for uid, body in _UNIT.findall(document)}


def _fact(match: re.Match, contexts: dict[str, Context], units: dict[str, str]) -> Fact | None:
    attributes = dict(_ATTRIBUTE.findall(match.group(1)))
    context = contexts.get(attributes.get("contextRef", ""))
    inner = match.group(2)
    if context is None or context.typed or "<ix:nonFraction" in inner:
        return None
    shown = text_of(inner)
    number = _displayed(shown, attributes.get("format", ""))
    try:
        scale = int(attributes.get("scale", "0"))
        decimals = None if attributes.get("decimals", "INF") == "INF" else int(attributes["decimals"])
    except ValueError:
        return None
    if number is None or not -12 <= scale <= 12:
        return None
    value = number * 10 ** scale
    if attributes.get("sign") == "-":
        value = -value
    return Fact(attributes.get("name", ""), context, units.get(attributes.get("unitRef", ""), ""), value, scale,
                decimals, shown, match.start(), match.end())


def _displayed(shown: str, format_: str) -> float | None:
    """The displayed number under the fact's format (ixt: transformation registry); None when unreadable."""
    text = shown.strip().lower()
    if "zerodash" in format_ or "fixed-zero" in format_ or text in _ZERO:
        return 0.0
    if "comma-decimal" in format_ or "numcommadecimal" in format_:
        text = text.replace(".", "").replace(" ", "").replace(",", ".")
    elif "numwordsen" in format_ or "num-word" in format_:
        return None  # numbers in words ("three") are not figures a table prints
    text = text.replace(" ", "")
    if not _NUMBER.match(text):
        return None
    return float(text.replace(",", ""))
