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
  "$110B, $115.9B"), or with an "or" among the words between them ("180,400 employees or 164,000 employees"),
  unless the answer says "respectively"; or (b) it offers more than 2 rivals per expected
  quantity of that kind, however they are labelled. One labelled comparison ("up from $105.4B in 2023") passes.
- Labels bind values. When the expected answer states two or more values of one kind (amounts, or percentages),
  each with a label of its own ("U.S. 51%, international 49%"; "2024: 24.1%, 2023: 14.7%"), each value must be
  stated in the answer next to its own label, in any order (binding rules in labels.py). The answer fails if a
  label's value is missing, or if a label is given another label's value ("U.S. 49%, international 51%"). A value
  left without any label does not count for a labelled part.
- Signs: "a decrease of $163 million" is -$163 million (numbers.py), so it fails against "an increase of" or
  "+$163 million". An expected amount written without a sign accepts a change stated in words either way (the
  question says which way), but not an explicit "-".
- Bounded work. At most `MAX_QUANTITIES` quantities are read from each side; an answer with more fails (an expected
  answer with more cannot be graded and fails too), with an explanation. Answer quantities are indexed by kind and
  magnitude, so each expected quantity is compared only with the values within its tolerance, and at most
  `MAX_COMPARISONS` such comparisons are made. Everything else is one pass over the text: linear in its length.
- With no quantity in the expected answer: case-folded tokens, punctuation dropped, articles dropped, a final plural
  "s" dropped; every expected token must appear in the answer.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict

from deployments.grading.grader import Grade
from deployments.grading.labels import bind, distinctive, expected_labels
from deployments.grading.numbers import Quantity, find_quantities, normalize

RUBRIC_RELATIVE = 0.01  # dollar amounts and ratios: +-1%
RUBRIC_PERCENT_POINTS = 0.1  # percentages: +-0.1 pp
NEAR_FACTOR = 2.0  # an amount within this factor of an expected one is a rival answer for it
MAX_RIVALS_PER_EXPECTED = 2
MAX_QUANTITIES = 2_000  # per side; more is not an answer to a question, and would only cost time
MAX_COMPARISONS = 200_000  # value comparisons within tolerance windows, for one grade
MAX_LISTED = 6  # values named in an explanation
_HEDGE_WORDS = frozenset(
    "or to either maybe possibly perhaps probably likely about approximately approx around roughly nearly almost circa"
    " ca".split()
)
_ALTERNATIVES = frozenset({"or", "either"})  # "X employees or Y employees" offers both
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


def _magnitudes_only(expected: Quantity, offered: Quantity) -> bool:
    """Opposite signs that may still agree: one side's sign is uncertain, or the expected states no sign and the
    answer states the change in words ("a decrease of $3.4 million" for "$3.4 million")."""
    if expected.sign_in_words or offered.sign_in_words:
        return True
    return not expected.stated_sign and offered.stated_sign == "words"


def agrees(expected: Quantity, offered: Quantity) -> bool:
    """Whether a compatible `offered` states `expected`, under the module's rules."""
    if expected.kind == "date":
        step = expected.precision
        return offered.precision <= step and offered.value // step == expected.value // step
    want, got = expected.value, offered.value
    if (want < 0) != (got < 0) and _magnitudes_only(expected, offered):
        want, got = abs(want), abs(got)
    gap = abs(want - got)
    slack = _EPSILON * max(abs(want), abs(got), 1.0)
    coarser = max(expected.precision, offered.loose_precision)
    return gap <= coarser / 2 + slack and gap <= _reach(expected) + slack


def _reach(expected: Quantity) -> float:
    """The widest gap `agrees` can accept for `expected` (its tolerance, or half its last digit)."""
    tolerance = RUBRIC_PERCENT_POINTS if expected.kind == "percent" else RUBRIC_RELATIVE * abs(expected.value)
    return max(tolerance, expected.precision / 2)


def _as_number(year: Quantity) -> Quantity:
    """A bare year read back as the integer it is written as, for an expected count such as "2,000 stores"."""
    value = year.value // 10000
    return Quantity(value, "number", 1.0, year.text, year.start, year.end, 1.0)


def required(quantities: list[Quantity]) -> list[Quantity]:
    """The expected quantities an answer must state: dates are context when amounts or percentages are present."""
    facts = [q for q in quantities if q.kind != "date"]
    return facts or quantities


class _Offered:
    """The answer's quantities indexed by family and magnitude (dates by value), so an expected quantity is
    compared only with the values inside its tolerance window."""

    def __init__(self, offered: list[Quantity]):
        self.offered = offered
        columns: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for i, q in enumerate(offered):
            columns[_family(q)].append((q.value if q.kind == "date" else abs(q.value), i))
            if q.is_year:  # "2024 stores" can state the count 2,024
                columns["year number"].append((q.value // 10000, i))
        self._columns = {family: sorted(column) for family, column in columns.items()}
        self._keys = {family: [k for k, _ in column] for family, column in self._columns.items()}
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
            out += [_as_number(q) for q in self.offered if q.is_year][: MAX_LISTED - len(out)]
        return out

    def agreeing(self, expected: Quantity) -> list[int]:
        """Indices of the answer quantities that state `expected` (rules of `agrees`)."""
        if expected.kind == "date":
            step = expected.precision
            low = expected.value // step * step
            indices = self._window("date", low, low + step - 1e-6)
            pairs = [(i, self.offered[i]) for i in indices]
        else:
            reach = _reach(expected) * (1 + 1e-6) + 1e-9 * max(abs(expected.value), 1.0)
            low, high = abs(expected.value) - reach, abs(expected.value) + reach
            pairs = [(i, self.offered[i]) for i in self._window(_family(expected), low, high)]
            if expected.kind == "number":
                pairs += [(i, _as_number(self.offered[i])) for i in self._window("year number", low, high)]
        self.comparisons += len(pairs)
        return [i for i, q in pairs if compatible(expected, q) and agrees(expected, q)]


def compare(expected_answer: str, answer: str) -> tuple[bool, str]:
    """(passed, explanation) for one answer against the expected answer."""
    passed, explanation = _compare(expected_answer, answer)
    return passed, explanation.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot go on the wire


def _compare(expected_answer: str, answer: str) -> tuple[bool, str]:
    stated = find_quantities(expected_answer, limit=MAX_QUANTITIES)
    if len(stated) > MAX_QUANTITIES:
        return False, f"the expected answer states more than {MAX_QUANTITIES:,} quantities; it cannot be graded"
    wanted = required(stated)
    if not wanted:
        return _compare_text(expected_answer, answer)
    offered = find_quantities(answer, limit=MAX_QUANTITIES)
    if len(offered) > MAX_QUANTITIES:
        return False, (f"the answer states more than {MAX_QUANTITIES:,} quantities; an answer is graded on at most "
                       f"{MAX_QUANTITIES:,}")
    index = _Offered(offered)
    agreements: dict[int, list[int]] = defaultdict(list)  # answer quantity -> expected quantities it states
    notes = []
    memo: dict[tuple, list[int]] = {}
    for e, expected in enumerate(wanted):
        key = (expected.value, expected.kind, expected.precision, expected.currency, expected.sign_in_words,
               expected.stated_sign)
        if key not in memo:
            memo[key] = index.agreeing(expected)
            if index.comparisons > MAX_COMPARISONS:
                return False, f"too many values near the expected ones to compare (over {MAX_COMPARISONS:,})"
        hits = memo[key]
        for i in hits:
            agreements[i].append(e)
        if not hits:
            candidates = index.candidates(expected)
            if not candidates:
                return False, f"no {_family(expected)} in the answer for {expected.text}"
            return False, f"no match for {expected.text}; answer has {_listing(candidates)}"
        notes.append(f"{expected.text} ~ {offered[hits[0]].text}")
    problem = _labels(expected_answer, stated, wanted, answer, offered, agreements)
    if problem:
        return False, problem
    problem = _shotgun(wanted, offered, set(agreements), normalize(answer))
    if problem:
        return False, problem
    return True, "matched " + "; ".join(notes)


def _listing(quantities: list[Quantity]) -> str:
    shown = ", ".join(q.text for q in quantities[:MAX_LISTED])
    return shown + (", ..." if len(quantities) > MAX_LISTED else "")


def _labels(expected_answer: str, stated: list[Quantity], wanted: list[Quantity], answer: str,
            offered: list[Quantity], agreements: dict[int, list[int]]) -> str | None:
    """Why the answer does not pair the expected labels with their values, or None (rules in the docstring)."""
    text = normalize(expected_answer)
    for family in ("amount", "percent"):
        members = [e for e, q in enumerate(wanted) if _family(q) == family]
        if len(members) < 2:
            continue
        parts = distinctive(expected_labels(text, stated, [wanted[e] for e in members]))
        if not all(parts):
            continue  # unlabelled values: their kind and magnitude are all there is to compare
        values = [i for i, q in enumerate(offered) if _family(q) == family]
        bound = bind(normalize(answer), offered, [offered[i] for i in values], parts)
        stated_for: dict[int, list[int]] = defaultdict(list)  # part -> answer values bound to it
        for i, b in zip(values, bound):
            if b is not None:
                stated_for[b].append(i)
        member_set = set(members)
        for p, e in enumerate(members):
            label = " ".join(sorted(w.lstrip("@") for w in parts[p]))
            given = stated_for[p]
            crossed = [i for i in given if e not in agreements.get(i, ()) and any(
                other != e and other in member_set for other in agreements.get(i, ()))]
            if crossed:
                return (f"label mismatch: {_listing([offered[i] for i in crossed])} is stated for '{label}', "
                        f"which expects {wanted[e].text}")
            if not any(e in agreements.get(i, ()) for i in given):
                told = f"; it is given {_listing([offered[i] for i in given])}" if given else ""
                return f"no value stated for the label '{label}' matches {wanted[e].text}{told}"
    return None


def _shotgun(wanted: list[Quantity], offered: list[Quantity], matching_indices: set[int], text: str) -> str | None:
    """Why the answer hedges between values for one expected quantity, or None (rules in the module docstring)."""
    nearby = _Nearby(wanted)
    rivals = {i for i, q in enumerate(offered) if i not in matching_indices and nearby.has_rival(q)}
    paired_list = re.search(r"\brespectively\b", text, re.I) is not None  # "A and B in 2024 and 2023, respectively"
    counts = defaultdict(int)
    for e in wanted:
        counts[_family(e)] += 1
    for family, expected_count in counts.items():
        listed = [i for i, q in enumerate(offered) if _family(q) == family]
        family_rivals = [i for i in listed if i in rivals]
        if len({offered[i].value for i in family_rivals}) > MAX_RIVALS_PER_EXPECTED * expected_count:
            return f"too many alternative values: {_listing([offered[i] for i in family_rivals])}"
        if paired_list:
            continue
        for before, after in zip(listed, listed[1:]):
            pair = {before, after}
            if pair & matching_indices and pair & rivals and _is_list_gap(
                    text[offered[before].end : offered[after].start]):
                return f"hedged answer: {offered[before].text} and {offered[after].text} offered as alternatives"
    return None


class _Nearby:
    """The expected quantities by family and currency, sorted by magnitude: is an answer value near one?"""

    def __init__(self, wanted: list[Quantity]):
        columns: dict[tuple[str, str | None], list[float]] = defaultdict(list)
        self._dates = {"year": False, "any": False}
        for e in wanted:
            if e.kind == "date":
                self._dates["any"] = True
                self._dates["year"] |= e.is_year
            else:
                columns[(_family(e), e.currency)].append(abs(e.value))
        self._columns = {key: sorted(values) for key, values in columns.items()}

    def has_rival(self, offered: Quantity) -> bool:
        """Is there an expected quantity that `offered` is compatible with and within NEAR_FACTOR of?"""
        if offered.kind == "date":
            return self._dates["year"] or (self._dates["any"] and not offered.is_year)
        size = abs(offered.value)
        if size == 0:
            return False
        for (family, currency), values in self._columns.items():
            if family != _family(offered) or (currency and offered.currency and currency != offered.currency):
                continue
            k = bisect.bisect_left(values, size / NEAR_FACTOR * (1 - 1e-12))
            if k < len(values) and 0 < values[k] <= size * NEAR_FACTOR * (1 + 1e-12):
                return True
        return False


def _is_list_gap(gap: str) -> bool:
    """Only punctuation or hedge words between two values, or an "or": a list of alternatives."""
    words = re.findall(r"[^\W_]+", gap.casefold())
    return all(word in _HEDGE_WORDS for word in words) or any(word in _ALTERNATIVES for word in words)


def _tokens(text: str) -> list[str]:
    text = normalize(text).casefold().replace("\u2019", "'")
    text = re.sub(r"(?<=\w)[.'](?=\w)", "", text)  # "U.S." -> "us", "McDonald's" -> "mcdonalds"
    words = [w for w in re.findall(r"[^\W_]+", text) if w not in _ARTICLES]
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def _compare_text(expected_answer: str, answer: str) -> tuple[bool, str]:
    wanted = _tokens(expected_answer)
    if not wanted:
        return False, "expected answer has nothing to compare"
    offered = set(_tokens(answer))  # once: the answer may be long
    missing = [w for w in dict.fromkeys(wanted) if w not in offered]
    if missing:
        shown = ", ".join(missing[:MAX_LISTED]) + (", ..." if len(missing) > MAX_LISTED else "")
        return False, f"text mismatch: answer lacks {shown}"
    return True, f"text match: {' '.join(wanted[:200])}"


class DeterministicGrader:
    """Reward 1.0 (rating 2) when `compare` passes, else 0.0 (rating 0); the explanation goes to judge_text.

    `deterministic`: the same answer always gets the same grade, and grading is cheap CPU work, so /verify
    grades first, in a worker thread (`grade_sync`), and settles the session in one shard call."""

    deterministic = True

    def grade_sync(self, question: str, expected_answer: str, answer: str) -> Grade:
        passed, explanation = compare(expected_answer, answer)
        return Grade(reward=1.0 if passed else 0.0, judge_rating=2 if passed else 0, judge_text=explanation)

    async def grade(self, question: str, expected_answer: str, answer: str) -> Grade:
        return self.grade_sync(question, expected_answer, answer)
