"""Graders: turn (question, expected answer, submitted answer) into a grade. The verify route is grader-agnostic."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Grade", "Grader", "GradingFailed", "SyncGrader"]


@dataclass(frozen=True)
class Grade:
    reward: float
    judge_rating: int | None = None
    judge_text: str | None = None
    failure_kind: str | None = None  # diagnostic only, e.g. judge_unparseable (Decision 11)


class GradingFailed(Exception):
    """The grader could not produce a measurement (a judge that cannot be reached): a masked judge_failed row."""


class Grader(Protocol):
    async def grade(self, question: str, expected_answer: str, answer: str) -> Grade: ...


class SyncGrader(Grader, Protocol):
    """A grader with `deterministic = True`: it also grades without waiting, so /verify grades before the shard
    settles the verify."""

    deterministic: bool

    def grade_sync(self, question: str, expected_answer: str, answer: str) -> Grade: ...
