"""Verdicts keyed by the grading settings, and judge leases that cannot orphan (contract §C.5, Decision 7).

Two replicas' apps over one session store, as two Serve replicas over the shards, and a real loopback judge
(harness/llm_stub.py) that stalls, fails, raises or dies. The store's clock is the test's and never moves unless
a test moves it, so a twin that gets its verdict early got it because the lease was released, not because it
lapsed."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from deployments.asgi import create_api
from deployments.services import build_services
from finsec.contract import VerifyRequest
from finsec.edgar.limiter import LocalRateLimiter
from harness.bodies import episode_seed, new_session_id, verify_body
from harness.hostile import IN_PROCESS_SECRET
from harness.inprocess import InProcess
from harness.llm_stub import responses_reply
from session_store import NO_CLAIMS, DocumentStoreService, GradeNow

JUDGE = {"judge_call_timeout": 1.0, "judge_retry_delays": [0.01, 0.01]}  # worst case 3.02 s; lease 5.02 s
ATTEMPTS = 3
RIGHT = "The rating is: [[2]]"


class Replica:
    """A second replica's app over the first one's session store and document store (same cookie secret)."""

    def __init__(self, first: InProcess, **changes):
        self.settings = first.settings.model_copy(update=changes)
        store, documents = first.app.store, DocumentStoreService(first.app.documents)
        limiter = LocalRateLimiter(10, 1.0)
        self.api = create_api(
            self.settings,
            lambda: build_services(self.settings, store, limiter, documents, clock=first.clock),
            IN_PROCESS_SECRET,
        )
        self._first, self._lifespan = first, self.api.router.lifespan_context(self.api)
        first.run(self._lifespan.__aenter__())
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(self.api), base_url="http://in-process", cookies=first.client.cookies
        )

    def close(self) -> None:
        self._first.run(self.client.aclose())
        self._first.run(self._lifespan.__aexit__(None, None, None))

    def verifier(self):
        return self.api.state.services.verifier


@pytest.fixture
def twins(stub):
    with InProcess(judge_model={"base_url": stub.base_url, "model": "judge"}, edgar_search_mode=None, **JUDGE) as first:
        first.sid = new_session_id()
        first.post("/seed_session", json=episode_seed(first.sid))
        second = Replica(first)
        try:
            yield first, second
        finally:
            second.close()


async def timed(request) -> tuple[dict, float]:
    began = time.monotonic()
    return (await request).json(), time.monotonic() - began


def both(first: InProcess, second: Replica, *, before_second=None) -> tuple[tuple[dict, float], tuple[dict, float]]:
    async def go():
        a = asyncio.ensure_future(timed(first.client.post("/verify", json=verify_body())))
        await asyncio.sleep(0.3)  # the first one holds the lease and is judging
        if before_second is not None:
            before_second()
        b = asyncio.ensure_future(timed(second.client.post("/verify", json=verify_body())))
        return await asyncio.gather(a, b, return_exceptions=True)

    return first.run(go())


FAULTS = {
    "stalls": lambda stub: [stub.reply(responses_reply(RIGHT), delay=3.0) for _ in range(ATTEMPTS)],
    "fails": lambda stub: [stub.reply({"error": {"message": "down"}}, status=500) for _ in range(ATTEMPTS)],
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_failed_judgement_releases_its_lease_and_the_twin_judges_at_once(twins, stub, fault):
    first, second = twins
    FAULTS[fault](stub)
    stub.reply(responses_reply(RIGHT))  # the twin's judgement
    (row_a, _), (row_b, waited) = both(first, second)
    assert (row_a["mask_sample"], row_a["failure_kind"]) == (True, "judge_failed")
    assert (row_b["reward"], row_b["mask_sample"]) == (1.0, False)  # judged, not a copy of the failure
    assert waited < 30 and len(stub.requests) == ATTEMPTS + 1  # released, not waited out (the clock is frozen)


@pytest.mark.timeout(60)
def test_an_exception_in_the_judge_is_a_masked_row_and_releases_the_lease(twins, stub):
    first, second = twins

    class Broken:
        async def grade(self, *args):
            raise RuntimeError("a bug in the judge")

    judge = first.app.api.state.services.verifier._grader
    first.app.api.state.services.verifier._grader = Broken()
    row = first.post("/verify", json=verify_body()).json()
    assert (row["mask_sample"], row["failure_kind"]) == (True, "judge_failed")
    first.app.api.state.services.verifier._grader = judge
    stub.reply(responses_reply(RIGHT))
    row, waited = first.run(timed(second.client.post("/verify", json=verify_body())))
    assert (row["reward"], row["mask_sample"]) == (1.0, False) and waited < 5


@pytest.mark.timeout(60)
def test_a_replica_shutting_down_mid_judgement_releases_its_lease(twins, stub):
    first, second = twins
    stub.reply(responses_reply(RIGHT), delay=3.0)  # the first judgement is in flight when its replica stops
    stub.reply(responses_reply(RIGHT))

    def shut_down_first():  # a stopping replica's loop cancels its tasks, the shared judgement among them
        for task in list(first.app.api.state.services.verifier._judging._tasks.values()):
            task.cancel()

    stopped, (row_b, waited) = both(first, second, before_second=shut_down_first)
    assert isinstance(stopped, asyncio.CancelledError)  # its request died with it
    assert (row_b["reward"], row_b["mask_sample"]) == (1.0, False) and waited < 5


@pytest.mark.timeout(60)
def test_the_lease_of_a_replica_that_died_lapses_after_one_judgement_and_is_taken_over(twins, stub):
    """A replica SIGKILLed after planning runs no cleanup: its lease lapses after the judge's own worst case
    (3.02 s here, plus 2 s), far sooner than judge_lease_seconds (300 s), and a twin judges."""
    first, second = twins
    body = verify_body()
    digest = second.verifier().verdict_key(VerifyRequest.model_validate(body).model_dump(mode="json"))
    lease = first.app.api.state.services.verifier._lease  # what the first replica's verify asks for
    assert lease == pytest.approx(3.02 + 2.0)
    plan = first.run(first.app.store.plan_verify(first.sid, digest, NO_CLAIMS, lease))  # then it dies
    assert isinstance(plan, GradeNow)
    stub.reply(responses_reply(RIGHT))

    async def go():
        twin = asyncio.ensure_future(timed(second.client.post("/verify", json=body)))
        await asyncio.sleep(1.0)
        assert not twin.done()  # the lease holds while it may still be judging
        first.clock.advance(lease + 0.1)  # the lease lapses
        return await twin

    row, waited = first.run(go())
    assert (row["reward"], row["mask_sample"]) == (1.0, False) and waited < 10


@pytest.mark.timeout(60)
def test_a_verdict_is_never_served_to_other_grading_settings(twins, stub):
    first, _ = twins
    stub.reply(responses_reply("[[1]]"))
    assert first.post("/verify", json=verify_body()).json()["reward"] == 0.0  # binary: a 1 is a 0
    assert first.post("/verify", json=verify_body()).json()["reward"] == 0.0 and len(stub.requests) == 1  # cached
    redeployed = Replica(first, reward_mode="scaled")  # the same shards, another reward mode
    try:
        stub.reply(responses_reply("[[1]]"))
        row = first.run(redeployed.client.post("/verify", json=verify_body())).json()
        assert row["reward"] == 0.5 and len(stub.requests) == 2  # judged again under the new settings
    finally:
        redeployed.close()


def test_settings_refuse_a_lease_shorter_than_one_judgement():
    from pydantic import ValidationError

    from deployments.settings import Settings

    judge = {"judge_model": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}
    with pytest.raises(ValidationError, match=r"judge_lease_seconds \(100\) is shorter .* = 183 s"):
        Settings(**judge, judge_lease_seconds=100)  # 60 s x 3 attempts + 1 s + 2 s
    with pytest.raises(ValidationError, match="judge_call_timeout"):
        Settings(**judge, judge_call_timeout=None)
    assert Settings(**judge).judge_budget_seconds() == 183


def test_a_verify_row_of_the_deterministic_grader_carries_a_namespaced_kind():
    with InProcess() as app:
        app.post("/seed_session", json=episode_seed(new_session_id()))
        row = app.post("/verify", json=verify_body(answer="4" * 20_000)).json()  # far over the answer cap
        assert row["reward"] == 0.0 and row["failure_kind"] == "finance_sec_search:answer_too_long", row
