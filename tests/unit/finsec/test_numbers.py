"""Quantity extraction (numbers.py): amounts, scales, currencies, percentages, dates and their precision; signs in
symbols and words; filing vocabulary that is not a quantity; and `normalize`, which reads look-alike and invisible
characters as the reader sees them."""

from __future__ import annotations

import pytest

from finsec.grading.numbers import DAY, MONTH, YEAR, find_quantities, normalize
from tests.unit.finsec.test_deterministic_grader import fails_because, passes


def only(text: str):
    quantities = find_quantities(text)
    assert len(quantities) == 1, quantities
    return quantities[0]


# --- extraction ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "kind", "precision"),
    [
        ("$115.9 billion", 115.9e9, "money", 1e8),
        ("115,877 million", 115_877e6, "number", 1e6),
        ("$115,877M", 115_877e6, "money", 1e6),
        ("USD 1.2bn", 1.2e9, "money", 1e8),
        ("115.877 billion dollars", 115_877e6, "money", 1e6),
        ("(2,722)", -2722, "number", 1),
        ("-$3.4 million", -3.4e6, "money", 1e5),
        ("$ 84,946 thousand", 84_946e3, "money", 1e3),
        ("$5m", 5e6, "money", 1e6),
        ("1,234.56", 1234.56, "number", 0.01),
        ("0.87x", 0.87, "number", 0.01),  # a multiple, as analysts write coverage and leverage
        ("12.3×", 12.3, "number", 0.1),
        ("51%", 51, "percent", 1),
        ("51.0 percent", 51, "percent", 0.1),
        ("0.5 pp", 0.5, "percent", 0.1),
        ("50 bps", 0.5, "percent", 0.01),
        ("December 31, 2024", 20241231, "date", DAY),
        ("2024-12-31", 20241231, "date", DAY),
        ("Dec. 31, 2024", 20241231, "date", DAY),
        ("12/31/2024", 20241231, "date", DAY),
        ("31 December 2024", 20241231, "date", DAY),
        ("December 2024", 20241200, "date", MONTH),
        ("FY2024", 20240000, "date", YEAR),
        ("FY24", 20240000, "date", YEAR),
        ("fiscal 2024", 20240000, "date", YEAR),
        ("2024", 20240000, "date", YEAR),
    ],
)
def test_extraction(text: str, value: float, kind: str, precision: float) -> None:
    quantity = only(text)
    assert (quantity.value, quantity.kind) == (pytest.approx(value), kind)
    assert quantity.precision == pytest.approx(precision)


def test_money_carries_its_currency() -> None:
    assert only("$1.2 billion").currency == "USD"
    assert only("€1.2 billion").currency == "EUR"
    assert only("1.2 billion").currency is None


def test_trailing_zeros_are_loose_precision_only() -> None:
    quantity = only("$120 billion")
    assert quantity.precision == 1e9 and quantity.loose_precision == 1e10


def test_years_are_not_amounts_but_written_amounts_are() -> None:
    assert only("(2024)").kind == "date"
    assert only("2,024").kind == "number"
    assert only("$2024").kind == "money"
    assert only("1850").kind == "number"  # outside 1900-2100


def test_filing_vocabulary_is_not_a_quantity() -> None:
    assert find_quantities("per the Form 10-K, Item 7, Note 12, Q4 results and the 401(k) plan; the 3rd segment") == []


def test_table_convention_scales_bare_numbers() -> None:
    assert only("Revenue: 115,877 (in millions)").value == pytest.approx(115_877e6)


def test_sign_in_words() -> None:
    assert only("a net loss of $2,722 million").sign_in_words
    assert only("(2,722)").sign_in_words
    assert not only("-$3.4 million").sign_in_words
    assert not only("revenue of $3.4 million").sign_in_words


def test_parenthesised_accounting_negative_with_a_scale_word() -> None:
    quantity = only("net loss of $(5.0) million")
    assert quantity.value == pytest.approx(-5e6) and quantity.sign_in_words


def test_quantities_come_in_reading_order() -> None:
    found = find_quantities("It was about $115.9B in FY2024, 51% of the total")
    assert [q.kind for q in found] == ["money", "date", "percent"]


def test_positions_point_into_the_text() -> None:
    text = "Revenue was $115.9 billion, up 8%, as of December 31, 2024."
    found = find_quantities(text)
    assert [text[q.start : q.end] for q in found] == [q.text for q in found]
    assert [q.text for q in found] == ["$115.9 billion", "8%", "December 31, 2024"]


@pytest.mark.parametrize(
    ("text", "value", "stated_sign"),
    [
        ("-$3.4 million", -3.4e6, "symbol"),
        ("+$3.4 million", 3.4e6, "symbol"),
        ("a decrease of $163 million", -163e6, "words"),
        ("an increase of $163 million", 163e6, "words"),
        ("$3.4 million", 3.4e6, ""),
    ],
)
def test_a_stated_sign_is_recorded_with_its_source(text: str, value: float, stated_sign: str) -> None:
    quantity = only(text)
    assert quantity.value == pytest.approx(value)
    assert quantity.stated_sign == stated_sign


def test_the_limit_reads_one_past_it_and_no_further() -> None:
    """A caller asks for at most `limit` and learns there were more from one extra quantity."""
    text = ", ".join(f"{n}%" for n in range(1, 51))
    assert len(find_quantities(text)) == 50
    assert len(find_quantities(text, limit=10)) == 11


# --- normalize: what the reader sees is what is graded ------------------------------------------------------------


def test_normalize_drops_invisible_characters_and_reads_lookalikes_as_latin() -> None:
    assert normalize("n\u043et 51%") == "not 51%"  # a Cyrillic o
    assert normalize("not\u200b 51%") == "not 51%"  # a zero-width space
    assert normalize("Dela\u00adware") == "Delaware"  # a soft hyphen
    assert normalize("\ufeffDelaware\u2060") == "Delaware"
    assert normalize("Revenue was $115.9 billion.") == "Revenue was $115.9 billion."  # plain text unchanged


def test_hidden_characters_cannot_hide_a_negation() -> None:
    fails_because("51%", "It was 49%, n\u043et 51%", "negates")  # a Cyrillic o
    fails_because("51%", "It was 49%, not\u200b 51%", "negates")  # a zero-width space
    assert passes("Delaware", "Dela\u00adware")  # a soft hyphen


def test_a_multiple_is_its_number_whatever_the_tables_scale() -> None:
    """ "0.87x" once read as 0 (the "x" stopped the number): an expected multiple then matched any answer saying 0."""
    assert only("in millions, coverage was 0.87x").value == pytest.approx(0.87)
    assert passes("0.87x", "Interest coverage was 0.87 times.")
    assert passes("12.3x", "about 12.3x")
    fails_because("0.87x", "The ratio was 0.", "no match")
    fails_because("12.3x", "12.4x", "no match")
