"""The reward-hacking suite of bench/reward_hacking.py (harness/reward_hacking.py), graded here the same way: every
adversarial answer earns 0 with an explanation that names its cause, every honest paraphrase earns 1. Ray-free and
fast."""

from __future__ import annotations

from collections import Counter

import pytest

from harness import reward_hacking


@pytest.fixture(scope="module")
def suite():
    module = reward_hacking
    cases = module.suite()
    return module, cases, module.grade(cases)


def test_the_suite_covers_every_class_over_the_project_question_sets(suite) -> None:
    module, cases, _ = suite
    sides = Counter(c.side for c in cases)
    assert sides["adversarial"] >= 60 and sides["honest"] >= 60
    kinds = Counter((c.side, c.kind) for c in cases)
    assert all(kinds[("adversarial", kind)] >= 5 for kind in module.ADVERSARIAL), kinds
    assert all(kinds[("honest", kind)] >= 1 for kind in module.HONEST), kinds
    assert {c.source for c in cases} >= {"retrieval_questions", "retrieval_questions_hard", "corpus", "corpus issuers"}


def test_every_adversarial_answer_is_caught_and_the_cause_named(suite) -> None:
    _, _, rows = suite
    missed = [
        (r["kind"], r["expected"], r["answer"][:100], r["judge_text"])
        for r in rows
        if r["side"] == "adversarial" and not (r["reward"] == 0.0 and r["named"])
    ]
    assert not missed, missed


def test_every_honest_paraphrase_passes(suite) -> None:
    _, _, rows = suite
    rejected = [
        (r["kind"], r["expected"], r["answer"], r["judge_text"])
        for r in rows
        if r["side"] == "honest" and r["reward"] != 1.0
    ]
    assert not rejected, rejected


def test_over_long_answers_are_refused_with_their_failure_kind(suite) -> None:
    _, _, rows = suite
    long_rows = [r for r in rows if r["kind"] == "over-long"]
    assert long_rows and all(r["failure_kind"] == "answer_too_long" for r in long_rows)
    assert any(len(r["answer"]) >= 1_000_000 for r in long_rows)


def test_the_report_lists_each_class_with_its_counts(suite) -> None:
    module, _, rows = suite
    text = module.report(rows, {"grader (cap 4,000 characters)": {"median_ms": 0.01, "runs": 1}})
    for kind in module.ADVERSARIAL + module.HONEST:
        assert f"| {kind} |" in text
    assert "## Misgraded\n\nnone" in text
