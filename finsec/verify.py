"""/verify (contract §A.3, §C.5, §D): the session decides whether the reward is a measurement, the grader what it is.

Two paths, by grader:
- a deterministic grader is cheap and repeatable, so the answer is graded first (off the event loop) and one
  shard call settles the verify: masked, a cached verdict, or this verdict (kept for a re-send);
- an LLM judge is costly and stochastic, so the shard is asked first. An identical verify already being judged
  holds a lease there; its twins, on any replica, wait for its verdict instead of judging again, so every
  re-send gets the same score (Decision 7). A judge that cannot be reached gives the masked judge_failed row.
Verdicts are kept as the fields that rebuild a row, never as the echoed trajectory, under a key of the body and
of the grading settings (`grading_key`): a redeploy with another grader, judge, template or reward mode never
gets an old verdict back.

Leases cannot orphan. A lease lasts one judgement's worst case (`lease_seconds`: every attempt timing out), so
the lease of a replica that died mid-judge lapses then and a twin takes the judging over; every other way out
of a judgement (a verdict, a failed judge, an exception, a cancelled request or a replica shutting down)
releases it at once. Twins wait at most `judge_lease_seconds` in all.

Grounding. Every row that is not masked says whether the answer's figures appear in the documents this session
stored (`grounded`, `ungrounded_figures`; rule in grading/grounding.py, lookup in grounding.py). On the
deterministic path the one shard call hands the refs back (`Scored.documents`, read before it releases an
agent-run session); only when the verdict depends on grounding (`require_grounded_answer`: an ungrounded answer
gets 0 with failure_kind `ungrounded`, ungraded, so a policy cannot be rewarded for a guess) or on the judge
path are they read first. The setting is part of the grading key.

Provenance. Every row that is not masked also says what a later re-grade needs (`finsec reverify`): the digests
of the texts the session held (`session_documents`), from the same refs, so it costs the deterministic path no
shard call; the judge path reads the refs first, once, for both; the grader's identity and version
(grading/identity.py); and the task's canonical answer. A re-send's row is rebuilt from the same settings and
the session's refs, so it is the same row unless the session stored more documents in between.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from finsec import offload
from finsec.contract import VerifyRequest, VerifyResponse
from finsec.grading.answer import hard_gate, question_of, submitted_answer
from finsec.grading.failure_kinds import JUDGE_FAILED, gym_failure_kind
from finsec.grading.grader import Grade, Grader, GradingFailed, SyncGrader
from finsec.grading.grounding import NOT_CHECKED, UNGROUNDED, Grounding
from finsec.grading.identity import grader_identity
from finsec.grounder import Grounder
from finsec.metrics import NO_METRICS, Metrics
from finsec.single_flight import SingleFlight
from session_store import (
    Cached,
    Claims,
    DocumentRef,
    GradeNow,
    Masked,
    Pending,
    Scored,
    SessionStore,
    StoreUnavailable,
    Verdict,
    canonical_digest,
)

__all__ = ["held", "judge_failed_row", "masked_row", "Row", "verdict_row", "Verifier"]

log = logging.getLogger(__name__)
Row = Callable[[], dict[str, Any]]  # builds the /verify row; echoing a big trajectory runs off the event loop
_REASON_LIMIT = 2000


class Verifier:
    def __init__(
        self,
        store: SessionStore,
        grader: Grader,
        *,
        judge_lease_seconds: float,
        lease_seconds: float | None = None,
        grading_key: str = "",
        grounder: Grounder | None = None,
        require_grounded: bool = False,
        metrics: Metrics = NO_METRICS,
    ):
        self._store = store
        self._metrics = metrics
        self._grader = grader
        self._deterministic = bool(getattr(grader, "deterministic", False))
        self._wait = judge_lease_seconds
        self._lease = min(lease_seconds or judge_lease_seconds, judge_lease_seconds)
        self._grading_key = grading_key
        self._grounder = grounder
        self._require_grounded = require_grounded
        self._identity = {**grader_identity(grader), "require_grounded_answer": require_grounded}
        self._judging: SingleFlight[tuple[str, str], tuple[Row, bool]] = SingleFlight()  # identical verifies

    async def verify(self, sid: str, claims: Claims, body: VerifyRequest, size: int) -> tuple[dict[str, Any], bool]:
        """The row to answer with, and whether this verify released the cookie's (agent-run) session. `size` is
        the body's: big bodies are digested, graded and echoed into the row off the event loop."""
        digest = await offload.run(size, lambda: self.verdict_key(body.model_dump(mode="json")))
        grounding, first = NOT_CHECKED, self._grounder is not None and self._require_grounded and self._deterministic
        if self._grounder is not None and first:  # the verdict needs it before the shard settles the verify
            grounding = await self._grounder.ground(sid, body.response, size)
        row: Row
        if self._deterministic:
            verdict = await offload.run(size, self._grade_now, body, grounding)
            outcome = await self._store.finish_verify(sid, digest, verdict, claims)
            if not isinstance(outcome, Masked):
                self._metrics.cache_lookup("verdicts", isinstance(outcome, Cached))
            if isinstance(outcome, Masked):
                row, released = partial(masked_row, body, outcome.failure_kind, outcome.reason), False
            else:
                if self._grounder is not None and not first and outcome.documents is not None:
                    figures = await self._grounder.figures(body.response, size)
                    grounding = await self._grounder.against(figures, outcome.documents, size)
                row = partial(verdict_row, body, outcome.verdict, grounding, self._identity, held(outcome.documents))
                released = isinstance(outcome, Scored) and outcome.released
        else:  # the row (grounding, documents) is of the documents held before the plan releases anything
            refs = await self._store.document_refs(sid)
            if self._grounder is not None and refs is not None:
                grounding = await self._grounder.against(await self._grounder.figures(body.response, size), refs, size)
            row, released = await self._judging.run(
                (sid, digest), lambda: self._judged(sid, claims, digest, body, grounding, refs)
            )
        return await offload.run(size, row), released

    def verdict_key(self, body: dict[str, Any]) -> str:
        """What a verdict is kept under: the verify body and the grading settings that judged it."""
        return canonical_digest([self._grading_key, body])

    def _ungrounded(self, grounding: Grounding) -> Verdict | None:
        """The verdict of an answer that require_grounded_answer refuses to grade; None when it is graded."""
        if self._require_grounded and grounding.grounded is False:
            return Verdict(0.0, 0, grounding.explanation(), UNGROUNDED)
        return None

    def _grade_now(self, body: VerifyRequest, grounding: Grounding) -> Verdict:
        answer = submitted_answer(body.response)
        if (gated := hard_gate(answer)) is not None:
            return _verdict(gated)
        if (refused := self._ungrounded(grounding)) is not None:
            return refused
        grader = cast(SyncGrader, self._grader)  # only called when the grader says it is deterministic
        return _verdict(
            grader.grade_sync(question_of(body.responses_create_params.input), body.expected_answer, answer)
        )

    async def _judged(
        self,
        sid: str,
        claims: Claims,
        digest: str,
        body: VerifyRequest,
        grounding: Grounding,
        refs: dict[str, DocumentRef] | None,
    ) -> tuple[Row, bool]:
        deadline = time.monotonic() + self._wait
        while True:
            plan = await self._store.plan_verify(sid, digest, claims, self._lease)
            if not isinstance(plan, Pending) or time.monotonic() > deadline:
                break
            await asyncio.sleep(plan.retry_after)  # an identical verify is being judged: share its verdict
        if isinstance(plan, Masked):
            return partial(masked_row, body, plan.failure_kind, plan.reason), False
        if isinstance(plan, (Cached, GradeNow)):
            self._metrics.cache_lookup("verdicts", isinstance(plan, Cached))
        if isinstance(plan, Cached):
            return partial(verdict_row, body, plan.verdict, grounding, self._identity, held(refs)), False
        if isinstance(plan, Pending):
            raise StoreUnavailable(
                "An identical verify is still being judged; retry shortly for its verdict.", "judge_busy"
            )
        assert isinstance(plan, GradeNow)
        recorded = False
        try:
            verdict, failure = await self._judge(body, grounding)
            if plan.record:
                try:  # the row stands even if keeping it fails: a re-send is judged afresh, never a 503 now
                    await self._store.record_verdict(sid, digest, verdict)
                except StoreUnavailable:
                    log.warning("could not keep the verdict of session %s; a re-send will be judged again", sid)
                recorded = True
        finally:
            if plan.record and not recorded:  # cancelled, or a bug: end the lease now, even while cancelled
                release = asyncio.ensure_future(self._store.record_verdict(sid, digest, None))
                release.add_done_callback(lambda done: done.cancelled() or done.exception())
        if verdict is None:
            return partial(judge_failed_row, body, failure), False
        row = partial(verdict_row, body, verdict, grounding, self._identity, held(refs))
        return row, not plan.record and claims.kind == "agent_run"

    async def _judge(self, body: VerifyRequest, grounding: Grounding) -> tuple[Verdict | None, str]:
        answer = submitted_answer(body.response)
        if (gated := hard_gate(answer)) is not None:
            return _verdict(gated), ""
        if (refused := self._ungrounded(grounding)) is not None:  # the judge is not asked: its grade would not count
            return refused, ""
        question = question_of(body.responses_create_params.input)
        try:
            grade = await self._grader.grade(question, body.expected_answer, answer)
        except GradingFailed as error:
            return None, str(error)[:_REASON_LIMIT]
        except Exception as error:  # a fault in the judge's code is a failed measurement, never a 500
            log.exception("the judge failed")
            return None, f"the judge failed ({type(error).__name__})"
        return _verdict(grade), ""


def _verdict(grade: Grade) -> Verdict:
    return Verdict(grade.reward, grade.judge_rating, grade.judge_text, grade.failure_kind)


def _echo(body: VerifyRequest) -> dict[str, Any]:
    return {
        "responses_create_params": body.responses_create_params,
        "response": body.response,
        "expected_answer": body.expected_answer,
    }


def held(refs: dict[str, DocumentRef] | None) -> list[str] | None:
    """The digests of a session's texts, in the order their keys were stored; None with no open session."""
    return None if refs is None else [ref.digest for ref in refs.values()]


def verdict_row(
    body: VerifyRequest,
    verdict: Verdict,
    grounding: Grounding = NOT_CHECKED,
    grader: dict[str, Any] | None = None,
    documents: list[str] | None = None,
) -> dict[str, Any]:
    canonical = body.canonical_answer if body.canonical_answer is not None else body.expected_answer
    return VerifyResponse(
        **_echo(body),
        reward=verdict.reward,
        judge_rating=verdict.judge_rating,
        judge_text=verdict.judge_text,
        failure_kind=gym_failure_kind(verdict.failure_kind),
        grounded=grounding.grounded,
        ungrounded_figures=grounding.ungrounded_figures,
        session_documents=documents,
        grader=grader,
        canonical_answer=canonical,
    ).model_dump(mode="json")


def masked_row(body: VerifyRequest, failure_kind: str, reason: str) -> dict[str, Any]:
    """A row whose reward is not a measurement (§C.5, §D.5): judge never called."""
    return VerifyResponse(
        **_echo(body), reward=0.0, mask_sample=True, failure_kind=gym_failure_kind(failure_kind), failure_reason=reason
    ).model_dump(mode="json")


def judge_failed_row(body: VerifyRequest, reason: str) -> dict[str, Any]:
    """NeMo Gym's judge_failsafe row: the request dump, masked (§A.3)."""
    row = body.model_dump(mode="json")
    return {
        **row,
        "reward": 0.0,
        "mask_sample": True,
        "failure_kind": JUDGE_FAILED,
        "failure_reason": reason,
        "instance_config": {"mask_sample": True},  # the request model keeps no instance_config to merge
        "_ng_failure_class": JUDGE_FAILED,
        "_ng_failure_judge_error": reason,
    }
