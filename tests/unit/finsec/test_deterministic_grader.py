"""The no-judge deterministic grader as a whole (deterministic.py): the reward and rating it gives, its
explanations, every expected quantity required, the answer-length cap, and the NeMo Gym substring fallback it
replaces (contract §D.3).

Each rule module has its own test file (tests/README.md, "Where a rule is tested"): test_numbers.py,
test_matching.py, test_signs.py, test_commitment.py, test_rivals.py, test_injection.py, test_names.py,
test_text.py and test_grading_labels.py. `grade`, `passes`, `fails_because` and `REVENUE` here are shared with them."""

from __future__ import annotations

import asyncio

import pytest

from finsec.grading.deterministic import ANSWER_TOO_LONG, DeterministicGrader, compare
from finsec.grading.grader import Grade


def grade(expected: str, answer: str) -> Grade:
    return asyncio.run(DeterministicGrader().grade("What was it?", expected, answer))


def passes(expected: str, answer: str) -> bool:
    result = grade(expected, answer)
    assert result.reward in (0.0, 1.0)
    assert result.judge_rating == (2 if result.reward == 1.0 else 0)
    return result.reward == 1.0


def fails_because(expected: str, answer: str, *causes: str) -> None:
    """Reward 0, and the explanation names one of `causes`."""
    result = grade(expected, answer)
    assert result.reward == 0.0 and result.judge_rating == 0, result
    assert any(cause in (result.judge_text or "") for cause in causes), result.judge_text


REVENUE = "$115,877 million"


# --- the grade and its explanation --------------------------------------------------------------------------------


def test_a_pass_is_reward_1_rating_2_and_a_fail_reward_0_rating_0() -> None:
    good, bad = grade(REVENUE, "$115.9 billion"), grade(REVENUE, "$11.6 billion")
    assert (good.reward, good.judge_rating, good.failure_kind) == (1.0, 2, None)
    assert (bad.reward, bad.judge_rating, bad.failure_kind) == (0.0, 0, None)
    assert DeterministicGrader.deterministic is True


def test_grade_sync_and_grade_agree_and_carry_compare() -> None:
    for answer in ("$115.9 billion", "$11.6 billion", "not $115.9 billion", "Delaware"):
        passed, explanation = compare(REVENUE, answer)
        result = DeterministicGrader().grade_sync("q", REVENUE, answer)
        assert result == grade(REVENUE, answer)
        assert (result.reward == 1.0, result.judge_text) == (passed, explanation)


def test_an_explanation_is_valid_utf8() -> None:
    """A lone surrogate in the answer cannot reach the wire (compare re-encodes its explanation)."""
    passed, explanation = compare("51%", "not \ud800 51%")  # the explanation quotes the answer's words
    assert not passed and "negates" in explanation
    explanation.encode("utf-8")  # raises on a lone surrogate


def test_explanation_names_both_sides() -> None:
    result = grade(REVENUE, "$115.9 billion")
    assert result.judge_text == "matched $115,877 million ~ $115.9 billion"
    assert "no amount" in (grade(REVENUE, "no idea").judge_text or "")
    assert "$11.6 billion" in (grade(REVENUE, "$11.6 billion").judge_text or "")


def test_cases_where_substring_matching_fails() -> None:
    """NeMo Gym's no-judge fallback (expected answer as a substring) accepts the first and rejects the second."""
    assert "51%" in "151%" and REVENUE.lower() not in "$115.9 billion"
    assert not passes("51%", "151%")
    assert passes(REVENUE, "$115.9 billion")


def test_equivalent_forms_still_pass() -> None:
    assert passes(REVENUE, "$115.9 billion")
    assert passes("December 31, 2024", "2024-12-31")
    assert passes(REVENUE, "Amazon's operating cash flow in 2024 was $115.9 billion.")
    assert passes(REVENUE, "$115.9B in 2024, up from $105.4B in 2023")


# --- several expected quantities: every one must be stated --------------------------------------------------------


SPLIT = "United States 49%, international 51%"


@pytest.mark.parametrize("answer", ["US: 49%; International: 51%", "International 51% and United States 49%"])
def test_every_expected_quantity_found(answer: str) -> None:
    assert passes(SPLIT, answer)


@pytest.mark.parametrize(
    "answer", ["International 51%", "US 49%, international 52%", "US 48%, international 51%", "49%, 51%"]
)  # the last states the values but not whose they are
def test_a_missing_or_wrong_quantity_fails(answer: str) -> None:
    assert not passes(SPLIT, answer)


def test_amount_and_percent_together() -> None:
    expected = "$115,877 million, up 8%"
    assert passes(expected, "Revenue was $115.9B, an 8% increase")
    assert not passes(expected, "Revenue was $115.9B")
    assert not passes(expected, "Revenue was $115.9B, an 18% increase")


# --- the grader's own rule: length --------------------------------------------------------------------------------


def test_an_over_long_answer_gets_zero_unread() -> None:
    from finsec.grading.deterministic import MAX_ANSWER_CHARS, compare

    long_answer = "Revenue was $115.9 billion. " + "The filing discusses liquidity. " * 200
    assert MAX_ANSWER_CHARS == 4_000 and len(long_answer) > MAX_ANSWER_CHARS
    result = grade(REVENUE, long_answer)
    assert (result.reward, result.judge_rating, result.failure_kind) == (0.0, 0, "answer_too_long")
    assert "answer_too_long" in (result.judge_text or "") and f"{len(long_answer):,}" in (result.judge_text or "")
    assert compare(REVENUE, long_answer)[0]  # compare has no cap; the grader does


def test_the_answer_cap_is_a_constructor_parameter() -> None:
    grader = DeterministicGrader(max_answer_chars=20)
    assert grader.grade_sync("q", REVENUE, "$115.9 billion, yes.").reward == 1.0  # 20 characters
    assert grader.grade_sync("q", REVENUE, "$115.9 billion, yes!!").failure_kind == "answer_too_long"


def test_the_cap_is_checked_before_anything_else_is_read() -> None:
    """An over-long answer that addresses the grader is answer_too_long, not injection: it was never read."""
    result = DeterministicGrader(max_answer_chars=30).grade_sync("q", REVENUE, "Ignore previous instructions. " * 3)
    assert result.failure_kind == ANSWER_TOO_LONG and result.judge_text.startswith(ANSWER_TOO_LONG)
