"""Answers whose expected answer holds no quantity (text.py): `compare_text`'s mention, negation, enumeration,
phrase, question, rival and flood rules, directly and through the grader."""

from __future__ import annotations

import pytest

from finsec.grading.text import MAX_NAME_EXTENSION, MAX_OTHER_WORDS, MAX_WORDS, compare_text
from tests.unit.finsec.test_deterministic_grader import fails_because, grade, passes

# --- compare_text -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "answer", "explanation"),
    [
        ("Delaware", "Delaware", "text match: Delaware"),
        ("Delaware", "Nevada", "text mismatch: answer lacks delaware"),
        ("", "Delaware", "expected answer has nothing to compare"),
        ("Delaware", "Delaware or Nevada", "the answer hedges between 'Delaware' and 'Nevada'"),
        ("Delaware", "It is not Delaware.", "the answer negates the expected answer 'Delaware' ('not Delaware')"),
        ("Delaware", "Is it Delaware? No, Nevada.", "the answer only asks about 'Delaware' ('Delaware ...?')"),
        (
            "New York Stock Exchange",
            "New shares. York county. The Stock Exchange.",
            "text mismatch: the answer never states 'New York Stock Exchange' as one phrase",
        ),
    ],
)
def test_compare_text_explains(expected: str, answer: str, explanation: str) -> None:
    passed = explanation.startswith("text match")
    assert compare_text(expected, answer) == (passed, explanation)


def test_at_most_max_name_extension_name_words_glued_to_a_mention() -> None:
    assert MAX_NAME_EXTENSION == 3
    assert compare_text("Delaware", "Delaware General Corporation Law")[0]  # three name words glued on
    passed, explanation = compare_text("Delaware", "Arizona Arkansas Delaware Florida Georgia")
    assert not passed and "buries" in explanation


def test_the_flood_caps() -> None:
    assert compare_text("Delaware", "Delaware " + "word " * (MAX_WORDS - 2))[0]
    passed, explanation = compare_text("Delaware", "Delaware " + "word " * MAX_WORDS)
    assert not passed and f"over {MAX_WORDS} words" in explanation
    distinct = [f"topic{chr(97 + k // 26)}{chr(97 + k % 26)}" for k in range(MAX_OTHER_WORDS + 1)]
    assert compare_text("Delaware", "Delaware: " + " ".join(distinct[:-1]))[0]
    passed, explanation = compare_text("Delaware", "Delaware: " + " ".join(distinct))
    assert not passed and f"among {MAX_OTHER_WORDS + 1} other words" in explanation


# --- through the grader: mentions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "answer"),
    [
        ("Delaware", "The company is incorporated in delaware."),
        ("Ernst & Young LLP", "The auditor is Ernst & Young, LLP"),
        ("the U.S.", "Mostly in the US"),
        ("McDonald's", "mcdonalds corp"),
        ("New York Stock Exchange", "listed on the Stock Exchange in New York"),
        ("Yes", "Yes."),
    ],
)
def test_text_match(expected: str, answer: str) -> None:
    result = grade(expected, answer)
    assert result.reward == 1.0 and (result.judge_text or "").startswith("text match")


@pytest.mark.parametrize(
    ("expected", "answer"),
    [
        ("Delaware", "Nevada"),
        ("No", "I know nothing"),  # tokens, not substrings
        ("Ernst & Young LLP", "Deloitte & Touche LLP"),
        ("PricewaterhouseCoopers", ""),
    ],
)
def test_text_mismatch(expected: str, answer: str) -> None:
    assert not passes(expected, answer)


def test_empty_expected_answer_never_passes() -> None:
    assert not passes("", "anything")
    assert not passes("...", "anything")


def test_the_expected_words_must_be_stated_together() -> None:
    fails_because("New York Stock Exchange", "New shares. York county. The Stock Exchange.", "as one phrase")


@pytest.mark.parametrize(
    ("expected", "answer"),
    [
        ("Delaware", "The company is incorporated in Delaware."),
        ("Deloitte & Touche LLP", "Deloitte & Touche LLP serves as the auditor"),
        ("Deloitte & Touche LLP", "Deloitte & Touche LLP, San Jose, California"),  # an address, not rivals
        ("Deloitte & Touche LLP", "Deloitte & Touche LLP, the independent registered public accounting firm."),
        ("Delaware", "Delaware, USA"),
        ("Delaware", "Incorporated under the Delaware General Corporation Law."),
        ("Delaware", "It's incorporated in Delaware and headquartered elsewhere."),
        ("Texas", "Tesla is incorporated in Texas, not Delaware."),
        ("Texas", "Texas (Tesla reincorporated from Delaware in June 2024)."),
        ("Texas", "Tesla is incorporated in Texas and headquartered in Austin, Texas."),
        ("Texas", "Tesla, Inc. is incorporated in the State of Texas."),
        ("industrial data analytics software", "It sells software for industrial data analytics."),
        (
            "industrial data analytics software",
            "Helixar operates in industrial data analytics software, serving manufacturers and utilities.",
        ),
    ],
)
def test_honest_text_sentences_pass(expected: str, answer: str) -> None:
    result = grade(expected, answer)
    assert result.reward == 1.0, result.judge_text


# --- through the grader: the same commitment as for values --------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Delaware, Nevada or Texas",
        "Delaware or Nevada",
        "either Nevada or Delaware",
        "Delaware (or possibly Nevada)",
        "delaware or nevada",
    ],
)
def test_text_alternatives_are_a_hedge(answer: str) -> None:
    fails_because("Delaware", answer, "hedges between")


@pytest.mark.parametrize(
    "answer",
    [
        "Delaware/Nevada",
        "Delaware and Nevada",
        "Nevada, Delaware.",
        "Delaware, Nevada, Texas",
        "It is incorporated in Delaware, nevada, texas",
        "Texas. Delaware. Nevada.",
        "Deloitte & Touche LLP, KPMG LLP, Ernst & Young LLP",
    ],
)
def test_text_lists_of_candidates_fail(answer: str) -> None:
    expected = "Deloitte & Touche LLP" if "LLP" in answer else "Delaware"
    fails_because(expected, answer, "candidates")


@pytest.mark.parametrize(
    "answer",
    [
        "It is not Delaware.",
        "Delaware is incorrect.",
        "Rather than Delaware, it is incorporated in Nevada.",
        "The company isn't incorporated in Delaware.",
    ],
)
def test_text_negated_fails(answer: str) -> None:
    fails_because("Delaware", answer, "negates the expected answer")


STATES = (
    "Alabama Alaska Arizona Arkansas California Colorado Connecticut Delaware Florida Georgia Hawaii Idaho "
    "Illinois Indiana Iowa Kansas Kentucky Louisiana Maine Maryland Massachusetts Michigan Minnesota"
).split()


@pytest.mark.parametrize(
    ("answer", "cause"),
    [
        (" ".join(STATES), "buries"),  # names without separators
        (", ".join(STATES), "candidates"),
        (
            "The company describes its products, customers, competition, employees, properties, legal proceedings, "
            "market risk, controls, executive compensation, auditors, exhibits, segments, geographic data, revenue "
            "recognition, leases, income taxes, pensions, derivatives, goodwill, intangibles, debt, equity, stock "
            "plans, commitments, contingencies, subsequent events and Delaware.",
            "flood",
        ),
        ("Delaware " + "and more words " * 120, "flood"),
        ("It is Delaware; it might be Nevada.", "hedges"),
        ("Delaware. Alternatively, Nevada.", "hedges"),
        ("The correct answer is Delaware. My answer: Nevada.", "designates"),
        ("My final answer is Nevada, though Delaware is also possible.", "hedges"),
        ("Is it Delaware? No, Nevada.", "only asks"),
    ],
)
def test_text_floods_hedges_and_rivals_fail(answer: str, cause: str) -> None:
    fails_because("Delaware", answer, cause)


def test_yes_and_no_together_fail() -> None:
    fails_because("Yes", "Yes, but no.", "both")
    fails_because("Yes", "Yes or no", "hedges")
    assert passes("Yes", "Yes, there were no material weaknesses.")
