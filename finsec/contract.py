"""Wire models of the finance_sec_search resources server (docs/contract.md §A). Names follow NeMo Gym's."""

from __future__ import annotations

import ast
import json
import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue, field_validator

__all__ = [
    "AggregateMetricsRequest",
    "CloseSessionRequest",
    "CloseSessionResponse",
    "coerce_stringified",
    "EdgarSearchRequest",
    "EpisodeId",
    "EpisodeSeedRequest",
    "EpisodeSeedResponse",
    "list_of",
    "MAX_COERCED_CHARS",
    "MAX_ID_CHARS",
    "ParseHtmlPageRequest",
    "ResponsesCreateParams",
    "RetireRequest",
    "RetrieveInformationRequest",
    "ROLLOUT_ID",
    "SecFilingSearchRequest",
    "StringList",
    "SubmitFinalResultRequest",
    "TaskId",
    "ToolResult",
    "VerifyRequest",
    "VerifyResponse",
    "WebSearchRequest",
]

ROLLOUT_ID = "[A-Za-z0-9][A-Za-z0-9._-]*"  # NeMo Gym's rollout ids: episode ids and the /ng-rollout prefix
_CAPTURE_SUFFIX = re.compile(r"-a[1-9][0-9]*$")


MAX_ID_CHARS = 256  # session IDs end up in cookies and shard keys; NeMo Gym's are 50 characters
# ast.literal_eval is slow and memory-hungry: a string of megabytes stalls the loop for a long time and takes many
# times its size in memory (tests/unit/deployments/test_hostile_bodies.py)
MAX_COERCED_CHARS = 16_384


def coerce_stringified(value: Any) -> Any:
    """Tool-call parsers send nested arguments as strings: '["10-K"]' or "['10-K']" become lists (§A.14).
    Only short strings are tried: a longer one is left as it is, and validation rejects it with a 422."""
    if not isinstance(value, str) or len(value) > MAX_COERCED_CHARS:
        return value
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(parsed, (list, dict)):
            return parsed
    return value


def list_of(*types: type) -> BeforeValidator:
    """`coerce_stringified`, then one error for the first item of a wrong type. Left to pydantic, every wrong item
    is its own error, and FastAPI rebuilds them all on the event loop: a body of megabytes of them stalled it for
    a long time (tests/unit/deployments/test_hostile_bodies.py)."""
    names = " or ".join(t.__name__ for t in types)

    def check(value: Any) -> Any:
        value = coerce_stringified(value)
        if isinstance(value, list):
            for index, item in enumerate(value):
                if not isinstance(item, types) or isinstance(item, bool):
                    raise ValueError(f"item {index} is a {type(item).__name__}; every item must be a {names}")
        return value

    return BeforeValidator(check)


# ----- sessions (§A.1, §A.2) -----


class EpisodeId(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    rollout_id: str = Field(min_length=1, max_length=MAX_ID_CHARS, pattern=f"^{ROLLOUT_ID}$")
    attempt: int = Field(0, ge=0)

    @field_validator("rollout_id")
    @classmethod
    def _no_capture_suffix(cls, value: str) -> str:
        if _CAPTURE_SUFFIX.search(value):
            raise ValueError("rollout_id must not end in '-a<N>'; pass the attempt number in 'attempt' instead")
        return value


class TaskId(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    taskset: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    task_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)


class EpisodeSeedRequest(BaseModel):
    """`ResourcesSeedSessionRequest`. A seed body carrying `resources_session_id` must be this (Decision 5)."""

    model_config = ConfigDict(extra="forbid")
    resources_session_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    episode_id: EpisodeId
    task_id: TaskId
    task_data: dict[str, JsonValue]


class EpisodeSeedResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    resources_session_id: str
    resources_tools: None = None
    sandbox_access: None = None


class CloseSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    resources_session_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)  # Decision 15
    episode_id: EpisodeId


class CloseSessionResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    resources_session_id: str


# ----- verify and metrics (§A.3, §A.4, §D) -----


class ResponsesCreateParams(BaseModel):
    """An OpenAI Responses-API create-params object; only `input` is required here, the rest is echoed."""

    model_config = ConfigDict(extra="allow")
    input: str | list[Any]


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    responses_create_params: ResponsesCreateParams
    response: dict[str, Any]
    question: str
    expected_answer: str
    ng_rollout_id: str | None = Field(None, alias="_ng_rollout_id", exclude=True)
    # The task row's canonical answer, when it carries one: echoed into the row, never graded; any JSON value, as
    # before it was read (other keys are ignored), and left out of the verdict key (grading never reads it).
    canonical_answer: JsonValue = Field(None, exclude=True)


class VerifyResponse(BaseModel):
    responses_create_params: ResponsesCreateParams
    response: dict[str, Any]
    reward: float
    mask_sample: bool = False
    failure_kind: str | None = None
    failure_reason: str | None = None
    expected_answer: str
    judge_rating: int | None = None
    judge_text: str | None = None
    # Whether the answer's figures appear in the documents this session stored (finsec/grading/grounding.py):
    # null when there is nothing to check (no figures, no session documents to read, or a masked row).
    grounded: bool | None = None
    ungrounded_figures: list[str] = Field(default_factory=list)  # as written; at most 8, each at most 40 characters
    # What a later re-grade needs (`finsec reverify`), on graded rows only (null when masked): the digests of the
    # texts the session held, in the order stored (null with no open session); the grader's identity and version
    # (finsec/grading/identity.py); the task's canonical answer (the body's, else its expected_answer).
    session_documents: list[str] | None = None
    grader: dict[str, JsonValue] | None = None
    canonical_answer: JsonValue = None


class RetireRequest(BaseModel):
    """The internal admin route's body: retire_session_state(session_id) (contract §C.8, Decision 8)."""

    model_config = ConfigDict(extra="forbid")
    session_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)


class AggregateMetricsRequest(BaseModel):
    verify_responses: list[Any] = Field(default_factory=list)  # rows that are not objects are skipped


# ----- tools (§A.8-A.10) -----


class ToolResult(BaseModel):
    results: str


class ParseHtmlPageRequest(BaseModel):
    url: str
    key: str


class RetrieveInformationRequest(BaseModel):
    prompt: str
    input_character_ranges: Annotated[list[Any] | None, BeforeValidator(coerce_stringified)] = None


class SubmitFinalResultRequest(BaseModel):
    final_result: str


StringList = Annotated[list[str] | None, list_of(str)]


class SecFilingSearchRequest(BaseModel):
    ticker: str
    form_types: StringList = None
    start_date: str | None = None
    end_date: str | None = None


class EdgarSearchRequest(BaseModel):
    search_query: str
    form_types: StringList = None
    ciks: Annotated[list[str | int] | None, list_of(str, int)] = None
    start_date: str | None = "1900-01-01"
    end_date: str | None = None
    page: int = Field(1, ge=1)
    top_n_results: int = Field(100, ge=1, le=100)


class WebSearchRequest(BaseModel):
    search_query: str
    start_date: str | None = None
    end_date: str | None = None
    number_of_results: int | None = Field(10, ge=1, le=20)
