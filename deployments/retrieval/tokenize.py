"""A tokenizer for financial text: `$1,234.5`, `12.5%`, `FY2023` and `10-K` stay one searchable token each."""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""
    \d{1,2}-[a-z]\b                 # form names: 10-k, 8-k, 10-q
    | fy\d{2,4}                     # fiscal years
    | q[1-4]                        # quarters
    | \d[\d,]*(?:\.\d+)?            # numbers; commas go below
    | [a-z]+(?:'[a-z]+)?            # words
    """,
    re.VERBOSE,
)

STOPWORDS = frozenset(
    """a about above after all also an and any are as at be been before being below between both but by can
    could did do does during each for from had has have how i if in into is it its itself may might more most
    much must no nor not of off on once only or other our out over own per same shall should so some such than
    that the their them then there these they this those through to too under until up upon us very was we
    were what when where which while who whom why will with within would you your""".split()
)


def tokenize(text: str) -> list[str]:
    tokens = []
    for token in _TOKEN.findall(text.lower()):
        if token[0].isdigit() and "," in token:
            token = token.replace(",", "")
        if token not in STOPWORDS:
            tokens.append(token)
    return tokens
