"""Which way a stated value points: a loss or an income, a deficit or a surplus, an outflow or an inflow, a decrease
or an increase.

numbers.py already signs a change stated in words ("a decrease of $163 million" is -$163 million) and reads "-",
"+" and parentheses. This module adds the nouns that name a negative or a positive level, so "net income of $5.0
million" does not state "a net loss of $5.0 million". `Polarity.of(q)` is -1, 0 or +1:
- a sign the value states (an explicit "-" or "+", or a direction word that numbers.py bound) is its polarity;
- else a nature word bound to it: a negative one (loss, deficit, outflow, shortfall, "used in", "negative") gives -1; a
  positive one (income, profit, earnings, surplus, inflow, "provided by", "generated") gives +1, or -1 when the
  value is parenthesised ("net income of $(5.0) million" is a loss, the accounting way);
- else 0: a bare or only-parenthesised value says nothing (parentheses are also how prose adds an aside), and the
  question says which way.
A nature word binds to the value after it in its sentence, with at most `MAX_WORDS` words and no other amount between
("net loss for fiscal 2024 was $5.0 million"), or to the value right before it ("$5.0 million net loss",
"-$5.0 million loss"). Labels that name both ways ("income (loss)", "provided by (used in)", "gains and losses") and
"income tax" name neither.
"""

from __future__ import annotations

import bisect
import re

from finsec.grading.numbers import Quantity

__all__ = ["MAX_WORDS", "Polarity", "WINDOW"]

MAX_WORDS = 6
WINDOW = 80  # characters looked at before a value

_NEGATIVE = r"loss(?:es)?|deficits?|outflows?|shortfalls?|used\s+(?:in|for)|negative"
_POSITIVE = r"income|profits?|earnings|surplus(?:es)?|inflows?|provided\s+(?:by|from)|generated"
_NATURE = re.compile(rf"\b(?:(?P<neg>{_NEGATIVE})|(?P<pos>{_POSITIVE}))\b", re.I)
_NEUTRAL = re.compile(
    r"""\b(?:income|profits?|earnings|gains?)\s*[(/]\s*(?:loss(?:es)?)\s*\)?
      | \(?\s*\bloss(?:es)?\s*\)?\s*/?\s*(?:income|profits?|earnings)\b
      | \bprovided\s+by\s*[(/]\s*used\s+in\s*\)? | \(?\s*\bused\s+in\s*\)?\s*/?\s*provided\s+by\b
      | \b(?:gains?|income|profits?)\s+(?:and|or)\s+loss(?:es)?\b | \bloss(?:es)?\s+(?:and|or)\s+(?:gains?|income)\b
      | \bincome\s+tax(?:es)?\b""",
    re.I | re.X,
)
_SENTENCE_BREAK = re.compile(r"[.!?](?=\s)|[;\n|]")
_AFTER = re.compile(
    r"\s*\)?\s*(?:(?:of|in|a|an|the|net|total|operating|pre-?tax|after-?tax)\s+)*\(?\s*"
    rf"(?:(?P<neg>{_NEGATIVE})|(?P<pos>{_POSITIVE}))\b",
    re.I,
)
_WORDS = re.compile(r"[^\W\d_]+")


def _blank(text: str) -> str:
    """Paired labels blanked, same length, so positions still refer to the text."""
    return _NEUTRAL.sub(lambda m: " " * len(m.group()), text)


class Polarity:
    """The polarity of each quantity of one text (rules in the module docstring)."""

    def __init__(self, text: str, quantities: list[Quantity]):
        self._text = text
        amounts = [q for q in quantities if q.kind != "date"]  # a year between ("for fiscal 2024") does not block
        self._starts = [q.start for q in amounts]
        self._ends = [q.end for q in amounts]
        self._memo: dict[int, tuple[int, str]] = {}

    def of(self, q: Quantity) -> int:
        return self.explained(q)[0]

    def explained(self, q: Quantity) -> tuple[int, str]:
        """(polarity, the words that gave it) for one quantity of the text."""
        if q.start not in self._memo:
            self._memo[q.start] = self._read(q)
        return self._memo[q.start]

    def _read(self, q: Quantity) -> tuple[int, str]:
        if q.stated_sign and q.value:
            return (1 if q.value > 0 else -1), q.text
        nature, word = self._nature(q)
        if nature > 0 and q.sign_in_words and q.value < 0:  # "net income of $(5.0) million"
            return -1, f"{word} {q.text}"
        return nature, word

    def _nature(self, q: Quantity) -> tuple[int, str]:
        after = _AFTER.match(_blank(self._text[q.end : q.end + 40]))
        if after is not None:
            return (-1 if after["neg"] else 1), after.group().strip(" ()")
        k = bisect.bisect_left(self._starts, q.start)
        floor = max(q.start - WINDOW, self._ends[k - 1] if k else 0, 0)
        window = _blank(self._text[floor : q.start])
        breaks = list(_SENTENCE_BREAK.finditer(window))
        if breaks:
            window = window[breaks[-1].end() :]
        found = None
        for found in _NATURE.finditer(window):  # noqa: B007 (the last match is the one wanted)
            pass
        if found is None or len(_WORDS.findall(window[found.end() :])) > MAX_WORDS:
            return 0, ""
        return (-1 if found["neg"] else 1), found.group()
