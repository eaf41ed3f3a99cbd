"""The grader used when no LLM judge is configured: an answer earns the reward only when it states the expected
answer as its answer. Quantities are compared as quantities, other answers as phrases (text.py).

It replaces NeMo Gym's substring fallback (contract §D.3), which rejects "$115.9 billion" for "$115,877 million" and
accepts "151%" for "51%". The tolerances follow the stock judge rubric (§D.4).

Rules, in the order they are applied:
- Over-long answers. An answer longer than `MAX_ANSWER_CHARS` characters (`DeterministicGrader(max_answer_chars=)`)
  gets 0 with failure_kind `answer_too_long`, unread: an answer is a statement, not a document, and a cap on
  length is one that cannot be gamed (grading only the final sentence could be). `compare` itself has no cap.
- Addressed to the grader. Instructions to the grader, a request for marks, "expected answer", a planted verdict
  or a reward field (`{"reward": 1}`) fail the answer whatever else it states (injection.py).
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
  compared. "a decrease of $163 million" is -$163 million (numbers.py), so it fails against "an increase of" or
  "+$163 million"; an expected amount written without a sign accepts a change stated in words either way (the
  question says which way), but not an explicit "-".
- Sign words bind to their value (signs.py). When the expected value points one way (a loss, deficit, outflow or
  decrease; or an income, profit, surplus, inflow or increase), an answer value that points the other way does not
  state it: "net income of $5.0 million" fails against "a net loss of $5.0 million", while "net loss of $(5.0)
  million", "-$5.0 million loss" and a bare "$5.0 million" pass.
- A date matches when the answer is at least as specific and agrees to the expected's precision: "2024-12-31" matches
  "December 31, 2024"; "2024" does not; "December 31, 2024" matches the expected year "2024".
- Negation (commitment.py). An answer that denies a value that states the expected one fails: "not 51%, but 49%",
  "It was 49%, not 51%", "51% is incorrect", "rather than 51%". A value in a question ("Is it 51%? No, 49%.") is
  not stated.
- Labels bind values. When the expected answer states two or more values of one kind (amounts, or percentages),
  each with a label of its own ("U.S. 51%, international 49%"; "2024: 24.1%, 2023: 14.7%"), each value must be
  stated in the answer next to its own label, in any order (binding rules in labels.py). The answer fails if a
  label's value is missing, or if a label is given another label's value ("U.S. 49%, international 51%"). A value
  left without any label does not count for a labelled part.
- Shotgun guard (rivals.py). Values near the expected one (or its digits at another scale) offered as alternatives
  fail the answer: next to a match in a list, a range or an "or" ("$115.9B or $120B", "$110B, $115.9B",
  "$115.9B or $11.6B"), with a hedge cue ("it might be $120B", "$120B is also possible"), or more than 2 per
  expected value however labelled; so does the match offered as one possibility ("51% or something else"). One
  labelled comparison ("up from $105.4B in 2023") passes, as does "grew from X to Y".
- Designations (commitment.py). In a sentence that names the answer ("My answer: $120 billion", "The correct answer
  is ..."), the first value of the expected's kind must state the expected value.
- Bounded work. At most `MAX_QUANTITIES` quantities are read from each side; an answer with more fails (an expected
  answer with more cannot be graded and fails too), with an explanation. Answer quantities are indexed by kind and
  magnitude, so each expected quantity is compared only with the values within its tolerance, and at most
  `MAX_COMPARISONS` such comparisons are made. Everything else is one pass over the text, or a bounded window
  beside a value: linear in its length.
- With no quantity in the expected answer, or an identifier ("001-36743": digits joined by hyphens, not two
  amounts): the phrase rules of text.py, the same commitment for names (not negated, not one of a list of
  candidates, not hedged, not buried in a flood).
Both texts are read through numbers.normalize first: invisible characters dropped and look-alike Cyrillic or Greek
letters read as Latin, so an answer cannot hide a "not" from the grader that its reader sees.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from finsec.grading.commitment import asked, designations, negation
from finsec.grading.grader import Grade
from finsec.grading.identity import GRADING_VERSION
from finsec.grading.injection import addressed_to_grader
from finsec.grading.labels import bind, distinctive, expected_labels
from finsec.grading.matching import (  # noqa: F401  (re-exported: bench/ and tests import them from here)
    RUBRIC_PERCENT_POINTS,
    RUBRIC_RELATIVE,
    Offered,
    agrees,
    compatible,
    family,
    listing,
    required,
)
from finsec.grading.names import IDENTIFIER
from finsec.grading.numbers import Quantity, find_quantities, normalize
from finsec.grading.rivals import MAX_RIVALS_PER_EXPECTED, NEAR_FACTOR, hedged  # noqa: F401
from finsec.grading.signs import Polarity
from finsec.grading.text import compare_text

__all__ = ["ANSWER_TOO_LONG", "compare", "DeterministicGrader", "MAX_ANSWER_CHARS", "MAX_COMPARISONS", "MAX_QUANTITIES"]

MAX_ANSWER_CHARS = 4_000  # an answer, not a report; longer ones get 0 (answer_too_long)
MAX_QUANTITIES = 2_000  # per side; more is not an answer to a question, and would only cost time
MAX_COMPARISONS = 200_000  # value comparisons within tolerance windows, for one grade
ANSWER_TOO_LONG = "answer_too_long"
_WAY = {-1: "negative", 1: "positive"}


def compare(expected_answer: str, answer: str) -> tuple[bool, str]:
    """(passed, explanation) for one answer against the expected answer."""
    passed, explanation = _compare(expected_answer, answer)
    return passed, explanation.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot go on the wire


def _compare(expected_answer: str, answer: str) -> tuple[bool, str]:
    planted = addressed_to_grader(normalize(answer))
    if planted:
        return False, f"the answer addresses the grader ('{planted[:80]}'); it is not graded"
    stated = find_quantities(expected_answer, limit=MAX_QUANTITIES)
    if len(stated) > MAX_QUANTITIES:
        return False, f"the expected answer states more than {MAX_QUANTITIES:,} quantities; it cannot be graded"
    wanted = required(stated)
    if not wanted or _is_identifier(expected_answer):
        return compare_text(expected_answer, answer)
    offered = find_quantities(answer, limit=MAX_QUANTITIES)
    if len(offered) > MAX_QUANTITIES:
        return False, (
            f"the answer states more than {MAX_QUANTITIES:,} quantities; an answer is graded on at most "
            f"{MAX_QUANTITIES:,}"
        )
    text = normalize(answer)
    index = Offered(offered)
    expected_signs, answer_signs = Polarity(normalize(expected_answer), stated), Polarity(text, offered)
    denied: dict[int, str | None] = {}

    def negated(i: int) -> str | None:
        if i not in denied:
            denied[i] = negation(text, offered[i].start, offered[i].end)
        return denied[i]

    agreements: dict[int, list[int]] = defaultdict(list)  # answer quantity -> expected quantities it states
    notes = []
    memo: dict[tuple, list[int]] = {}
    for e, expected in enumerate(wanted):
        key = (
            expected.value,
            expected.kind,
            expected.precision,
            expected.currency,
            expected.sign_in_words,
            expected.stated_sign,
        )
        if key not in memo:
            memo[key] = index.agreeing(expected)
            if index.comparisons > MAX_COMPARISONS:
                return False, f"too many values near the expected ones to compare (over {MAX_COMPARISONS:,})"
        hits, opposed = _signed(memo[key], expected, offered, expected_signs, answer_signs)
        questions = [i for i in hits if asked(text, offered[i].end)]
        if hits and len(questions) == len(hits):
            return False, f"the answer only asks about {expected.text} ('{offered[hits[0]].text} ...?')"
        hits = [i for i in hits if i not in questions]
        if not hits:
            return False, _no_match(expected, offered, index, opposed, expected_signs, answer_signs)
        for i in hits:
            if negated(i):
                return False, f"the answer negates the expected value {expected.text} ('{negated(i)}')"
            agreements[i].append(e)
        notes.append(f"{expected.text} ~ {offered[hits[0]].text}")
    problem = (
        _labels(expected_answer, stated, wanted, answer, offered, agreements)
        or hedged(text, wanted, offered, agreements, negated)
        or _designated(text, wanted, offered, agreements, negated)
    )
    if problem:
        return False, problem
    return True, "matched " + "; ".join(notes)


def _is_identifier(expected_answer: str) -> bool:
    """ "001-36743" is a file number, not two amounts; "2024-12-31" stays a date."""
    text = normalize(expected_answer).strip()
    return IDENTIFIER.fullmatch(text) is not None and re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", text) is None


def _signed(
    hits: list[int], expected: Quantity, offered: list[Quantity], expected_signs: Polarity, answer_signs: Polarity
) -> tuple[list[int], list[int]]:
    """The hits whose sign words do not contradict the expected's, and those that do."""
    way = expected_signs.of(expected)
    if not way:
        return hits, []
    opposed = [i for i in hits if answer_signs.of(offered[i]) == -way]
    against = set(opposed)
    return [i for i in hits if i not in against], opposed


def _no_match(
    expected: Quantity,
    offered: list[Quantity],
    index: Offered,
    opposed: list[int],
    expected_signs: Polarity,
    answer_signs: Polarity,
) -> str:
    if opposed:
        got = offered[opposed[0]]
        way, why = expected_signs.explained(expected)
        return (
            f"sign mismatch: the answer states {got.text} as {_WAY[-way]} ('{answer_signs.explained(got)[1]}'), "
            f"the expected {expected.text} is {_WAY[way]} ('{why}')"
        )
    candidates = index.candidates(expected)
    if not candidates:
        return f"no {family(expected)} in the answer for {expected.text}"
    flipped = [q for q in candidates if q.value and agrees(expected, replace(q, value=-q.value))]
    if flipped and expected.value:
        return (
            f"sign mismatch: the answer states {flipped[0].text} as {_WAY[1 if flipped[0].value > 0 else -1]}, "
            f"the expected {expected.text} is {_WAY[1 if expected.value > 0 else -1]}"
        )
    return f"no match for {expected.text}; answer has {listing(candidates)}"


def _designated(
    text: str,
    wanted: list[Quantity],
    offered: list[Quantity],
    agreements: dict[int, list[int]],
    negated: Callable[[int], str | None],
) -> str | None:
    """A sentence that names the answer ("My answer: $120 billion") and states another value of the kind."""
    spans = designations(text)
    if not spans:
        return None
    starts = [q.start for q in offered]
    # Right to left, the first value at or after each that counts (not negated, of the kind asked): each span then
    # finds its first in O(1), where a walk per span was quadratic on an answer that designates at every value.
    following = [len(offered)] * (len(offered) + 1)
    for i in range(len(offered) - 1, -1, -1):
        counts = not negated(i) and any(compatible(e, offered[i]) for e in wanted)
        following[i] = i if counts else following[i + 1]
    for start, end in spans:
        first = following[bisect.bisect_left(starts, start)]
        if first < bisect.bisect_left(starts, end) and first not in agreements:  # the first value named is its answer
            return f"the answer designates {offered[first].text} as its answer ('{text[start:end].strip()[:80]}')"
    return None


def _labels(
    expected_answer: str,
    stated: list[Quantity],
    wanted: list[Quantity],
    answer: str,
    offered: list[Quantity],
    agreements: dict[int, list[int]],
) -> str | None:
    """Why the answer does not pair the expected labels with their values, or None (rules in the docstring)."""
    text = normalize(expected_answer)
    for kind in ("amount", "percent"):
        members = [e for e, q in enumerate(wanted) if family(q) == kind]
        if len(members) < 2:
            continue
        parts = distinctive(expected_labels(text, stated, [wanted[e] for e in members]))
        if not all(parts):
            continue  # unlabelled values: their kind and magnitude are all there is to compare
        values = [i for i, q in enumerate(offered) if family(q) == kind]
        bound = bind(normalize(answer), offered, [offered[i] for i in values], parts)
        stated_for: dict[int, list[int]] = defaultdict(list)  # part -> answer values bound to it
        for i, b in zip(values, bound, strict=False):
            if b is not None:
                stated_for[b].append(i)
        member_set = set(members)
        for p, e in enumerate(members):
            label = " ".join(sorted(w.lstrip("@") for w in parts[p]))
            given = stated_for[p]
            crossed = [
                i
                for i in given
                if e not in agreements.get(i, ())
                and any(other != e and other in member_set for other in agreements.get(i, ()))
            ]
            if crossed:
                return (
                    f"label mismatch: {listing([offered[i] for i in crossed])} is stated for '{label}', "
                    f"which expects {wanted[e].text}"
                )
            if not any(e in agreements.get(i, ()) for i in given):
                told = f"; it is given {listing([offered[i] for i in given])}" if given else ""
                return f"no value stated for the label '{label}' matches {wanted[e].text}{told}"
    return None


class DeterministicGrader:
    """Reward 1.0 (rating 2) when `compare` passes, else 0.0 (rating 0); the explanation goes to judge_text.

    `deterministic`: the same answer always gets the same grade, and grading is cheap CPU work, so /verify
    grades first, in a worker thread (`grade_sync`), and settles the session in one shard call.
    `max_answer_chars`: longer answers get 0 with failure_kind `answer_too_long`, without being read."""

    deterministic = True
    name = "deterministic"

    def __init__(self, max_answer_chars: int = MAX_ANSWER_CHARS) -> None:
        self.max_answer_chars = max_answer_chars

    def identity(self) -> dict[str, Any]:
        """What a verify row names as its grader (identity.py): this grader, its code and its one setting."""
        return {"name": self.name, "version": GRADING_VERSION, "max_answer_chars": self.max_answer_chars}

    def grade_sync(self, question: str, expected_answer: str, answer: str) -> Grade:
        if len(answer) > self.max_answer_chars:
            return Grade(
                reward=0.0,
                judge_rating=0,
                failure_kind=ANSWER_TOO_LONG,
                judge_text=(
                    f"{ANSWER_TOO_LONG}: the answer is {len(answer):,} characters, over the {self.max_answer_chars:,} "
                    "an answer may have; it is not graded (state the answer in a sentence or two)"
                ),
            )
        passed, explanation = compare(expected_answer, answer)
        return Grade(reward=1.0 if passed else 0.0, judge_rating=2 if passed else 0, judge_text=explanation)

    async def grade(self, question: str, expected_answer: str, answer: str) -> Grade:
        return self.grade_sync(question, expected_answer, answer)
