"""The tagged reading of an inline XBRL filing: its contexts, units and numeric facts, valued as the tags say
(the displayed number, its `format`, `scale` and `sign`), and the cover page's `dei:` facts.

Only linear regular expressions over the document: a filing is untrusted input, and a multi-megabyte one is
read in one pass per pattern. A fact whose value cannot be read (a format this reader does not know, a nested
fact) is left out, never guessed."""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from functools import cached_property

__all__ = ["Context", "Fact", "Filing", "read_filing", "text_of"]

_CONTEXT = re.compile(r"<((?:\w+:)?)context\b([^<>]{0,4000})>")
_DATE = re.compile(r"<(?:\w+:)?(startDate|endDate|instant)>\s*(\d{4}-\d{2}-\d{2})\s*<")
_MEMBER = re.compile(r"<(?:\w+:)?explicitMember\b([^<>]*+)>\s*+([^<\s]++)\s*+<")
_TYPED = re.compile(r"<(?:\w+:)?typedMember\b")
_UNIT = re.compile(r"<((?:\w+:)?)unit\b([^<>]{0,4000})>")
_MEASURE = re.compile(r"<(?:\w+:)?measure>\s*([^<\s]+)\s*<")
_NUMERIC = re.compile(r"<(ix:)nonFraction\b([^<>]{0,4000})>")
_TEXT_FACT = re.compile(r"<(ix:)nonNumeric\b([^<>]{0,4000})>")
_LONGEST = {"context": 20_000, "unit": 4_000, "nonFraction": 2_000, "nonNumeric": 4_000}  # inner text, characters
# A name starts only where no name character precedes it and is never given back: one pass over a tag, however long.
_ATTRIBUTE = re.compile(r"(?<![\w:.-])([\w:.-]++)\s*+=\s*+\"([^\"]*+)\"")
_TAG = re.compile(r"<[^<>]*>")
_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"^\d{1,3}(?:,\d{3})*(?:\.\d+)?$|^\d+(?:\.\d+)?$")
_ZERO = {"", "-", "—", "–", "nil", "none", "no"}
# dei facts a task may be built from, or that say what the filing is
_COVER = (
    "DocumentType",
    "DocumentPeriodEndDate",
    "DocumentFiscalYearFocus",
    "DocumentFiscalPeriodFocus",
    "EntityRegistrantName",
    "TradingSymbol",
    "EntityCentralIndexKey",
    "CurrentFiscalYearEndDate",
)


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
    hidden: bool = False  # in ix:hidden: tagged, never printed

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
    tables: tuple[list[int], list[int]] = ([], [])  # where each <table opens, where each </table> ends

    @property
    def period_end(self) -> date | None:
        context = self.contexts.get(self.cover_contexts.get("DocumentPeriodEndDate", ""))
        return context.end if context else None

    @cached_property
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
    units = {
        _id(attributes): "/".join(_MEASURE.findall(body))
        for attributes, body, _, _ in _elements(document, _UNIT, "unit")
    }
    hidden = [
        (start, end)
        for _, _, start, end in _elements(
            document, re.compile(r"<(ix:)hidden\b()[^<>]{0,100}>"), "hidden", longest=len(document)
        )
    ]
    facts = [
        fact
        for element in _elements(document, _NUMERIC, "nonFraction")
        if (fact := _fact(*element, contexts, units, hidden))
    ]
    cover, cover_contexts = {}, {}
    for attributes, inner, _, _ in _elements(document, _TEXT_FACT, "nonNumeric"):
        prefix, _, name = _attributes(attributes).get("name", "").partition(":")
        if prefix == "dei" and name in _COVER and name not in cover:
            cover[name] = text_of(inner)
            cover_contexts[name] = _attributes(attributes).get("contextRef", "")
    tables = (
        [m.start() for m in re.finditer(r"<table\b", document)],
        [m.end() for m in re.finditer(r"</table>", document)],
    )
    return Filing(document, cover, cover_contexts, contexts, facts, tables)


def _elements(
    document: str, opening: re.Pattern[str], name: str, longest: int | None = None
) -> Iterator[tuple[str, str, int, int]]:
    """(attributes, inner text, start, end) of each element the pattern opens, in one pass: each closing tag
    is searched for once and at most `longest` characters ahead, so unclosed tags cost no more than their text."""
    reach = longest or _LONGEST[name]
    at = 0
    while match := opening.search(document, at):
        closing = f"</{match.group(1)}{name}>"
        end = document.find(closing, match.end(), match.end() + reach + len(closing))
        if end < 0:
            if longest is not None:  # no closing anywhere after: none after a later opening either
                return
            at = match.end()
            continue
        yield match.group(2), document[match.end() : end], match.start(), end + len(closing)
        at = match.end() if name == "nonFraction" else end + len(closing)  # a fact may nest in a fact


def _attributes(text: str) -> dict[str, str]:
    return dict(_ATTRIBUTE.findall(text))


def _id(attributes: str) -> str:
    return _attributes(attributes).get("id", "")


def text_of(fragment: str) -> str:
    """A fragment of HTML as the reader sees it: tags dropped, entities decoded, white space collapsed."""
    return _SPACE.sub(" ", html.unescape(_TAG.sub(" ", fragment))).strip()


def _contexts(document: str) -> dict[str, Context]:
    out = {}
    for attributes, body, _, _ in _elements(document, _CONTEXT, "context"):
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
        cid = _id(attributes)
        out[cid] = Context(cid, start, end, _members(body), bool(_TYPED.search(body)))
    return out


def _members(body: str) -> tuple[tuple[str, str], ...]:
    found = ((_attributes(attributes).get("dimension"), member) for attributes, member in _MEMBER.findall(body))
    return tuple(sorted((dimension, member) for dimension, member in found if dimension))


def _fact(
    attribute_text: str,
    inner: str,
    at: int,
    end: int,
    contexts: dict[str, Context],
    units: dict[str, str],
    hidden: list[tuple[int, int]],
) -> Fact | None:
    attributes = _attributes(attribute_text)
    context = contexts.get(attributes.get("contextRef", ""))
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
    value = number * 10**scale
    if attributes.get("sign") == "-":
        value = -value
    return Fact(
        attributes.get("name", ""),
        context,
        units.get(attributes.get("unitRef", ""), ""),
        value,
        scale,
        decimals,
        shown,
        at,
        end,
        _inside(hidden, at),
    )


def _inside(spans: list[tuple[int, int]], at: int) -> bool:
    """Whether `at` falls in one of the spans (in order, not overlapping)."""
    index = bisect.bisect_right(spans, (at, float("inf"))) - 1
    return index >= 0 and spans[index][0] <= at < spans[index][1]


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
