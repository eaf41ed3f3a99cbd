"""The rows /verify answers with (contract §A.3, §D): scored, hard-gated, masked, or judge_failed."""

from __future__ import annotations

from typing import Any

from .contract import VerifyRequest, VerifyResponse
from .grading.answer import HARD_GATE_TEXT, question_of, submitted_answer
from .grading.grader import Grader, GradingFailed

_REASON_LIMIT = 2000


def _echo(body: VerifyRequest) -> dict[str, Any]:
    return {
        "responses_create_params": body.responses_create_params,
        "response": body.response,
        "expected_answer": body.expected_answer,
    }


def masked_row(body: VerifyRequest, failure_kind: str, reason: str) -> dict[str, Any]:
    """A row whose reward is not a measurement (§C.5, §D.5): judge never called."""
    return VerifyResponse(
        **_echo(body), reward=0.0, mask_sample=True, failure_kind=failure_kind, failure_reason=reason
    ).model_dump(mode="json")


async def scored_row(body: VerifyRequest, grader: Grader) -> dict[str, Any]:
    answer = submitted_answer(body.response)
    if not answer.strip():  # §D.2: no fallback to the assistant's text
        return VerifyResponse(**_echo(body), reward=0.0, judge_rating=0, judge_text=HARD_GATE_TEXT).model_dump(
            mode="json"
        )
    question = question_of(body.responses_create_params.input)
    try:
        grade = await grader.grade(question, body.expected_answer, answer)
    except GradingFailed as error:
        return _judge_failed_row(body, str(error)[:_REASON_LIMIT])
    return VerifyResponse(
        **_echo(body),
        reward=grade.reward,
        judge_rating=grade.judge_rating,
        judge_text=grade.judge_text,
        failure_kind=grade.failure_kind,
    ).model_dump(mode="json")


def _judge_failed_row(body: VerifyRequest, reason: str) -> dict[str, Any]:
    """NeMo Gym's judge_failsafe row: the request dump, masked (§A.3)."""
    row = body.model_dump(mode="json")
    return {
        **row,
        "reward": 0.0,
        "mask_sample": True,
        "failure_kind": "judge_failed",
        "failure_reason": reason,
        "instance_config": {"mask_sample": True},  # the request model keeps no instance_config to merge
        "_ng_failure_class": "judge_failed",
        "_ng_failure_judge_error": reason,
    }
