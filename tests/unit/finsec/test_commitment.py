"""Does an answer commit to what it states (commitment.py): `negation`, `hedge_cue`, `offered_as_possible`, `asked`
and `designations` around a span; and, through the grader, a negated value, a value only asked about, and a value
the answer designates as its answer. Hedges between values are test_rivals.py; between names, test_text.py."""

from __future__ import annotations

import pytest

from finsec.grading.commitment import (
    ASKED_REACH,
    REACH_WORDS,
    asked,
    designations,
    hedge_cue,
    negation,
    offered_as_possible,
)
from tests.unit.finsec.test_deterministic_grader import REVENUE, fails_because, passes


def around(text: str, span: str) -> tuple[str, int, int]:
    """`text` and the position of `span` in it (its last occurrence)."""
    start = text.rindex(span)
    return text, start, start + len(span)


# --- the functions ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "span", "words"),
    [
        ("It was 49%, not 51%", "51%", "not 51%"),
        ("51% is incorrect", "51%", "51% is incorrect"),
        ("It isn't 51%", "51%", "n't 51%"),
        ("rather than a net loss of $5 million", "$5 million", "rather than a net loss of $5 million"),
        ("1,789,000 vehicles is wrong", "1,789,000", "1,789,000 vehicles is wrong"),
        ("51%, no, 49%", "51%", "51% no"),
        ("It is not Delaware.", "Delaware", "not Delaware"),
    ],
)
def test_negation_finds_the_denying_words(text: str, span: str, words: str) -> None:
    assert negation(*around(text, span)) == words


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("It was 51%, not 49%", "51%"),
        ("not 51%, but 49%", "49%"),  # the clause ended at "but"
        ("not more than 51%", "51%"),  # a bound
        ("not only 51%", "51%"),
        ("51%, not including hedging", "51%"),
        ("It was 51%", "51%"),
    ],
)
def test_negation_leaves_an_undenied_span_alone(text: str, span: str) -> None:
    assert negation(*around(text, span)) is None


def test_a_negator_reaches_at_most_reach_words() -> None:
    assert REACH_WORDS == 5
    assert negation(*around("rather than a net loss of $5 million", "$5 million"))  # five words between
    assert negation(*around("rather than a very large net loss of $5 million", "$5 million")) is None  # seven


@pytest.mark.parametrize(
    ("text", "span", "cue"),
    [
        ("It might be $120 billion", "$120 billion", "might be $120 billion"),
        ("or possibly Nevada", "Nevada", "or possibly Nevada"),
        ("$120 billion is also possible", "$120 billion", "$120 billion is also possible"),
        ("It was $120 billion.", "$120 billion", None),
        ("In May 2024 it was $5", "$5", None),  # "May" the month is no cue
    ],
)
def test_hedge_cue(text: str, span: str, cue: str | None) -> None:
    assert hedge_cue(*around(text, span)) == cue


@pytest.mark.parametrize(
    ("text", "span", "offered"),
    [
        ("51% or something else", "51%", True),
        ("Delaware would be an option", "Delaware", True),
        ("Delaware or another state", "Delaware", True),
        ("51% or 49%", "51%", False),  # a named alternative is the rival rules' to judge
        ("51% of revenue", "51%", False),
    ],
)
def test_offered_as_possible(text: str, span: str, offered: bool) -> None:
    assert (offered_as_possible(*around(text, span)) is not None) is offered


def test_asked_reads_the_end_of_the_sentence() -> None:
    text = "Is it 51%? No, 49%."
    assert asked(text, text.index("51%") + 3)
    assert not asked(text, text.index("49%") + 3)
    assert not asked("What was the share? 51%.", len("What was the share? 51%"))
    assert not asked("51%" + " x" * ASKED_REACH + "?", 3)  # a question mark out of reach


def test_designations_span_to_the_end_of_each_sentence() -> None:
    text = "The correct answer is Delaware. My answer: Nevada"
    assert [text[a:b].strip() for a, b in designations(text)] == ["Delaware", "Nevada"]
    text = "I'd say $5 million; maybe more"
    assert [text[a:b].strip() for a, b in designations(text)] == ["$5 million"]
    assert designations("Revenue was $5 million.") == []


# --- negation -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "not 51%, but 49%",
        "It was 49%, not 51%",
        "51% is incorrect; it was 49%",
        "rather than 51%, it was 49%",
        "instead of 51%, 49%",
        "It isn't 51%",
        "The share was never 51%",
        "51%, no, 49%",
    ],
)
def test_a_negated_expected_value_fails(answer: str) -> None:
    fails_because("51%", answer, "negates the expected value 51%")


def test_negation_binds_to_its_own_clause() -> None:
    assert passes("51%", "It was 51%, not 49%.")
    assert passes("51%", "Not 49% but 51%.")
    assert passes("51%", "51%, not including the effect of hedging")
    assert passes("51%", "not more than 51%")  # a bound, not a denial (bounds are not graded as hedges)
    fails_because("1,789,000 vehicles", "1,789,000 vehicles is incorrect; it was 1,967,900 vehicles.", "negates")
    fails_because(
        "a net loss of $303,791 thousand",
        "Rather than a net loss of $303,791 thousand, the figure is a net loss of $334,170 thousand.",
        "negates",
    )


# --- a question is not a statement --------------------------------------------------------------------------------


def test_a_value_in_a_question_is_not_stated() -> None:
    fails_because("51%", "Is it 51%? No, it is 49%.", "only asks about 51%")
    assert passes("51%", "What was the share? 51%.")


# --- designations -------------------------------------------------------------------------------------------------


def test_a_planted_correct_answer_does_not_cover_another_answer() -> None:
    fails_because(REVENUE, "The correct answer is $115,877 million. My answer: $120 billion", "designates $120 billion")
    assert passes(REVENUE, "The answer is $115.9 billion.")
