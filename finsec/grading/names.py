"""An answer's words for the phrase rules of text.py: tokens with positions and sentences, and known places.

Words are case-folded, "U.S." reads "us" and "McDonald's" "mcdonalds", a final plural "s" is dropped; an
identifier ("001-36743") is one word. A sentence ends at ".", "!", "?" or a newline, but not at the dot of an
abbreviation ("Inc.", "U.S.") before a lowercase word. `kind_of` knows the US states and a few countries, so that
"Delaware, USA" reads as an address and "nevada" as a place even in lowercase.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from finsec.grading.numbers import normalize

__all__ = [
    "Answer",
    "ARTICLES",
    "count_words",
    "FUNCTION_WORDS",
    "IDENTIFIER",
    "kind_of",
    "LIST_PUNCT",
    "norm",
    "Token",
    "words",
]

# "001-36743" is one word, of at most nine numbers (a longer chain is words): bounded and possessive, so that
# "10-10-10-..." is not read to its end again from every number in it.
_TOKEN = re.compile(r"\d++(?:-\d++){1,8}+(?![\w-])|[^\W_]+(?:['’.][^\W_]+)*")
IDENTIFIER = re.compile(r"\d+(?:-\d+)+")  # a file number or tax id: digits joined by hyphens
ARTICLES = frozenset({"a", "an", "the"})
FUNCTION_WORDS = frozenset(
    """a an the this that these those it its it's they their them he she his her we our i my you your is are was
    were be been being am has have had do does did will would shall should can could may might must of in on at by
    for from to with without into onto over under about as than then so such also too very just only even still
    again already both each either neither nor or and but if because while whereas although though since until
    unless which who whom whose what when where why how there here not no yes ok okay per via another other some
    any all more most less maybe perhaps possibly probably likely alternatively otherwise instead rather namely
    currently previously formerly now answer final correct note else""".split()
)
_ABBREVIATIONS = frozenset({"inc", "corp", "co", "ltd", "no", "vs", "mr", "ms", "dr", "jr", "sr", "st"})
LIST_PUNCT = re.compile(r"[,;/|]")
_GLUE = re.compile(r"[ \t&'’.\-]*")


def norm(word: str) -> str:
    """A word as compared: case-folded, apostrophes and dots dropped, a final plural "s" dropped."""
    w = word.casefold().replace("’", "").replace("'", "").replace(".", "")
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def _names(text: str) -> frozenset[str]:
    return frozenset(" ".join(norm(w) for w in name.split()) for name in text.split(","))


_STATES = _names(
    """alabama, alaska, arizona, arkansas, california, colorado, connecticut, delaware, florida, georgia, hawaii,
    idaho, illinois, indiana, iowa, kansas, kentucky, louisiana, maine, maryland, massachusetts, michigan, minnesota,
    mississippi, missouri, montana, nebraska, nevada, new hampshire, new jersey, new mexico, new york, north carolina,
    north dakota, ohio, oklahoma, oregon, pennsylvania, rhode island, south carolina, south dakota, tennessee, texas,
    utah, vermont, virginia, washington, west virginia, wisconsin, wyoming, district of columbia"""
)
_COUNTRIES = _names(
    """us, usa, united states, united states of america, america, canada, mexico, china, japan, ireland,
    netherlands, united kingdom, uk, england, bermuda, cayman islands, israel, india, germany, france, taiwan,
    singapore"""
)


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    norm: str  # compared with the expected answer's words
    low: str  # case-folded as written: function words, joiners and cues are looked up by this
    capital: bool
    content: bool  # not a function word, and no digit unless an identifier


def words(text: str) -> list[str]:
    """The comparable words of a text (the module's rules), articles dropped."""
    return [w for w in (norm(m.group()) for m in _TOKEN.finditer(normalize(text))) if w not in ARTICLES]


class Answer:
    """An answer tokenized once: words with positions, sentence numbers, content words per sentence."""

    def __init__(self, text: str):
        self.text = text
        self.cased = re.search(r"[A-Z]", text) is not None and re.search(r"[a-z]", text) is not None
        tokens = []
        for m in _TOKEN.finditer(text):
            low = m.group().casefold()
            digits = any(c.isdigit() for c in low)
            content = low not in FUNCTION_WORDS and (not digits or IDENTIFIER.fullmatch(low) is not None)
            tokens.append(Token(m.start(), m.end(), norm(low), low, m.group()[0].isupper(), content))
        self.tokens = tokens
        self.starts = [t.start for t in tokens]
        sentence, numbers = 0, []
        for k, t in enumerate(tokens):
            if k:
                gap = text[tokens[k - 1].end : t.start]
                stop = re.match(r"[)\]\"'’]*([.!?])", gap)
                abbreviation = tokens[k - 1].norm in _ABBREVIATIONS or "." in tokens[k - 1].low  # "Inc.", "U.S."
                if "\n" in gap or (stop and (stop.group(1) != "." or not abbreviation or t.capital)):
                    sentence += 1
            numbers.append(sentence)
        self.sentences = numbers
        self.content_in: Counter[int] = Counter(n for n, t in zip(numbers, tokens, strict=False) if t.content)

    def same_sentence(self, a: int, b: int) -> bool:
        n = len(self.tokens)
        return 0 <= a < n and 0 <= b < n and self.sentences[a] == self.sentences[b]

    def glued(self, a: int, b: int) -> bool:
        """Neighbouring tokens with nothing but name glue (spaces, &, -, ') between them, in one sentence."""
        a, b = min(a, b), max(a, b)
        return (
            self.same_sentence(a, b)
            and _GLUE.fullmatch(self.text, self.tokens[a].end, self.tokens[b].start) is not None
        )

    def name_word(self, k: int) -> bool:
        t = self.tokens[k]
        return t.content and (t.capital or not self.cased)

    def phrase(self, a: int, b: int) -> str:
        return " ".join(self.text[self.tokens[a].start : self.tokens[b].end].split())


def kind_of(phrase: str) -> str:
    """ "state", "country" or "other", for a phrase of normalized words."""
    return "state" if phrase in _STATES else "country" if phrase in _COUNTRIES else "other"


def count_words(text: str, limit: int) -> int:
    """The number of words in `text`, counting no further than `limit` (an over-long answer stops early)."""
    return sum(1 for _ in zip(range(limit), _TOKEN.finditer(text), strict=False))
