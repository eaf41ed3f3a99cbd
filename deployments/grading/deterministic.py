"""The grader used when no LLM judge is configured: quantities compared as quantities, other answers as token sets.

It replaces NeMo Gym's substring fallback (contract §D.3), which rejects "$115.9 billion" for "$115,877 million" and
accepts "151%" for "51%". The tolerances follow the stock judge rubric (§D.4).

Rules:
- Every quantity in the expected answer must be matched by a quantity of a compatible kind in the answer: amounts with
  amounts (money or plain numbers, same currency when both name one), percentages with percentages, dates with dates.
  Dates and years in an expected answer that also has amounts or percentages are context ("... in FY2024") and are
  not required.
- Two amounts match when they agree at the coarser of their precisions (the finer rounds to the coarser) and, so that
  a very coarse answer cannot pass, the gap is within the rubric's tolerance: 1% of the expected amount, 0.1
  percentage point for percentages, or half the expected's own last digit if that is wider. The answer's integer
  trailing zeros count as rounding ("$116,000 million" is precise to 1e9); the expected's are taken at face value.
- A number without a scale word is read literally, never in the expected's unit: "$115,877" is dollars and does not
  match "$115,877 million". A table-style "(in millions)" in the answer does scale its bare numbers.
- Signs must agree unless one side is parenthesised or stated in words ("a loss of $2.7 billion"); then magnitudes are
  compared.
- A date matches when the answer is at least as specific and agrees to the expected's precision: "2024-12-31" matches
  "December 31, 2024"; "2024" does not; "December 31, 2024" matches the expected year "2024".
- Shotgun guard. A rival is an answer quantity of a compatible kind that matches no expected quantity and is near one
  (an amount or percentage within a factor of 2; any date at least as specific). The answer fails if (a) a rival sits
  next to a matching quantity with nothing but punctuation or hedge words between them ("$115.9B or $120B",
  "$110B, $115.9B"), unless the answer says "respectively"; or (b) it offers more than 2 rivals per expected
  quantity of that kind, however they are labelled. One labelled comparison ("up from $105.4B in 2023") passes.
- With no quantity in the expected answer: case-folded tokens, punctuation dropped, articles dropped, a final plural
  "s" dropped; every expected token must appear in the answer.
"""

from __future__ import annotations

import re

from deployments.grading.grader import Grade
from deployments.grading.numbers import Quantity, find_quantities, normalize

RUBRIC_RELATIVE = 0.01  # dollar amounts and ratios: +-1%
RUBRIC_PERCENT_POINTS = 0.1  # percentages: +-0.1 pp
NEAR_FACTOR = 2.0  # an amount within this factor of an expected one is a rival answer for it
MAX_RIVALS_PER_EXPECTED = 2
_HEDGE_WORDS = frozenset(
    "or to either maybe possibly perhaps probably likely about approximately approx around roughly nearly almost circa"
    " ca".split()
)
_ARTICLES = frozenset({"a", "an", "the"})
_EPSILON = 1e-9  # relative slack for binary floating point at exact boundaries


def _family(quantity: Quantity) -> str:
    return "amount" if quantity.kind in ("money", "number") else quantity.kind


def compatible(expected: Quantity, offered: Quantity) -> bool:
    """Could `offered` be a statement of `expected` at all (same kind of thing, same currency)?"""
    if _family(expected) != _family(offered):
        return False
    if expected.kind == "date":
        return expected.is_year or not offered.is_year  # a bare year cannot state a full date
    return not (expected.currency and offered.currency and expected.currency != offered.currency)


def agrees(expected: Quantity, offered: Quantity) -> bool:
    """Whether a compatible `offered` states `expected`, under the module's rules."""
    if expected.kind == "date":
        step = expected.precision
        return offered.precision <= step and offered.value // step == expected.value // step
    want, got = expected.value, offered.value
    if (want < 0) != (got < 0) and (expected.sign_in_words or offered.sign_in_words):
        want, got = abs(want), abs(got)
    gap = abs(want - got)
    slack = _EPSILON * max(abs(want), abs(got), 1.0)
    coarser = max(expected.precision, offered.loose_precision)
    tolerance = RUBRIC_PERCENT_POINTS if expected.kind == "percent" else RUBRIC_RELATIVE * abs(want)
    return gap <= coarser / 2 + slack and gap <= max(tolerance, expected.precision / 2) + slack


def _near(expected: Quantity, offered: Quantity) -> bool:
    if expected.kind == "date":
        return True
    low, high = sorted((abs(expected.value), abs(offered.value)))
    return low > 0 and high / low <= NEAR_FACTOR


def _as_number(year: Quantity) -> Quantity:
    """A bare year read back as the integer it is written as, for an expected count such as "2,000 stores"."""
    value = year.value // 10000
    return Quantity(value, "number", 1.0, year.text, year.start, year.end, 1.0)


def required(quantities: list[Quantity]) -> list[Quantity]:
    """The expected quantities an answer must state: dates are context when amounts or percentages are present."""
    facts = [q for q in quantities if q.kind != "date"]
    return facts or quantities


def compare(expected_answer: str, answer: str) -> tuple[bool, str]:
    """(passed, explanation) for one answer against the expected answer."""
    wanted = required(find_quantities(expected_answer))
    if not wanted:
        return _compare_text(expected_answer, answer)
    offered = find_quantities(answer)
    notes = []
    for expected in wanted:
        candidates = [q for q in offered if compatible(expected, q)]
        if expected.kind == "number":
            candidates += [_as_number(q) for q in offered if q.is_year]
        hit = next((q for q in candidates if agrees(expected, q)), None)
        if hit is None:
            if not candidates:
                return False, f"no {_family(expected)} in the answer for {expected.text}"
            return False, f"no match for {expected.text}; answer has {', '.join(q.text for q in candidates)}"
        notes.append(f"{expected.text} ~ {hit.text}")
    problem = _shotgun(wanted, offered, normalize(answer))
    if problem:
        return False, problem
    return True, "matched " + "; ".join(notes)


def _shotgun(wanted: list[Quantity], offered: list[Quantity], text: str) -> str | None:
    """Why the answer hedges between values for one expected quantity, or None (rules in the module docstring)."""
    matching = {id(q) for q in offered if any(compatible(e, q) and agrees(e, q) for e in wanted)}
    rivals = {id(q) for q in offered if id(q) not in matching and any(compatible(e, q) and _near(e, q) for e in wanted)}
    paired_list = re.search(r"\brespectively\b", text, re.I) is not None  # "A and B in 2024 and 2023, respectively"
    for family in {_family(e) for e in wanted}:
        listed = [q for q in offered if _family(q) == family]
        family_rivals = [q for q in listed if id(q) in rivals]
        if len({q.value for q in family_rivals}) > MAX_RIVALS_PER_EXPECTED * sum(_family(e) == family for e in wanted):
            return f"too many alternative values: {', '.join(q.text for q in family_rivals)}"
        if paired_list:
            continue
        for before, after in zip(listed, listed[1:]):
            pair = {id(before), id(after)}
            if pair & matching and pair & rivals and _is_list_gap(text[before.end : after.start]):
                return f"hedged answer: {before.text} and {after.text} offered as alternatives"
    return None


def _is_list_gap(gap: str) -> bool:
    """Only punctuation or hedge words between two values: an unlabelled list of alternatives."""
    return all(word in _HEDGE_WORDS for word in re.findall(r"[^\W_]+", gap.casefold()))


def _tokens(text: str) -> list[str]:
    text = normalize(text).casefold().replace("\u2019", "'")
    text = re.sub(r"(?<=\w)[.'](?=\w)", "", text)  # "U.S." -> "us", "McDonald's" -> "mcdonalds"
    words = [w for w in re.findall(r"[^\W_]+", text) if w not in _ARTICLES]
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def _compare_text(expected_answer: str, answer: str) -> tuple[bool, str]:
    wanted = _tokens(expected_answer)
    if not wanted:
        return False, "expected answer has nothing to compare"
    missing = [w for w in dict.fromkeys(wanted) if w not in set(_tokens(answer))]
    if missing:
        return False, f"text mismatch: answer lacks {', '.join(missing)}"
    return True, f"text match: {' '.join(wanted)}"


class DeterministicGrader:
    """Reward 1.0 (rating 2) when `compare` passes, else 0.0 (rating 0); the explanation goes to judge_text."""

    async def grade(self, question: str, expected_answer: str, answer: str) -> Grade:
        passed, explanation = compare(expected_answer, answer)
        return Grade(reward=1.0 if passed else 0.0, judge_rating=2 if passed else 0, judge_text=explanation)
