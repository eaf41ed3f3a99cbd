"""The shotgun guard: an answer that offers other values beside the expected one does not commit to it.

A *rival* is an answer value of a compatible kind that matches no expected value and is near one: an amount or
percentage within a factor of `NEAR_FACTOR`, any date at least as specific, or the same digits at another scale
("$11.6 billion" or "$115.9 million" beside "$115.9 billion", within the 1% rubric). A negated rival ("51%, not
49%") offers nothing, and a per-unit figure ("$0.05 per share") is another measure. The answer hedges (rules as
in deterministic.py's docstring) when:
- a rival sits next to a matching value with only punctuation or hedge words between ("$110B, $115.9B",
  "$115.9B-$120B"), or with an "or" among the words between, or as a range ("between $115.9B and $120B"); "from X
  to Y" is a change, not a range; "respectively" pairs values with labels instead;
- any value of a compatible kind is joined to a matching one by nothing but "or" (and hedge words, and the unit
  both repeat): "$115.9 billion or $11.6 billion", "164,000 or 50,000 employees"; a per-unit figure ("$5.0 million,
  or $0.05 per share") is another measure;
- a rival is introduced or followed by a hedge cue (commitment.py): "it might be $120 billion", "$120 billion is
  also possible"; or the matching value is offered as one possibility ("51% or something else");
- two values that state different expected values are joined by "or" ("2024: 24.1% or 14.7%");
- there are more than `MAX_RIVALS_PER_EXPECTED` rivals per expected value of that kind, however labelled.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import defaultdict
from collections.abc import Callable

from finsec.grading.commitment import ALTERNATIVE_WORDS, hedge_cue, offered_as_possible
from finsec.grading.matching import RUBRIC_RELATIVE, compatible, family, listing
from finsec.grading.numbers import Quantity

__all__ = ["hedged", "MAX_RIVALS_PER_EXPECTED", "NEAR_FACTOR", "Nearby"]

NEAR_FACTOR = 2.0  # an amount within this factor of an expected one is a rival answer for it
MAX_RIVALS_PER_EXPECTED = 2
_HEDGE_WORDS = frozenset(
    "or to either maybe possibly perhaps probably likely about approximately approx around roughly nearly almost circa"
    " ca alternatively otherwise".split()
)
_PER_UNIT = re.compile(r"\s*(?:per\b|a\s+(?:diluted\s+|basic\s+)?share\b|/\s*(?:diluted\s+)?share\b)", re.I)
_WORD = re.compile(r"[^\W_]+")


class Nearby:
    """The expected quantities by family and currency, sorted by magnitude and by mantissa."""

    def __init__(self, wanted: list[Quantity]):
        columns: dict[tuple[str, str | None], list[float]] = defaultdict(list)
        mantissas: dict[tuple[str, str | None], list[float]] = defaultdict(list)
        self._dates = {"year": False, "any": False}
        for e in wanted:
            if e.kind == "date":
                self._dates["any"] = True
                self._dates["year"] |= e.is_year
            elif e.value:
                columns[(family(e), e.currency)].append(abs(e.value))
                mantissas[(family(e), e.currency)].append(_mantissa(e.value))
        self._columns = {key: sorted(values) for key, values in columns.items()}
        self._mantissas = {key: sorted(values) for key, values in mantissas.items()}

    def _keys(self, offered: Quantity):
        for key in self._columns:
            name, currency = key
            if name == family(offered) and not (currency and offered.currency and currency != offered.currency):
                yield key

    def is_rival(self, offered: Quantity) -> bool:
        """Near an expected value it is compatible with, or the same digits at another scale."""
        if offered.kind == "date":
            return self._dates["year"] or (self._dates["any"] and not offered.is_year)
        size = abs(offered.value)
        if size == 0:
            return False
        for key in self._keys(offered):
            values = self._columns[key]
            k = bisect.bisect_left(values, size / NEAR_FACTOR * (1 - 1e-12))
            if k < len(values) and values[k] <= size * NEAR_FACTOR * (1 + 1e-12):
                return True
            if _near_mantissa(self._mantissas[key], _mantissa(size)):
                return True
        return False


def _mantissa(value: float) -> float:
    """The digits of a value, in [1, 10): 115.9e9 -> 1.159."""
    size = abs(value)
    return size / 10 ** math.floor(math.log10(size))


def _near_mantissa(sorted_mantissas: list[float], m: float) -> bool:
    for candidate in (m, m * 10, m / 10):  # 9.99 and 1.001 are neighbours across the decade
        k = bisect.bisect_left(sorted_mantissas, candidate * (1 - RUBRIC_RELATIVE))
        if k < len(sorted_mantissas) and sorted_mantissas[k] <= candidate * (1 + RUBRIC_RELATIVE):
            return True
    return False


def hedged(
    text: str,
    wanted: list[Quantity],
    offered: list[Quantity],
    agreements: dict[int, list[int]],
    negated: Callable[[int], str | None],
) -> str | None:
    """Why the answer hedges between values for an expected quantity, or None (rules in the module docstring).

    `agreements`: answer quantity -> the expected quantities it states; `negated(i)`: whether answer quantity i is
    denied (commitment.negation)."""
    nearby = Nearby(wanted)
    rivals = {
        i
        for i, q in enumerate(offered)
        if i not in agreements and nearby.is_rival(q) and not negated(i) and not _PER_UNIT.match(text, q.end)
    }  # "$0.05 per share" is another measure
    paired_list = re.search(r"\brespectively\b", text, re.I) is not None  # "A and B in 2024 and 2023, respectively"
    counts: dict[str, int] = defaultdict(int)
    for e in wanted:
        counts[family(e)] += 1
    for name, expected_count in counts.items():
        listed = [i for i, q in enumerate(offered) if family(q) == name]
        family_rivals = [i for i in listed if i in rivals]
        distinct = len({offered[i].value for i in family_rivals})
        if distinct > MAX_RIVALS_PER_EXPECTED * expected_count:
            return (
                f"too many alternative values: the answer lists {distinct} candidates besides the expected: "
                f"{listing([offered[i] for i in family_rivals])}"
            )
        for before, after in zip(listed, listed[1:], strict=False):
            if before in agreements and after in agreements:  # "2024: 24.1% or 14.7%" offers two parts' values
                if (
                    set(agreements[before]) != set(agreements[after])
                    and _joint(text, offered[before], offered[after]) == "or"
                ):
                    return (
                        f"hedged answer: {offered[before].text} and {offered[after].text} offered as alternatives (or)"
                    )
                continue
            if before not in agreements and after not in agreements:
                continue
            match, other = (before, after) if before in agreements else (after, before)
            joint = _joint(text, offered[before], offered[after])
            if joint is None or (paired_list and joint != "or"):
                continue
            if other in rivals or (
                joint == "or" and _or_alternative(text, offered, match, other, wanted, agreements, negated)
            ):
                return (
                    f"hedged answer: {offered[before].text} and {offered[after].text} offered as alternatives ({joint})"
                )
    for i in sorted(rivals):
        cue = hedge_cue(text, offered[i].start, offered[i].end)
        if cue:
            return f"hedged answer: the answer also offers {offered[i].text} ('{cue}')"
    for i in sorted(agreements):  # "possibly $115.9 billion" alone hedges against nothing; "... or else" does
        cue = offered_as_possible(text, offered[i].start, offered[i].end)
        if cue:
            return f"hedged answer: {offered[i].text} is offered as one possibility ('{cue}')"
    return None


def _joint(text: str, first: Quantity, second: Quantity) -> str | None:
    """How two neighbouring values are joined: "or" (an alternative word between), "list" (only punctuation and
    hedge words), "range" ("between A and B"), or None (labels or prose between). Words that only repeat the
    first value's lead-in or the second's unit ("between an increase of X and an increase of Y", "X shares, Y
    shares") frame both values and are not counted."""
    lead = [w.casefold() for w in _WORD.findall(text[max(0, first.start - 60) : first.start])][-6:]
    unit = [w.casefold() for w in _WORD.findall(text[second.end : second.end + 30])][:3]
    words = [w.casefold() for w in _WORD.findall(text[first.end : second.start])]
    words = [w for w in words if w not in lead and w not in unit or w in ALTERNATIVE_WORDS or w == "to"]
    if any(word in ALTERNATIVE_WORDS for word in words):
        return "or"
    if words == ["and"] and "between" in lead:
        return "range"
    if all(word in _HEDGE_WORDS for word in words):
        return None if "to" in words and "from" in lead[-3:] else "list"  # "grew from X to Y" is a change
    return None


def _or_alternative(
    text: str,
    offered: list[Quantity],
    match: int,
    other: int,
    wanted: list[Quantity],
    agreements: dict[int, list[int]],
    negated: Callable[[int], str | None],
) -> bool:
    """A compatible value joined to the match by "or" alone (its unit may repeat), not a per-unit figure."""
    q = offered[other]
    if negated(other) or _PER_UNIT.match(text, q.end) or not any(compatible(wanted[e], q) for e in agreements[match]):
        return False
    first, second = sorted((offered[match], q), key=lambda x: x.start)
    unit = {w.casefold() for w in _WORD.findall(text[second.end : second.end + 30])[:3]}
    words = [w.casefold() for w in _WORD.findall(text[first.end : second.start])]
    return all(w in _HEDGE_WORDS or w in ALTERNATIVE_WORDS or w in unit for w in words)
