"""When does one quantity state another: kind, currency, tolerance and precision (rules in deterministic.py).

Also the answer's quantities indexed by kind and magnitude (`Offered`), so an expected quantity is compared only with
the values inside its tolerance window: the work stays linear in the answer however many values it holds.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

from finsec.grading.numbers import Quantity

__all__ = [
    "agrees",
    "as_number",
    "compatible",
    "family",
    "listing",
    "MAX_LISTED",
    "Offered",
    "reach",
    "required",
    "RUBRIC_PERCENT_POINTS",
    "RUBRIC_RELATIVE",
]

RUBRIC_RELATIVE = 0.01  # dollar amounts and ratios: +-1%
RUBRIC_PERCENT_POINTS = 0.1  # percentages: +-0.1 pp
MAX_LISTED = 6  # values named in an explanation
_EPSILON = 1e-9  # relative slack for binary floating point at exact boundaries


def family(quantity: Quantity) -> str:
    return "amount" if quantity.kind in ("money", "number") else quantity.kind


def compatible(expected: Quantity, offered: Quantity) -> bool:
    """Could `offered` be a statement of `expected` at all (same kind of thing, same currency)?"""
    if family(expected) != family(offered):
        return False
    if expected.kind == "date":
        return expected.is_year or not offered.is_year  # a bare year cannot state a full date
    return not (expected.currency and offered.currency and expected.currency != offered.currency)


def _magnitudes_only(expected: Quantity, offered: Quantity) -> bool:
    """Opposite signs that may still agree: one side's sign is uncertain, or the expected states no sign and the
    answer states the change in words ("a decrease of $3.4 million" for "$3.4 million")."""
    if expected.sign_in_words or offered.sign_in_words:
        return True
    return not expected.stated_sign and offered.stated_sign == "words"


def agrees(expected: Quantity, offered: Quantity) -> bool:
    """Whether a compatible `offered` states `expected`, under the rules of deterministic.py."""
    if expected.kind == "date":
        step = expected.precision
        return offered.precision <= step and offered.value // step == expected.value // step
    want, got = expected.value, offered.value
    if (want < 0) != (got < 0) and _magnitudes_only(expected, offered):
        want, got = abs(want), abs(got)
    gap = abs(want - got)
    slack = _EPSILON * max(abs(want), abs(got), 1.0)
    coarser = max(expected.precision, offered.loose_precision)
    return gap <= coarser / 2 + slack and gap <= reach(expected) + slack


def reach(expected: Quantity) -> float:
    """The widest gap `agrees` can accept for `expected` (its tolerance, or half its last digit)."""
    tolerance = RUBRIC_PERCENT_POINTS if expected.kind == "percent" else RUBRIC_RELATIVE * abs(expected.value)
    return max(tolerance, expected.precision / 2)


def as_number(year: Quantity) -> Quantity:
    """A bare year read back as the integer it is written as, for an expected count such as "2,000 stores"."""
    value = year.value // 10000
    return Quantity(value, "number", 1.0, year.text, year.start, year.end, 1.0)


def required(quantities: list[Quantity]) -> list[Quantity]:
    """The expected quantities an answer must state: dates are context when amounts or percentages are present."""
    facts = [q for q in quantities if q.kind != "date"]
    return facts or quantities


def listing(quantities: list[Quantity]) -> str:
    shown = ", ".join(q.text for q in quantities[:MAX_LISTED])
    return shown + (", ..." if len(quantities) > MAX_LISTED else "")


class Offered:
    """The answer's quantities indexed by family and magnitude (dates by value)."""

    def __init__(self, offered: list[Quantity]):
        self.offered = offered
        columns: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for i, q in enumerate(offered):
            columns[family(q)].append((q.value if q.kind == "date" else abs(q.value), i))
            if q.is_year:  # "2024 stores" can state the count 2,024
                columns["year number"].append((q.value // 10000, i))
        self._columns = {name: sorted(column) for name, column in columns.items()}
        self._keys = {name: [k for k, _ in column] for name, column in self._columns.items()}
        self.comparisons = 0

    def _window(self, column: str, low: float, high: float) -> list[int]:
        keys = self._keys.get(column)
        if not keys:
            return []
        return [i for _, i in self._columns[column][bisect.bisect_left(keys, low) : bisect.bisect_right(keys, high)]]

    def candidates(self, expected: Quantity) -> list[Quantity]:
        """Every compatible answer quantity (for explanations): capped, unsorted."""
        out = [q for q in self.offered if compatible(expected, q)][:MAX_LISTED]
        if expected.kind == "number" and len(out) < MAX_LISTED:
            out += [as_number(q) for q in self.offered if q.is_year][: MAX_LISTED - len(out)]
        return out

    def agreeing(self, expected: Quantity) -> list[int]:
        """Indices of the answer quantities that state `expected` (rules of `agrees`)."""
        if expected.kind == "date":
            step = expected.precision
            low = expected.value // step * step
            indices = self._window("date", low, low + step - 1e-6)
            pairs = [(i, self.offered[i]) for i in indices]
        else:
            widest = reach(expected) * (1 + 1e-6) + 1e-9 * max(abs(expected.value), 1.0)
            low, high = abs(expected.value) - widest, abs(expected.value) + widest
            pairs = [(i, self.offered[i]) for i in self._window(family(expected), low, high)]
            if expected.kind == "number":
                pairs += [(i, as_number(self.offered[i])) for i in self._window("year number", low, high)]
        self.comparisons += len(pairs)
        return [i for i, q in pairs if compatible(expected, q) and agrees(expected, q)]
