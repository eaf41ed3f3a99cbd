"""Grounding: do the answer's figures appear in the documents this session parsed? Pure; the verify route
looks up the documents (finsec/grounder.py).

The rule:
- Figures are the amounts, plain numbers and percentages that `find_quantities` reads in the answer. Dates and
  years are not figures. They name the period the question asked about, and every filing is full of them.
- A figure appears in a text when some number written there, read at some scale, has the figure's value to
  within half the figure's last written digit: |n x s - |v|| <= p / 2, where v is the figure's value and p the
  place value of its last written digit. Amounts and plain numbers try the scales 1, thousand, million and
  billion, because a table "(in millions)" writes $115.9 billion as "115,877" (115.877 billion is 115.9 at the
  1e8 place). Percentages try 1 and 1/100 ("50 basis points" for 0.5%). Signs are ignored: "(5.0)" states
  $5.0 million as well as "5.0" does.
  - "$115.9 billion" is grounded by "115,877", "115.9" or "115,877,000,000", but not by "116": a text less
    precise than the figure cannot state its last digit.
  - "$120 billion" is not grounded by "115,877": 115.877 billion is not 120 at the billions place.
  - Zeros the figure adds do not make it more precise than the text: "$6.080" and "51.0%" are grounded by
    "6.08" and "51%".
  - A number followed by "%" or "percent" in the text grounds only percentages, never an amount.
- The answer is grounded when every figure appears in some document. With no figure to check (a name, a date,
  a yes or no), grounding is null: there is nothing to check. The grader alone grades such an answer.
- A derived figure is ungrounded unless the filing states it: a change or a ratio computed from two stated
  figures appears in no text. Grounded means stated, not derivable.
- Figures whose digits are common (a single digit) are found in almost any filing. Grounding catches invented
  amounts; it does not prove that an answer is correct.
- Bounded work. The answer's figures are read once, with the grader's cap: an answer with more than
  `MAX_FIGURES` figures is not grounded. A text's numbers are indexed once per text (`FigureIndex`, kept by the
  caller per digest), sorted by magnitude, so each figure costs a binary search per scale and text, done for all
  the answer's figures at once.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

import numpy as np

from finsec.grading.numbers import Quantity, find_quantities

__all__ = [
    "answer_figures",
    "FigureIndex",
    "ground",
    "Grounding",
    "MAX_FIGURE_CHARS",
    "MAX_FIGURES",
    "MAX_LISTED",
    "NOT_CHECKED",
    "UNGROUNDED",
]

UNGROUNDED = "ungrounded"  # the failure_kind of an answer require_grounded_answer refuses (failure_kinds.py names
# it finance_sec_search:ungrounded)
MAX_FIGURES = 2_000  # as the grader's MAX_QUANTITIES: more is not an answer
MAX_LISTED = 8  # ungrounded figures named in a row
MAX_FIGURE_CHARS = 40  # each as written, cut to this
_AMOUNT_SCALES = (1.0, 1e3, 1e6, 1e9)
_PERCENT_SCALES = (1.0, 0.01)
_EPSILON = 1e-9  # relative slack for binary floating point at exact boundaries

# A number as a text writes it: "391,035", "1.08", "0.584", with a flag for a following percent sign. Digits glued
# to a word ("FY2024", "Q4") are not numbers of the text.
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w])(\s*(?:%|percent))?", re.I)


@dataclass(frozen=True)
class Grounding:
    """What a verify row reports: null when there was nothing to check, else whether every figure appeared, and
    the figures that did not (as written, capped in count and length)."""

    grounded: bool | None = None
    ungrounded_figures: list[str] = field(default_factory=list)

    def explanation(self) -> str:
        if not self.ungrounded_figures:
            return f"ungrounded: the answer states more than {MAX_FIGURES:,} figures, too many to check"
        return (
            f"ungrounded: no document this session stored states {', '.join(self.ungrounded_figures)} (parse "
            "the filing and take the figure from it)"
        )


NOT_CHECKED = Grounding()


def answer_figures(answer: str) -> list[Quantity]:
    """The figures of an answer, in reading order; more than MAX_FIGURES when there are too many to check."""
    return [q for q in find_quantities(answer, limit=MAX_FIGURES) if q.kind != "date"]


class FigureIndex:
    """Every number of one text, by magnitude, and how many of them (up to each) no percent sign follows."""

    def __init__(self, text: str):
        values, percents = [], []
        for match in _NUMBER.finditer(text):
            values.append(float(match.group(1).replace(",", "")))
            percents.append(match.group(2) is not None)
        order = np.argsort(np.array(values, dtype=np.float64), kind="stable")
        self.values = np.array(values, dtype=np.float64)[order]
        amounts = ~np.array(percents, dtype=bool)[order]
        self._amounts_before = np.concatenate([[0], np.cumsum(amounts, dtype=np.int32)])  # counts in a range: O(1)

    @property
    def nbytes(self) -> int:
        return sys.getsizeof(self) + self.values.nbytes + self._amounts_before.nbytes

    def stated(self, figures: list[Quantity]) -> np.ndarray:
        """Which of `figures` the text states (the rule in the module docstring), all figures at once."""
        sizes = np.array([abs(f.value) for f in figures], dtype=np.float64)
        slacks = np.array([f.precision / 2 for f in figures]) + _EPSILON * np.maximum(sizes, 1.0)
        percent = np.array([f.kind == "percent" for f in figures], dtype=bool)
        found = np.zeros(len(figures), dtype=bool)
        with np.errstate(invalid="ignore"):  # a figure too big for a float is inf: it matches nothing
            for scales, asked in ((_PERCENT_SCALES, percent), (_AMOUNT_SCALES, ~percent)):
                for scale in scales:
                    low = np.searchsorted(self.values, (sizes - slacks) / scale, side="left")
                    high = np.searchsorted(self.values, (sizes + slacks) / scale, side="right")
                    amounts = self._amounts_before[high] - self._amounts_before[low] > 0  # "5.0%" is no $5.0 million
                    found |= asked & np.where(percent, high > low, amounts)
        return found


def ground(figures: list[Quantity], indexes: list[FigureIndex]) -> Grounding:
    """Whether every figure appears in one of the indexed texts (the rule in the module docstring)."""
    if not figures:
        return NOT_CHECKED
    if len(figures) > MAX_FIGURES:
        return Grounding(False, [])
    found = np.zeros(len(figures), dtype=bool)
    for index in indexes:
        found |= index.stated(figures)
    missing = dict.fromkeys(
        f.text[:MAX_FIGURE_CHARS] for f, ok in zip(figures, found, strict=False) if not ok
    )  # reading order
    return Grounding(not missing, list(missing)[:MAX_LISTED])
