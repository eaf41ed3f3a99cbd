"""The shotgun guard (rivals.py): which answer values are rivals of an expected one (`Nearby`), and when the answer
hedges between values (`hedged`): lists, ranges, "or", hedge cues, too many rivals. One committed value passes,
and so do labelled comparisons, changes ("from X to Y") and per-share figures."""

from __future__ import annotations

import pytest

from finsec.grading.commitment import negation
from finsec.grading.matching import Offered
from finsec.grading.numbers import Quantity, find_quantities
from finsec.grading.rivals import MAX_RIVALS_PER_EXPECTED, NEAR_FACTOR, Nearby, hedged
from tests.unit.finsec.test_deterministic_grader import REVENUE, fails_because, grade, passes


def q(text: str) -> Quantity:
    return find_quantities(text)[0]


def why_hedged(expected: str, answer: str) -> str | None:
    """`hedged` with the grader's inputs: the answer values that agree with each expected one, and negation."""
    wanted, offered = find_quantities(expected), find_quantities(answer)
    index = Offered(offered)
    agreements: dict[int, list[int]] = {}
    for e, quantity in enumerate(wanted):
        for i in index.agreeing(quantity):
            agreements.setdefault(i, []).append(e)
    return hedged(answer, wanted, offered, agreements, lambda i: negation(answer, offered[i].start, offered[i].end))


# --- Nearby: which values are rivals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offered", "rival"),
    [
        ("$120 billion", True),
        ("$60 billion", True),  # within NEAR_FACTOR below
        ("$240 billion", False),  # beyond NEAR_FACTOR above
        ("$11.6 billion", True),  # the same digits at another scale
        ("$115.9 million", True),
        ("$12 billion", False),  # far, and other digits
        ("€120 billion", False),  # another currency
        ("51%", False),  # another kind
        ("December 31, 2024", False),  # no date expected
        ("$0", False),
    ],
)
def test_nearby_amounts(offered: str, rival: bool) -> None:
    assert NEAR_FACTOR == 2.0
    assert Nearby([q(REVENUE)]).is_rival(q(offered)) is rival


def test_nearby_dates_are_rivals_when_at_least_as_specific() -> None:
    full_date = Nearby([q("December 31, 2024")])
    assert full_date.is_rival(q("December 31, 2023"))
    assert not full_date.is_rival(q("2023"))  # a year is context for a full date
    year = Nearby([q("2019")])
    assert year.is_rival(q("2018")) and year.is_rival(q("March 3, 2019"))


# --- hedged: why an answer does not commit ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "cause"),
    [
        ("$115.9 billion or $120 billion", "offered as alternatives (or)"),
        ("$110B, $115.9B", "offered as alternatives (list)"),
        ("between $115.9 billion and $120 billion", "offered as alternatives (range)"),
        ("$115.9 billion. It might be $120 billion", "also offers $120 billion ('might be $120 billion')"),
        ("$115.9 billion or something else", "offered as one possibility"),
        ("FY24: $90B; FY23: $100B; FY22: $105B; FY21: $115.9B", "3 candidates besides the expected"),
    ],
)
def test_hedged_names_the_cause(answer: str, cause: str) -> None:
    assert cause in (why_hedged(REVENUE, answer) or "")


@pytest.mark.parametrize(
    "answer",
    [
        "$115.9 billion",
        "grew from $105.4 billion to $115.9 billion",
        "$115.9 billion, not $120 billion",  # a negated rival offers nothing
        "$115.9B and $105.4B in 2024 and 2023, respectively",
        "$115.9 billion, or $0.05 per share",
        "$115.9 billion, of which $12 billion came from services",
    ],
)
def test_hedged_passes_one_committed_value(answer: str) -> None:
    assert why_hedged(REVENUE, answer) is None


def test_rivals_are_allowed_up_to_max_per_expected_value() -> None:
    assert MAX_RIVALS_PER_EXPECTED == 2
    assert why_hedged(REVENUE, "FY24: $115.9B; FY23: $100B; FY22: $90B") is None
    assert "too many" in (why_hedged(REVENUE, "FY24: $115.9B; FY23: $100B; FY22: $90B; FY21: $80B") or "")
    two = "U.S. $115,877 million, international $90,000 million"  # two expected: twice the allowance
    assert why_hedged(two, "U.S. $115.9B, international $90.0B; 2023: $100B, $80B, $70B, $60B") is None
    assert "too many" in (
        why_hedged(two, "U.S. $115.9B, international $90.0B; 2023: $100B, $80B, $70B, $60B, $65B") or ""
    )


def test_two_expected_values_joined_by_or_are_a_hedge() -> None:
    assert "(or)" in (why_hedged("2024: 24.1%; 2023: 14.7%", "2024: 24.1% or 14.7%") or "")


# --- through the grader -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "$100 billion, $110 billion, $115.9 billion or $120 billion",
        "$115.9 billion or $120 billion",
        "$110B, $115.9B",
        "$115.9B-$120B",
        "FY24: $90B; FY23: $100B; FY22: $105B; FY21: $115.9B",  # labelled, but three rivals
    ],
)
def test_shotgun_rejected(answer: str) -> None:
    result = grade(REVENUE, answer)
    assert result.reward == 0.0
    assert "hedged" in (result.judge_text or "") or "too many" in (result.judge_text or "")


def test_shotgun_percent_and_date() -> None:
    assert not passes("about 51%", "49% or 51%")
    assert not passes("December 31, 2024", "December 31, 2024 or December 31, 2023")
    assert not passes("2019", "2018, 2019 or 2020")


@pytest.mark.parametrize(
    "answer",
    [
        "$115.9 billion or $11.6 billion",  # far apart, but joined by "or"
        "$115.9 billion or $115.9 million",  # the same digits at another scale
        "$115.9 billion, $11.59 billion, $1.159 billion",
        "between $115.9 billion and $120 billion",
        "It was $115.9 billion; it might be $120 billion",
        "$115.9 billion; alternatively $120 billion",
        "My answer: $120 billion, though $115.9 billion is also possible",
        "an increase of $115,877 million (an increase of $115.877 million)",
    ],
)
def test_alternatives_hedges_and_ranges_fail(answer: str) -> None:
    fails_because(REVENUE, answer, "hedged")


def test_open_alternatives_fail() -> None:
    fails_because("164,000 employees", "164,000 or 50,000 employees", "hedged")
    fails_because("51%", "51% or something else", "one possibility")


@pytest.mark.parametrize(
    "answer",
    [
        "Revenue grew from $105.4 billion to $115.9 billion",  # a change, not a range
        "$115.9 billion ($115,877 million)",
        "possibly $115.9 billion",  # a hedge word alone offers no other value
        "Total revenue was $115.9 billion in 2024, up from $105.4 billion in 2023.",
    ],
)
def test_one_committed_value_passes(answer: str) -> None:
    assert passes(REVENUE, answer), grade(REVENUE, answer).judge_text


def test_a_per_share_figure_is_not_an_alternative() -> None:
    assert passes("$5.0 million", "net income of $5.0 million, or $0.05 per diluted share")
    assert passes("a net loss of $5.0 million", "a net loss of $5.0 million, or $(0.05) per share")


def test_labelled_comparisons_pass() -> None:
    assert passes(REVENUE, "$115.9 billion in 2024 versus $105.4 billion in 2023")
    assert passes(REVENUE, "$115.9B and $105.4B in 2024 and 2023, respectively")
    assert passes("December 31, 2024", "December 31, 2024 (the prior year ended December 31, 2023)")


def test_far_values_are_not_rivals() -> None:
    assert passes(REVENUE, "$115.9 billion, of which $12 billion came from services, and 10% growth")
