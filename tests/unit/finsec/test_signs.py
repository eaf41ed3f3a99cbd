"""Which way a stated value points (signs.py): `Polarity` of each value, from its stated sign or the nature word
bound to it; and, through the grader, an answer whose value points the other way does not state the expected one."""

from __future__ import annotations

import pytest

from finsec.grading.numbers import find_quantities
from finsec.grading.signs import MAX_WORDS, Polarity
from tests.unit.finsec.test_deterministic_grader import fails_because, grade, passes


def polarities(text: str) -> list[int]:
    found = find_quantities(text)
    polarity = Polarity(text, found)
    return [polarity.of(q) for q in found if q.kind != "date"]


# --- Polarity -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "way"),
    [
        ("a net loss of $5.0 million", -1),
        ("$5.0 million net loss", -1),  # the word right after the value
        ("net cash used in operating activities was $3 million", -1),
        ("a deficit of $2.0 billion", -1),
        ("The net loss for fiscal 2024 was $5.0 million", -1),  # a year between does not block
        ("net income of $5.0 million", 1),
        ("a surplus of $2.0 billion", 1),
        ("net cash provided by operating activities of $3 million", 1),
        ("net income of $(5.0) million", -1),  # a positive word and accounting parentheses: a loss
        ("-$5.0 million", -1),  # a stated sign
        ("+$5.0 million", 1),
        ("a decrease of $163 million", -1),  # a direction numbers.py bound
        ("$5.0 million", 0),
        ("($5.0 million)", 0),  # parentheses alone may be an aside
        ("Net income (loss) of $5.0 million", 0),  # a label that names both ways
        ("net cash provided by (used in) operations of $5.0 million", 0),
        ("income tax of $5.0 million", 0),
        ("a net loss. Then $5.0 million", 0),  # another sentence
    ],
)
def test_polarity(text: str, way: int) -> None:
    assert polarities(text) == [way]


def test_a_nature_word_binds_to_one_value_only() -> None:
    """Another amount between a word and a value blocks it: "a net loss of $1 million and $2 million"."""
    assert polarities("a net loss of $1 million and $2 million") == [-1, 0]


def test_a_nature_word_binds_across_at_most_max_words() -> None:
    assert MAX_WORDS == 6
    assert polarities("a loss in the first fiscal quarter of $5 million") == [-1]  # six words between
    assert polarities("a loss in the first full fiscal quarter of $5 million") == [0]  # seven


def test_explained_names_the_words_that_gave_the_polarity() -> None:
    text = "a net loss of $5.0 million"
    found = find_quantities(text)
    assert Polarity(text, found).explained(found[0]) == (-1, "loss")
    text = "-$5.0 million"
    found = find_quantities(text)
    assert Polarity(text, found).explained(found[0]) == (-1, "-$5.0 million")


# --- sign words bind to the value they qualify --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "answer"),
    [
        ("a net loss of $5.0 million", "net income of $5.0 million"),
        ("a net loss of $5.0 million", "$5.0 million net income"),
        ("a net loss of $5.0 million", "a profit of $5.0 million"),
        ("a net loss of $5.0 million", "earnings of $5.0 million"),
        ("a deficit of $2.0 billion", "a surplus of $2.0 billion"),
        ("net cash outflow of $418.4 million", "net cash inflow of $418.4 million"),
        ("net income of $5.0 million", "a net loss of $5.0 million"),
        ("a decrease of $163 million", "an increase of $163 million"),
        ("-12.5%", "revenue grew 12.5%"),
    ],
)
def test_the_opposite_sign_word_fails(expected: str, answer: str) -> None:
    fails_because(expected, answer, "sign mismatch")


@pytest.mark.parametrize(
    "answer",
    [
        "a net loss of $5.0 million",
        "net loss of $(5.0) million",
        "-$5.0 million loss",
        "$5.0 million net loss",
        "$5.0 million",
        "net income of $(5.0) million",
        "Net income (loss) of $(5.0) million",
        "The net loss for fiscal 2024 was $5.0 million",
        "net income was negative $5.0 million",
    ],
)
def test_a_loss_stated_any_way_passes(answer: str) -> None:
    assert passes("a net loss of $5.0 million", answer), grade("a net loss of $5.0 million", answer).judge_text


def test_an_unsigned_expected_accepts_either_sign_word() -> None:
    """The question says which way ("What was the net loss?"), so a magnitude alone is the answer."""
    assert passes("$400,253 thousand", "a net loss of $400,253 thousand")
    assert passes("$400,253 thousand", "net income of $400,253 thousand")
