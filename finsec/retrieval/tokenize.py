"""A tokenizer for financial text. `$1,234.5`, `12.5%`, `FY2023` and `10-K` stay one searchable token each;
possessives, dotted abbreviations (`I.R.S.`) and curly apostrophes are normalized; words are lightly
stemmed so `increased` finds `increase` and `revenues` finds `revenue`. Documents and queries share it."""

from __future__ import annotations

import functools
import re

__all__ = ["normalize", "stem", "STOPWORDS", "tokenize"]

_TOKEN = re.compile(
    r"""
    \d{1,2}-[a-z]\b                 # form names: 10-k, 8-k, 10-q
    | fy\d{2,4}                     # fiscal years
    | q[1-4]\b                      # quarters
    | \d[\d,]*(?:\.\d+)?            # numbers; commas go below
    | [a-z]+(?:'[a-z]+)?            # words
    """,
    re.VERBOSE,
)
_ABBREVIATION = re.compile(r"\b(?:[a-z]\.){2,}")  # i.r.s. -> irs, u.s. -> us
_POSSESSIVE = re.compile(r"'s\b")

STOPWORDS = frozenset(
    """a about above after all also an and any are as at be been before being below between both but by can
    could did do does during each for from had has have how i if in into is it its itself may might more most
    much must no nor not of off on once only or other our out over own per same shall should so some such than
    that the their them then there these they this those through to too under until up upon us very was we
    were what when where which while who whom why will with within would you your s""".split()
)


@functools.lru_cache(maxsize=1 << 16)  # a filing says the same words over and over
def stem(word: str) -> str:
    """A deliberately light suffix stripper: it only has to map a word's common forms to one token."""
    if not word.isalpha() or len(word) <= 4:
        return word
    if word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) > 6:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 5 or word.endswith(("ses", "xes", "zes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def normalize(text: str) -> str:
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    text = _ABBREVIATION.sub(lambda m: m.group(0).replace(".", ""), text)
    return _POSSESSIVE.sub("", text)


def tokenize(text: str) -> list[str]:
    tokens = []
    for token in _TOKEN.findall(normalize(text)):
        if token[0].isdigit():
            token = token.replace(",", "")
        elif token in STOPWORDS:
            continue
        tokens.append(stem(token))
    return tokens
