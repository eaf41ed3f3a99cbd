"""When one quantity states another (matching.py): kind and currency (`compatible`), tolerance and precision
(`agrees`, `reach`), which expected quantities are required (`required`), and the answer's values indexed by
magnitude (`Offered`); then the same rules through the grader: money, percentages, dates and the signs of the
values themselves (contract §D.4's tolerances)."""

from __future__ import annotations

import pytest

from finsec.grading.matching import (
    MAX_LISTED,
    RUBRIC_PERCENT_POINTS,
    RUBRIC_RELATIVE,
    Offered,
    agrees,
    as_number,
    compatible,
    family,
    listing,
    reach,
    required,
)
from finsec.grading.numbers import Quantity, find_quantities
from tests.unit.finsec.test_deterministic_grader import REVENUE, grade, passes


def q(text: str) -> Quantity:
    found = find_quantities(text)
    assert len(found) == 1, found
    return found[0]


# --- the functions ------------------------------------------------------------------------------------------------


def test_family_puts_money_and_plain_numbers_together() -> None:
    assert [family(q(t)) for t in ("$5", "5 shares", "5%", "2024")] == ["amount", "amount", "percent", "date"]


@pytest.mark.parametrize(
    ("expected", "offered", "ok"),
    [
        ("$5 million", "5 million", True),  # a plain number can state an amount
        ("$5 million", "€5 million", False),  # two currencies named
        ("$5 million", "5%", False),
        ("51%", "$51", False),
        ("December 31, 2024", "2024", False),  # a bare year cannot state a full date
        ("2024", "December 31, 2024", True),
        ("December 31, 2024", "2024-12-31", True),
    ],
)
def test_compatible(expected: str, offered: str, ok: bool) -> None:
    assert compatible(q(expected), q(offered)) is ok


@pytest.mark.parametrize(
    ("expected", "offered", "ok"),
    [
        ("$115,877 million", "$115.9 billion", True),  # agrees at the answer's precision
        ("$115,877 million", "$116 billion", True),  # trailing zeros of the answer are rounding
        ("$115,877 million", "$115 billion", False),  # truncated
        ("$115,877 million", "$0.1 trillion", False),  # agrees at its precision, but beyond 1%
        ("51.3%", "51.32%", True),
        ("51.3%", "51%", False),
        ("(2,722)", "2,722", True),  # a parenthesised expected: magnitudes compared
        ("-$3.4 million", "$3.4 million", False),  # an explicit sign must agree
        ("$3.4 million", "a decrease of $3.4 million", True),  # unsigned expected, change in words
        ("$3.4 million", "-$3.4 million", False),
        ("December 31, 2024", "2024-12-31", True),
        ("December 2024", "December 31, 2024", True),  # the answer at least as specific
        ("December 31, 2024", "December 2024", False),
    ],
)
def test_agrees(expected: str, offered: str, ok: bool) -> None:
    assert agrees(q(expected), q(offered)) is ok


def test_reach_is_the_rubric_tolerance_or_half_the_last_digit() -> None:
    assert reach(q("$1,000")) == pytest.approx(RUBRIC_RELATIVE * 1_000)
    assert reach(q("51.3%")) == pytest.approx(RUBRIC_PERCENT_POINTS)
    assert reach(q("51%")) == pytest.approx(0.5)  # its last digit is wider than 0.1 pp
    assert reach(q("$6")) == pytest.approx(0.5)
    assert (RUBRIC_RELATIVE, RUBRIC_PERCENT_POINTS) == (0.01, 0.1)


def test_required_makes_dates_context_beside_amounts() -> None:
    assert [x.text for x in required(find_quantities("$5 million in fiscal 2024, up 8%"))] == ["$5 million", "8%"]
    assert [x.text for x in required(find_quantities("December 31, 2024"))] == ["December 31, 2024"]
    assert required([]) == []


def test_as_number_reads_a_year_as_its_integer() -> None:
    number = as_number(q("2024"))
    assert (number.value, number.kind, number.precision) == (2024, "number", 1.0)


def test_listing_caps_what_an_explanation_names() -> None:
    many = find_quantities(", ".join(f"${n}" for n in range(1, MAX_LISTED + 3)))
    assert listing(many[:2]) == "$1, $2"
    assert listing(many) == ", ".join(f"${n}" for n in range(1, MAX_LISTED + 1)) + ", ..."


def test_offered_finds_exactly_the_agreeing_values() -> None:
    offered = Offered(find_quantities("$115.9 billion, $120 billion, 51%, 2024 stores, December 31, 2024"))
    assert offered.agreeing(q("$115,877 million")) == [0]
    assert offered.agreeing(q("51%")) == [2]
    assert offered.agreeing(q("2,024 stores")) == [3]  # a count that reads as a year
    assert offered.agreeing(q("2024-12-31")) == [4]
    assert offered.agreeing(q("$120 million")) == []
    assert offered.agreeing(q("49%")) == []


def test_offered_compares_only_inside_the_tolerance_window() -> None:
    """Linear work: values far from the expected one are never compared with it."""
    offered = Offered(find_quantities(", ".join(f"${n} million" for n in range(100, 1100))))
    assert offered.agreeing(q("$500 million")) == [400]
    assert 0 < offered.comparisons <= 20


def test_offered_candidates_are_compatible_and_capped() -> None:
    offered = Offered(find_quantities("$115.9 billion, 51%, $120 billion, 2019"))
    assert [x.text for x in offered.candidates(q("$1"))] == ["$115.9 billion", "$120 billion"]
    assert [x.text for x in offered.candidates(q("49%"))] == ["51%"]
    many = Offered(find_quantities(", ".join(f"${n}" for n in range(1, 20))))
    assert len(many.candidates(q("$1"))) == MAX_LISTED


# --- money --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "$115.9 billion",
        "115,877 million",
        "$115,877M",
        "115.877 billion dollars",
        "It was about $115.9B in FY2024",
        "$116 billion",
        "$115,900,000,000",
        "Revenue: 115,877 (in millions)",
        "$115.9 billion ($115,877 million)",
        "Total revenue was $115.9 billion in FY2024, up from $105.4 billion in FY2023.",
    ],
)
def test_money_accepts(answer: str) -> None:
    assert passes(REVENUE, answer)


@pytest.mark.parametrize(
    "answer",
    [
        "$11.6 billion",
        "$116 million",
        "$0.1 trillion",  # agrees at its own precision, but 14% off
        "$100 billion",
        "$115,877",  # no scale word: dollars, not millions
        "115,877",
        "$115 billion",  # truncated, not rounded
        "Revenue grew strongly.",
        "€115.9 billion",
        "-$115.9 billion",
    ],
)
def test_money_rejects(answer: str) -> None:
    assert not passes(REVENUE, answer)


def test_thousands_scale() -> None:
    expected = "$ 84,946 thousand"
    assert passes(expected, "$84.9 million")
    assert passes(expected, "$84,946,000")
    assert passes(expected, "84,946K")
    assert not passes(expected, "$84,946")
    assert not passes(expected, "$84.5 million")


def test_small_amounts_use_the_one_percent_cap() -> None:
    assert passes("$6.11", "diluted EPS of $6.11")
    assert passes("$6.11", "$6.1")
    assert not passes("$6.11", "$6")
    assert not passes("$6.11", "$6.21")


def test_year_in_the_answer_does_not_spoil_or_satisfy_an_amount() -> None:
    assert passes("2,024 stores", "2024 stores")  # a count that looks like a year is still that count
    assert not passes("$2,024 million", "In 2024 revenue rose.")
    assert passes("$3.4 million", "In 2024 it was $3.4 million, compared with 2023.")


def test_currency_words_and_spacing() -> None:
    assert passes("USD 1.2bn", "$1.2 billion")
    assert passes("USD 1.2bn", "1,200 million dollars")
    assert not passes("USD 1.2bn", "EUR 1.2 billion")


def test_context_dates_are_not_required_with_amounts() -> None:
    assert passes("$115,877 million for the year ended December 31, 2024", "$115.9 billion")


# --- signs of the values themselves (sign words are test_signs.py) ------------------------------------------------


@pytest.mark.parametrize("answer", ["-2,722", "(2,722)", "a loss of 2,722", "2,722"])
def test_parenthesised_expected_accepts_either_sign(answer: str) -> None:
    assert passes("(2,722)", answer)


def test_parenthesised_expected_still_needs_the_magnitude() -> None:
    assert not passes("(2,722)", "(2,272)")


@pytest.mark.parametrize("answer", ["-$3.4M", "a decrease of $3.4 million", "($3.4 million)", "it declined by $3.4m"])
def test_explicit_negative_accepts(answer: str) -> None:
    assert passes("-$3.4 million", answer)


@pytest.mark.parametrize("answer", ["$3.4 million", "an increase of $3.4 million", "+$3.4 million"])
def test_explicit_negative_rejects_a_positive(answer: str) -> None:
    assert not passes("-$3.4 million", answer)


# --- percentages --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["51%", "51.0 percent", "roughly 51 %", "51.4%"])
def test_percent_accepts(answer: str) -> None:
    assert passes("about 51%", answer)


@pytest.mark.parametrize("answer", ["49%", "5.1%", "51.6%", "0.51", "51 million", "no figure given"])
def test_percent_rejects(answer: str) -> None:
    assert not passes("about 51%", answer)


def test_percent_tolerance_is_a_tenth_of_a_point() -> None:
    assert passes("51.3%", "51.3 percent")
    assert passes("51.3%", "51.32%")
    assert not passes("51.3%", "51%")  # coarse: 0.3 pp off
    assert not passes("51.3%", "50%")


def test_basis_points_and_percentage_points() -> None:
    assert passes("50 bps", "0.5 percentage points")
    assert not passes("50 bps", "5 percentage points")


# --- dates --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["2024-12-31", "Dec 31, 2024", "Dec. 31, 2024", "12/31/2024", "31 December 2024"])
def test_date_accepts(answer: str) -> None:
    assert passes("December 31, 2024", answer)


@pytest.mark.parametrize("answer", ["December 31, 2023", "December 2024", "2024", "FY2024", "no date"])
def test_date_rejects(answer: str) -> None:
    assert not passes("December 31, 2024", answer)


def test_years_are_context_for_a_full_date() -> None:
    """A bare year neither states a full date nor competes with one."""
    assert grade("December 31, 2024", "in 2024").judge_text == "no date in the answer for December 31, 2024"
    assert passes("December 31, 2024", "Data for 2021, 2022 and 2023 is also shown; the balance date is 12/31/2024.")


def test_expected_year_accepts_any_statement_of_that_year() -> None:
    assert passes("FY2024", "fiscal 2024")
    assert passes("2019", "It was acquired on March 3, 2019.")
    assert not passes("2019", "It was acquired in 2018.")
