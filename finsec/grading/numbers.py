"""Find the quantities in a short financial answer: money, plain numbers, percentages and dates.

Values are in base units: currency units ("$115.9 billion" -> 115.9e9), percentage points ("50 bps" -> 0.5), and dates
encoded as the integer YYYYMMDD. `precision` is the place value of the last written digit after scaling
("$115.9 billion" -> 1e8, "115,877 million" -> 1e6); for dates it is 1 (day), 100 (month) or 10000 (year only), so the
same "compare at the coarser precision" rule serves every kind.

Choices the grader relies on:
- A bare four-digit integer from 1900 to 2100 ("2024", "(2024)") is a year: a date known to the year, never an amount.
  "FY2024", "FY24" and "fiscal 2024" are years too. "2,024" and "$2024" stay amounts.
- A number without a scale word is read literally ("$115,877" is dollars), unless the text says "in millions" (or
  thousands, billions), the table convention.
- A direction word stated next to a number gives it a sign: "a decrease of $163 million", "fell $163 million" and
  "$163 million lower" are -163 million; "an increase of", "grew", "rose" are positive. Such a quantity has
  `stated_sign` (as does an explicit "-" or "+"). "Decreased to $X" and "fell from $X" state a level, not a change.
- Parentheses mean negative, as in financial statements ("(5.0)", "$(5.0) million"), but they are also how prose adds
  an aside, so a parenthesised amount and an unsigned amount after "loss", "deficit", or a direction word too far
  away to bind, are flagged `sign_in_words`: their sign is uncertain.
- Invisible characters are dropped and Cyrillic or Greek look-alike letters read as Latin (`normalize`), so an
  answer cannot hide a word from the grader that its reader sees.
- Any Python string is accepted (unpaired surrogates, NUL), and the work is linear in its length: every span is
  masked in one pass per pattern, and the caller can stop the scan after `limit` quantities.
- Filing vocabulary that carries digits but no quantity ("10-K", "Item 7", "Q4", "Note 12", "401(k)") is skipped.
- A multiple written with its "x" ("0.87x", "12.3×") is the plain number, never scaled by "in millions".
"""

from __future__ import annotations

import datetime
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

__all__ = ["CUE_WINDOW", "DAY", "find_quantities", "Kind", "MONTH", "normalize", "Quantity", "YEAR"]

Kind = Literal["money", "number", "percent", "date"]

DAY, MONTH, YEAR = 1.0, 100.0, 10000.0  # date precisions in the YYYYMMDD encoding


@dataclass(frozen=True)
class Quantity:
    value: float
    kind: Kind
    precision: float  # place value of the last written digit, after scaling
    text: str  # as written, for explanations
    start: int  # span in normalize(text)
    end: int
    loose_precision: float  # the same, reading an integer's trailing zeros as rounding: "$120 billion" -> 1e10
    currency: str | None = None  # money only: ISO code
    sign_in_words: bool = False  # parenthesised, or unsigned after "loss"/"deficit": the sign is uncertain
    stated_sign: str = ""  # "symbol" (an explicit "-" or "+") or "words" ("a decrease of"): the sign is meant

    @property
    def is_year(self) -> bool:
        return self.kind == "date" and self.precision == YEAR


# Invisible characters (zero-width spaces and joiners, soft hyphens, bidirectional controls) and the Cyrillic and
# Greek letters that look like Latin ones: without this, "n\u043et 51%" or "not\u200b 51%" would hide a "not".
_INVISIBLE = re.compile(r"[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_LOOKALIKES = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0455\u0458\u0501\u04bb"  # Cyrillic a e o p c y x i s j d h
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406"  # Cyrillic A B E K M H O P C T X I
    "\u03bf\u03b1\u03b5\u03c1\u03bd"  # Greek o a e p v
    "\u039f\u0391\u0392\u0395\u0397\u0399\u039a\u039c\u039d\u03a1\u03a4\u03a7\u0396",  # Greek O A B E H I K M N P T X Z
    "aeopcyxisjdhABEKMHOPCTXIoaepvOABEHIKMNPTXZ",
)


def normalize(text: str) -> str:
    """NFKC (no-break spaces, full-width digits), the Unicode minus as '-', invisible characters dropped and
    look-alike letters read as Latin. Spans refer to this text."""
    text = unicodedata.normalize("NFKC", text).replace("\u2212", "-")
    return _INVISIBLE.sub("", text).translate(_LOOKALIKES)


_SCALES = {
    "thousand": 3, "k": 3,
    "million": 6, "mn": 6, "mm": 6, "mln": 6, "m": 6,
    "billion": 9, "bn": 9, "bln": 9, "b": 9,
    "trillion": 12, "tn": 12, "t": 12,
}  # fmt: skip
_CURRENCIES = {
    "$": "USD", "us$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD",
    "€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR",
    "£": "GBP", "gbp": "GBP", "pounds": "GBP",
    "¥": "JPY", "jpy": "JPY", "yen": "JPY",
    "c$": "CAD", "cad": "CAD",
}  # fmt: skip

_MONTH = (
    r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?"
)
_DATES = [
    re.compile(pattern, re.I)
    for pattern in (
        r"\b(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})\b",  # 2024-12-31
        r"\b(?P<month>\d{1,2})/(?P<day>\d{1,2})/(?P<year>\d{4})\b",  # 12/31/2024 (US order)
        rf"\b{_MONTH}\s*(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s*(?P<year>\d{{4}})\b",  # Dec. 31, 2024
        rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s*(?P<year>\d{{4}})\b",  # 31 December 2024
        rf"\b{_MONTH},?\s*(?P<year>\d{{4}})\b",  # December 2024
        r"\b(?:FY\s*|fiscal\s+(?:year\s+)?)'?(?P<year>\d{4}|\d{2})\b",  # FY2024, FY24, fiscal 2024
    )
]

# Digits that name a form, a section or a period rather than a quantity.
_NOT_QUANTITIES = re.compile(
    r"""\b(?:form\s+)?(?:10-K|10-Q|8-K|6-K|20-F|40-F|11-K|S-[1-4]|F-[1-4]|DEF\s*14A)(?:/A)?\b
      | \b(?:item|note|part|section|exhibit|rule|schedule|page|footnote|ASC|ASU|topic)\s+\d[\w.-]*
      | \b(?:Q[1-4]|[1-4]Q|H[12]|[12]H)(?:\s*'?\d{2})?\b
      | \bCIK\s*(?::\s*)?\d+ | \b401\s*\(k\) | \bS&P\s*\d+""",
    re.I | re.X,
)

_AMOUNT = re.compile(
    r"""(?<![\w.,])
    (?P<open>\(\s*)?
    (?P<sign>[-+])?
    (?:(?P<cur>US\$|C\$|\$|€|£|¥|(?:USD|EUR|GBP|JPY|CAD)(?![a-z]))\s*)?
    (?P<open2>\(\s*)?
    (?P<sign2>-)?
    (?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
    (?P<close0>\s*\)(?=\s*(?:thousand|million|billion|trillion|mln|mn|mm|bln|bn|tn|[kmbt])(?![a-z])))?  # $(5.0) million
    (?:\s*(?P<word>thousand|million|billion|trillion|mln|mn|mm|bln|bn|tn)s?(?![a-z])
       |(?P<letter>[kmbt])(?![a-z])
       |(?P<times>[x×])(?![a-z]))?  # a multiple: "0.87x", "12.3×" (coverage, leverage)
    (?P<unit>\s*(?:%|percent(?:age\s+points?)?|per\s+cent|pct|pp|ppts?|bps|bp|basis\s+points?)(?![a-z]))?
    (?P<cur2>\s+(?:dollars?|usd|euros?|eur|pounds|gbp|yen|jpy|cad)(?![a-z]))?
    (?P<close>\s*\))?
    (?!\w)""",
    re.I | re.X,
)
_TABLE_SCALE = re.compile(r"\bin\s+(thousands|millions|billions)\b", re.I)
# A loss or a decrease stated in words: the number itself is unsigned. Same clause, no other number in between.
_NEGATIVE_CUE = re.compile(
    r"\b(?:loss(?:es)?|deficit|decreas\w*|declin\w*|outflows?|negative|reduc\w*|drop\w*|fell|fall\w*|down|lower"
    r"|used\s+in)\b[^.;\d]*$",
    re.I,
)
# A direction word bound to the number that follows it ("decreased by", "a decline in net sales of"): at most six
# words between, no clause break, and not "to"/"from"/"at"/"than", which introduce a level rather than a change.
_DIRECTION_BEFORE = re.compile(
    r"\b(?:(?P<down>decreas\w*|declin\w*|reduc\w*|drop\w*|fell|fall\w*|down|lower\w*|shr[iau]nk\w*|contract\w*)"
    r"|(?P<up>increas\w*|grew|grow\w*|rose|rise|rising|up|higher|gain\w*|expand\w*|expansion))"
    r"(?P<gap>(?:[ \t]+(?!(?:to|from|at|than|of\s+total)\b)[^\W\d_]+){0,6}[ \t]*[:$€£¥]?[ \t]*)$",
    re.I,
)
_DIRECTION_AFTER = re.compile(
    r"^[ \t]*(?:(?P<down>decrease|decline|drop|reduction|lower|less|down)"
    r"|(?P<up>increase|rise|gain|growth|higher|more|up))\b",
    re.I,
)
CUE_WINDOW = 60  # characters looked at on either side of a number for a sign word


def _direction(text: str, start: int, end: int) -> int:
    """-1 or +1 when a direction word binds to the number at text[start:end], else 0."""
    before = _DIRECTION_BEFORE.search(text[max(0, start - CUE_WINDOW) : start])
    if before is None:
        after = _DIRECTION_AFTER.match(text[end : end + CUE_WINDOW // 3])
        return 0 if after is None else (-1 if after["down"] else 1)
    return -1 if before["down"] else 1


def find_quantities(text: str, limit: int | None = None) -> list[Quantity]:
    """Every date, year, amount and percentage in `text`, in reading order. With `limit`, the scan stops once
    more than `limit` are found (the caller only needs to know there are too many)."""
    text = normalize(text)
    masked = _mask(text, [m.span() for m in _NOT_QUANTITIES.finditer(text)])
    found: list[Quantity] = []
    for pattern in _DATES:
        spans = []
        for match in pattern.finditer(masked):
            date = _date(match)
            if date is not None:
                found.append(date)
                spans.append(match.span())
        masked = _mask(masked, spans)  # once per pattern: a later pattern cannot re-read a date
        if limit is not None and len(found) > limit:
            return sorted(found, key=lambda q: q.start)
    table = _TABLE_SCALE.search(text)
    table_scale = {"thousands": 3, "millions": 6, "billions": 9}[table.group(1).lower()] if table else 0
    for match in _AMOUNT.finditer(masked):
        found.append(_amount(match, text, table_scale))
        if limit is not None and len(found) > limit:
            break
    return sorted(found, key=lambda q: q.start)


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with every span blanked, built in one pass (same length, so positions still refer to `text`)."""
    if not spans:
        return text
    parts, position = [], 0
    for start, end in spans:
        parts += [text[position:start], " " * (end - start)]
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _date(match: re.Match[str]) -> Quantity | None:
    parts = match.groupdict()
    year = int(parts["year"])
    year += 2000 if year < 100 else 0  # FY24
    month = int(parts["month"]) if parts.get("month") else _month_number(parts.get("mon"))
    day = int(parts["day"]) if parts.get("day") else 0
    try:
        datetime.date(year, month or 1, day or 1)
    except ValueError:
        return None
    precision = DAY if day else MONTH if month else YEAR
    value = float(year * 10000 + month * 100 + day)
    return Quantity(value, "date", precision, match.group().strip(), match.start(), match.end(), precision)


_MONTH_PREFIXES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _month_number(name: str | None) -> int:
    return _MONTH_PREFIXES.index(name[:3].lower()) + 1 if name else 0


def _amount(match: re.Match[str], text: str, table_scale: int) -> Quantity:
    start, end = match.span()
    digits = match["digits"].replace(",", "")
    unit = " ".join((match["unit"] or "").lower().split())
    scale_name = (match["word"] or match["letter"] or "").lower()
    currency_name = (match["cur"] or match["cur2"] or "").strip().lower()
    explicit_minus = match["sign"] == "-" or match["sign2"] is not None
    parenthesised = bool((match["open"] or match["open2"]) and (match["close"] or match["close0"]))
    written = match.group().strip()
    if not parenthesised:
        written = written.strip("() ")

    is_bare = not (unit or scale_name or currency_name or match["sign"] or match["sign2"])
    if is_bare and re.fullmatch(r"\d{4}", match["digits"]) and 1900 <= int(digits) <= 2100:
        return Quantity(int(digits) * 10000.0, "date", YEAR, written, start, end, YEAR)

    decimals = len(digits.partition(".")[2])
    trailing_zeros = 0 if decimals or not digits.strip("0") else len(digits) - len(digits.rstrip("0"))
    if unit:  # a percentage: the unit fixes the scale
        exponent = -2 if unit.startswith(("bp", "basis")) else 0
        kind: Kind = "percent"
    elif match["times"]:  # a multiple is never in a table's scale
        exponent, kind = 0, "number"
    else:
        exponent = _SCALES[scale_name] if scale_name else table_scale
        kind = "money" if currency_name else "number"

    value = Decimal(digits).scaleb(exponent)
    direction = 0 if explicit_minus or match["sign"] == "+" else _direction(text, start, end)
    negative = explicit_minus or direction < 0 or (parenthesised and direction == 0)
    cue = not explicit_minus and direction == 0 and _NEGATIVE_CUE.search(text[max(0, start - 40) : start]) is not None
    return Quantity(
        value=float(-value if negative else value),
        kind=kind,
        precision=float(Decimal(1).scaleb(exponent - decimals)),
        text=written,
        start=start,
        end=end,
        loose_precision=float(Decimal(1).scaleb(exponent - decimals + trailing_zeros)),
        currency=_CURRENCIES.get(currency_name) if kind == "money" else None,
        sign_in_words=(parenthesised and direction == 0) or cue,
        stated_sign="symbol" if match["sign"] or match["sign2"] else "words" if direction else "",
    )
