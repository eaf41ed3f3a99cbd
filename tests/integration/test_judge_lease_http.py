"""A judge lease whose replica died mid-judgement, through Serve (contract §C.5, Decision 7): every replica of the
app is SIGKILLed while the judge stalls on the first verify, so nothing releases its lease; an identical verify
after the replicas come back waits only until that lease lapses (one judgement's worst case: judge_call_timeout
x attempts, plus 2 s), not judge_lease_seconds (300 s), then is judged. The Ray-free twins of this test, with a
judge that stalls, fails or raises, are in tests/unit/deployments/test_verify_leases.py."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from harness.llm_stub import responses_reply

from .conftest import deployed_app, episode_seed, new_session_id, verify_body
from .test_shard_failure import replica_pids

APP = "it-judge-lease"
JUDGE_TIMEOUT = 8.0  # one attempt: the lease lasts 10 s


@pytest.fixture(scope="module")
def app(serve_url, llm_server):
    yield from deployed_app(
        serve_url,
        APP,
        replicas=2,
        judge_model={"base_url": llm_server.base_url, "model": "j"},
        judge_retry_delays=[],
        judge_call_timeout=JUDGE_TIMEOUT,
    )


def retried(client: httpx.Client, body: dict, until: float) -> httpx.Response:
    """A driver's retry while HAProxy still knows the dead replicas (a 500 page or a dropped connection)."""
    while True:
        try:
            response = client.post("/verify", json=body)
            if response.status_code == 200:
                return response
        except httpx.TransportError:
            pass
        assert time.monotonic() < until, "no replica answered"
        time.sleep(0.5)


@pytest.mark.timeout(240)
def test_a_dead_replicas_judge_lease_is_taken_over_once_it_lapses(app, stub):
    sid = new_session_id()
    with app.client() as client:
        assert client.post("/seed_session", json=episode_seed(sid)).status_code == 200
        cookies = httpx.Cookies(client.cookies)
    stub.reply(responses_reply("[[2]]"), delay=60.0)  # the first judgement stalls, and its replica dies
    stub.reply(responses_reply("The rating is: [[2]]"))  # the twin's
    first = httpx.Client(base_url=app.base_url, timeout=120, cookies=cookies)
    pending = ThreadPoolExecutor(1).submit(lambda: first.post("/verify", json=verify_body()))
    deadline = time.monotonic() + 30
    while not stub.requests:  # the judge was called: the lease is held on the shard
        assert time.monotonic() < deadline, "the first verify never reached the judge"
        time.sleep(0.05)
    leased_at = time.monotonic()
    victims = replica_pids(APP)
    assert len(victims) == 2
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    try:
        pending.result(timeout=60)
    except httpx.HTTPError:
        pass  # its connection died with the replica
    first.close()
    with httpx.Client(base_url=app.base_url, timeout=120, cookies=cookies) as twin:
        row = retried(twin, verify_body(), time.monotonic() + 120).json()
    waited = time.monotonic() - leased_at
    assert (row["reward"], row["mask_sample"]) == (1.0, False), row  # judged, by the twin
    assert len(stub.requests) == 2
    assert waited < JUDGE_TIMEOUT + 2.0 + 30, waited  # the lease lapsed; judge_lease_seconds is 300
