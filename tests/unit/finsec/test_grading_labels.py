"""Label-bound grading: an expected answer that pairs labels with values needs the same pairs, in any order;
signed changes; and bounded work on hostile answers (huge, or any Python string)."""

from __future__ import annotations

import pytest

from finsec.grading.deterministic import MAX_QUANTITIES, compare
from finsec.grading.numbers import find_quantities

GEOGRAPHY = "U.S. 51%, international 49%"
SEGMENTS = "Americas: $167,045 million; Greater China: $66,952 million"
PERIODS = "2024: 24.1%; 2023: 14.7%"
CATEGORIES = "iPhone $201,183 million; Wearables, Home and Accessories $37,005 million; Services $96,169 million"


@pytest.mark.parametrize(
    ("expected", "answer"),
    [
        (GEOGRAPHY, "U.S. 51%, international 49%"),
        (GEOGRAPHY, "International revenue was 49% and US revenue was 51%."),
        (GEOGRAPHY, "51% in the United States and 49% outside the U.S."),
        (GEOGRAPHY, "51% from U.S. customers and 49% from non-U.S. customers"),
        (GEOGRAPHY, "The U.S. and international shares were 51% and 49%, respectively."),
        (GEOGRAPHY, "The U.S. and international businesses grew: U.S. 51%, international 49%"),  # nearest wins
        (SEGMENTS, "Americas net sales were $167.0 billion and Greater China net sales were $67.0 billion"),
        (SEGMENTS, "$67.0 billion for Greater China, $167.0 billion for the Americas"),
        (PERIODS, "The effective tax rate rose from 14.7% in 2023 to 24.1% in 2024."),
        (PERIODS, "In fiscal 2024 it was 24.1%, compared with 14.7% in fiscal 2023."),
        (PERIODS, "FY24 24.1%, FY23 14.7%"),
        (
            CATEGORIES,
            "$201,183 million for iPhone, $37,005 million for Wearables, Home and Accessories, and "
            "$96,169 million for Services",
        ),
        (CATEGORIES, "Services: $96.2B; iPhone: $201.2B; Wearables, Home and Accessories: $37.0B"),
    ],
)
def test_the_same_pairs_in_any_order_and_wording_pass(expected: str, answer: str) -> None:
    passed, why = compare(expected, answer)
    assert passed, why


@pytest.mark.parametrize(
    ("expected", "answer"),
    [
        (GEOGRAPHY, "U.S. 49%, international 51%"),  # the example: same numbers, labels swapped
        (GEOGRAPHY, "The U.S. and international shares were 49% and 51%, respectively."),
        (GEOGRAPHY, "U.S. 49% or 51%, international 49% or 51%"),  # every label given every value
        (GEOGRAPHY, "49%, 51%"),  # values without labels
        (SEGMENTS, "$67.0 billion for the Americas, $167.0 billion for Greater China"),
        (PERIODS, "The effective tax rate rose from 24.1% in 2023 to 14.7% in 2024."),
        (CATEGORIES, "iPhone: $201.2B; Wearables, Home and Accessories: $96.2B; Services: $37.0B"),
        (
            "Net sales $391,035 million, operating income $123,216 million",
            "Net sales of $123.2B and operating income of $391.0B",
        ),
    ],
)
def test_swapped_or_missing_labels_fail(expected: str, answer: str) -> None:
    passed, why = compare(expected, answer)
    assert not passed
    assert "label" in why


def test_unlabelled_values_keep_todays_rules() -> None:
    assert compare("$391,035 million and $383,285 million", "$383.3 billion and $391.0 billion")[0]
    assert compare("$115,877 million, up 8%", "up 8% to $115.9 billion")[0]  # one value of each kind


@pytest.mark.parametrize(
    "answer",
    [
        "-$163 million",
        "a decrease of $163 million",
        "it fell $163 million",
        "$163 million lower",
        "down $0.163 billion",
        "($163 million)",
    ],
)
def test_a_decrease_in_words_is_a_negative_change(answer: str) -> None:
    assert compare("a decrease of $163 million", answer)[0]
    assert compare("-$163 million", answer)[0]


@pytest.mark.parametrize(
    "answer", ["an increase of $163 million", "+$163 million", "it rose $163 million", "$163 million"]
)
def test_a_decrease_fails_against_an_increase(answer: str) -> None:
    assert not compare("a decrease of $163 million", answer)[0]


def test_a_level_after_a_direction_word_keeps_its_sign() -> None:
    assert compare("$93,736 million", "Net income decreased to $93.7 billion")[0]
    assert compare("$72,559 million", "It declined from $72.6 billion in 2023")[0]


def test_percentages_are_graded_at_their_stated_precision() -> None:
    assert compare("24.1%", "24.14%")[0] and compare("24.1%", "24.1 percent")[0]
    assert not compare("24.1%", "24.2%")[0]
    assert compare("31.5%", "about 31.51%")[0]
    assert not compare("31.5%", "32%")[0]


def test_too_many_quantities_fail_with_a_reason() -> None:
    answer = " ".join(f"{n}%" for n in range(MAX_QUANTITIES + 5))
    passed, why = compare("51%", answer)
    assert not passed and "more than 2,000 quantities" in why
    assert len(find_quantities(answer, limit=10)) == 11


@pytest.mark.parametrize(
    "text",
    [
        "\ud83d",
        "51%\x00",
        "\x00" * 100,
        "U.S. \udc00 51%, \ud800 international 49%",
        "$\u0000115.9 billion",
        "(((((" * 1000,
        "1" * 50_000,
        "." * 10_000,
    ],
)
def test_any_python_string_is_graded(text: str) -> None:
    for expected, answer in ((GEOGRAPHY, text), (text, GEOGRAPHY), (text, text), ("Delaware", text)):
        passed, why = compare(expected, answer)
        assert isinstance(passed, bool)
        why.encode("utf-8")  # goes on the wire as judge_text


def _long_answer(size: int) -> str:
    """Prose, tables, dates, labels and values, repeated up to `size` characters."""
    block = (
        "In fiscal 2024, U.S. revenue was $167,045 million (51%) and international revenue was 49%, "
        "compared with December 31, 2023, when it was $160.1 billion; a decrease of $163 million, "
        "respectively. Americas | 167,045 | 3% | (4)% \ud83d\x00 FY2023 12/31/2024 Item 7 Note 12 "
    )
    return (block * (size // len(block) + 1))[:size]


@pytest.mark.timeout(30)
def test_huge_answers_finish() -> None:
    """A ~1 MB answer against a ~300 KB expected answer: bounded work, a verdict with an explanation."""
    answer, expected = _long_answer(1_000_000), _long_answer(300_000)
    passed, why = compare(expected, answer)
    assert not passed and why
    assert compare("51%", answer)[0] is False  # too many quantities
    prose = ("The U.S. and international businesses grew in every region during the year. " * 14_000)[:1_000_000]
    assert compare(prose[:300_000] + GEOGRAPHY, prose + " U.S. 51%, international 49%")[0]  # label words galore
    assert compare(" ".join(["Delaware"] * 40_000), prose)[0] is False


@pytest.mark.parametrize(
    "answer",
    [
        "180,400 employees or 164,000 employees",
        "a decrease of $6.2 billion or a decrease of $5.6 billion",
        "either 164,000 employees or 170,000 employees",
    ],
)
def test_alternatives_joined_by_or_are_a_hedge(answer: str) -> None:
    expected = "164,000 employees" if "employees" in answer else "a decrease of $5,607 million"
    passed, why = compare(expected, answer)
    assert not passed and "hedged" in why


def test_the_grader_is_also_callable_synchronously() -> None:
    import asyncio

    from finsec.grading.deterministic import DeterministicGrader

    grader = DeterministicGrader()
    assert grader.deterministic
    for answer in ("U.S. 51%, international 49%", "U.S. 49%, international 51%"):
        assert grader.grade_sync("q", GEOGRAPHY, answer) == asyncio.run(grader.grade("q", GEOGRAPHY, answer))


INCOME_AND_LOSS = "net income $5.0 million; operating loss $2.0 million"


def test_sign_words_bind_to_their_own_labelled_value() -> None:
    assert compare(INCOME_AND_LOSS, "Operating loss was $2.0 million and net income was $5.0 million.")[0]
    passed, why = compare(INCOME_AND_LOSS, "a net loss of $5.0 million and operating income of $2.0 million")
    assert not passed and "sign mismatch" in why


def test_labels_do_not_excuse_a_negation_or_a_hedge() -> None:
    passed, why = compare(GEOGRAPHY, "U.S. 51%, international not 49% but 48%")
    assert not passed and "negates" in why
    passed, why = compare(PERIODS, "2024: 24.1% or maybe 14.7%; 2023: 14.7%")
    assert not passed and "hedged" in why


def test_a_change_from_one_level_to_another_is_not_a_range() -> None:
    assert compare("$115,877 million", "Operating cash flow grew from $84.9 billion to $115.9 billion")[0]
    passed, why = compare("$115,877 million", "$115.9 billion to $120 billion")
    assert not passed and "hedged" in why


def test_a_huge_answer_is_refused_by_the_grader_unread() -> None:
    from finsec.grading.deterministic import MAX_ANSWER_CHARS, DeterministicGrader

    answer = _long_answer(1_000_000)
    grade = DeterministicGrader().grade_sync("q", GEOGRAPHY, answer)
    assert (grade.reward, grade.failure_kind) == (0.0, "answer_too_long")
    assert f"{MAX_ANSWER_CHARS:,}" in (grade.judge_text or "")


def test_a_company_name_with_a_comma_is_one_label() -> None:
    """ "Tesla, Inc." and "AMAZON.COM, INC.": the comma of the name is no clause break, so each figure binds to its
    company however an analyst orders the sentence (the comparison tasks, finsec/taskgen/compare.py)."""
    expected = "AMAZON.COM, INC. (AMZN): 10.8%; Tesla, Inc. (TSLA): 7.2%"
    for said in (
        "Tesla, Inc. came in at 7.2% while AMAZON.COM, INC. had 10.8%.",
        "Amazon had the higher operating margin: 10.8% versus 7.2% for Tesla.",
        "AMZN 10.8%, TSLA 7.2%",
    ):
        assert compare(expected, said)[0], said
    assert not compare(expected, "Tesla, Inc. 10.8% and Amazon 7.2%")[0]
