"""What a question asks for, read from its words: the company's ticker, the kind of answer (an amount, a count,
a percentage change), the period, the filing that reports it, and the words that name the figure."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Question", "read_question", "stem", "stems", "word_stems"]

_TICKER = re.compile(r"\(([A-Z][A-Z0-9.\-]{0,9})\)")
_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_WRITTEN_DATE = re.compile(r"\b([A-Z][a-z]{2,8})\.?\s+(\d{1,2}),\s+((?:19|20)\d{2})\b")  # "June 28, 2025"
_YEAR = re.compile(r"\b(19\d{2}|20\d{2})\b")
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# Words that say what kind of question it is or who is asked, not which figure: they never pick a row.
_STOP = frozenset(
    "a an the of for in on at to by from with and or its their it is was were be been did do does what which how "
    "much many report reported announce announced release results company end during fiscal year years ended as "
    "compared change changed percentage percent".split()
)
_QUARTER_WORDS = (
    "quarter ended",
    "quarterly period",
    "three months ended",
    "six months ended",
    "nine months ended",
    "fiscal quarter",
)


@dataclass(frozen=True)
class Question:
    text: str
    ticker: str | None
    kind: str  # "amount", "count" or "percent_change"
    years: tuple[int, ...]  # in the order the question names them
    date: str | None  # a full YYYY-MM-DD period end, when given
    form: str  # the filing that answers it: 10-K, 10-Q or 8-K
    keywords: frozenset[str]  # stems of the words that name the figure
    span: str | None = None  # "year", "quarter", "six_months", "nine_months" or "instant": the column asked for
    dates: tuple[str, ...] = ()  # every YYYY-MM-DD the question names, in its order
    parts: tuple[str, ...] = ()  # a ratio's figures: numerator, denominator
    percent: bool = False  # a ratio asked as a percentage (a margin, a rate)
    excluded: frozenset[str] = frozenset()  # "excluding the current portion": stems a row must not name

    @property
    def year(self) -> int | None:
        """The period asked about: the first year named ("fiscal 2024 compared with 2023" asks about 2024)."""
        if self.date:
            return int(self.date[:4])
        return self.years[0] if self.years else None


def stem(word: str) -> str:
    """A crude stem, enough to match "revenues" with "revenue" and "provide" with "provided"."""
    word = word.lower()
    # "operations" and "operating" are one stem: "Income from operations" is operating income
    for suffix, replacement in (
        ("ations", "at"),
        ("ation", "at"),
        ("ies", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
        ("e", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + replacement
    return word


def stems(text: str) -> set[str]:
    """Stems of the words of `text`, hyphenated words also split ("fourth-quarter": fourth, quarter)."""
    out: set[str] = set()
    for word in _WORD.findall(text.lower()):
        for part in {word, *word.split("-")}:
            if part and not part.isdigit() and part not in _STOP:
                out.add(stem(part))
    return out


def read_question(text: str, ticker_hint: str | None = None, form_hint: str | None = None) -> Question:
    text = _written_dates_as_iso(text)
    lowered = text.lower()
    ticker_match = _TICKER.search(text)
    ticker = ticker_match.group(1) if ticker_match else ticker_hint
    date_match = _DATE.search(text)
    years = tuple(int(y) for y in _YEAR.findall(_DATE.sub(" ", text)))
    if date_match:
        years = (int(date_match.group(1)), *years)
    dates = tuple(m.group(0) for m in _DATE.finditer(text))
    parts = _ratio_parts(text)
    if parts:
        kind = "ratio"  # "gross margin (gross profit as a percentage of total revenue)": two figures, divided
    elif re.search(r"\bon what date\b|\bwhat date\b", lowered):
        kind = "date"  # "On what date did the fiscal year ... end?"
    elif re.search(r"\bby how much did\b.*\bchange from\b", lowered):
        kind = "change"  # "By how much did X change from <then> to <now>?": an amount, up or down
    elif ("percent" in lowered or "%" in lowered) and any(
        w in lowered for w in ("change", "grow", "increase", "decrease", "decline")
    ):
        kind = "percent_change"
    elif "how many" in lowered and re.search(r"\bshares\b", lowered):
        kind = "shares"  # a number of shares: a cover fact or a weighted average in a table
    elif "how many" in lowered or any(word in lowered for word in ("headcount", "employees")):
        kind = "count"  # a number of things, never money: "What was the headcount", "employees at year end"
    else:
        kind = "amount"
    form = _form(lowered, form_hint)
    # The company's name and ticker say who, not what: they are left out of the keywords.
    keywords = stems(_period_words_removed(_strip_company(text)))
    excluded = _excluded(text)
    keywords -= excluded
    if "headcount" in lowered:  # filings state it as "N full-time employees"
        keywords |= stems("employees")
    # the period asked about: the last date of a change ("from <then> to <now>"), else the first one named
    date = dates[-1] if kind == "change" and dates else date_match.group(0) if date_match else None
    percent = kind == "ratio" and bool(re.search(r"percent|margin|\brate\b", lowered))
    return Question(
        text,
        ticker,
        kind,
        years,
        date,
        form,
        frozenset(keywords),
        _span(lowered, kind),
        dates,
        parts,
        percent,
        frozenset(excluded),
    )


_EXCLUDING = re.compile(
    r"\b(?:excluding|excludes|exclusive of)\b(.*?)(?=\b(?:as of|for the|during|"
    r"in|at)\b|[?,;)]|$)",
    re.I,
)


def _excluded(text: str) -> set[str]:
    """ "long-term debt, excluding the current portion": the words after "excluding" name what the figure leaves
    out, so a row that names them ("Current liabilities: Term debt") is another figure."""
    match = _EXCLUDING.search(text)
    return stems(match.group(1)) if match else set()


def word_stems(text: str) -> set[str]:
    """Stems of the words of `text`, hyphenated words kept whole: "non-current" is not "current"."""
    return {stem(word) for word in _WORD.findall(text.lower())}


_SPANS = (
    ("three months", "quarter"),
    ("quarter ended", "quarter"),
    ("six months", "six_months"),
    ("nine months", "nine_months"),
    ("twelve months", "year"),
    ("fiscal year ended", "year"),
    ("year ended", "year"),
)


def _span(lowered: str, kind: str) -> str | None:
    """The length of the period asked about: a column of a statement is one of these."""
    for words, span in _SPANS:
        if words in lowered:
            return span
    if re.search(r"\bas of\b", lowered) or (kind == "change" and re.search(r"from \d{4}-\d{2}-\d{2}", lowered)):
        return "instant"  # a balance: "as of September 28, 2024", "from September 30, 2023 to ..."
    return None


# "<figure> as a percentage of <figure>", "(<figure> over <figure>)"
_RATIO = re.compile(
    r"\(([^()]+?) (?:as a percentage of|over|divided by|to) ([^()]+?)\)|"
    r"(?:'s|\bthe) ([a-z][^()?]*?) as a percentage of ([a-z][^()?]*?)(?= for | as of |\?|$)",
    re.I,
)


def _ratio_parts(text: str) -> tuple[str, ...]:
    match = _RATIO.search(text)
    if not match:
        return ()
    top, bottom = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    return top.strip(), bottom.strip()


def _period_words_removed(text: str) -> str:
    """The question without its periods ("for the three months ended June 28, 2025"): they pick a column, and
    their words ("months", "June") would otherwise count toward a row's label."""
    text = re.sub(r"\b(?:for |during )?(?:the )?(?:three|six|nine|twelve) months ended\b", " ", text, flags=re.I)
    text = re.sub(r"\b[A-Z][a-z]{2,8}\.? \d{1,2}, (?:19|20)\d{2}\b", " ", text)
    return _DATE.sub(" ", text)


def _written_dates_as_iso(text: str) -> str:
    """ "the quarter ended June 28, 2025" reads as "... 2025-06-28": one form of date for the rest to read."""
    from finsec_client.policies.passages import MONTHS

    def iso(match: re.Match) -> str:
        month = MONTHS.get(match.group(1).lower())
        return f"{match.group(3)}-{month:02d}-{int(match.group(2)):02d}" if month else match.group(0)

    return _WRITTEN_DATE.sub(iso, text)


def _form(lowered: str, hint: str | None) -> str:
    if "8-k" in lowered or "press release" in lowered or "results release" in lowered:
        return "8-K"
    if "10-q" in lowered or any(w in lowered for w in _QUARTER_WORDS):
        return "10-Q"
    if "10-k" in lowered or "fiscal" in lowered or "annual" in lowered:
        return "10-K"
    return hint or "10-K"


def _strip_company(text: str) -> str:
    """The question without "Helixar Analytics Corp. (HLXR1)'s": the words before a ticker in parentheses, back to
    the question word or verb that precedes the name, are the company's name."""
    match = _TICKER.search(text)
    if not match:
        return text
    before = text[: match.start()]
    words = before.split()
    # keep the question's leading words up to the first capitalised word after them (the name's start)
    keep = []
    for i, word in enumerate(words):
        if i > 0 and word[:1].isupper():
            break
        keep.append(word)
    return " ".join(keep) + " " + re.sub(r"^'s\b", "", text[match.end() :].lstrip())
