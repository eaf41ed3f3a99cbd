"""The drivers' lifecycles over real HTTP against the app in one uvicorn process (no Ray): what each sends,
what it does when a seed is refused or the policy breaks, and that it leaves no session behind."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from finsec_client.client import ServerClient
from finsec_client.drivers import EnvironmentServerDriver, Episode, LegacyAgentDriver
from finsec_client.policies.scripted import ScriptedPolicy
from finsec_client.tasks import embedded_tasks
from harness.http_app_server import start

TASK = embedded_tasks()[0]


@pytest.fixture(scope="module")
def url():
    process, base_url = start()
    yield base_url
    process.kill()
    process.wait(10)


def held(url: str) -> dict:
    return httpx.get(url + "/session_counters", timeout=10).json()["held"]


def play(url: str, driver, policy=None, index: int = 0):
    async def go():
        async with ServerClient(url, timeout=10) as client:
            return await driver.run(client, Episode(index, TASK, 0, "drv", driver.name), policy or ScriptedPolicy())

    return asyncio.run(go())


def test_an_agent_run_seed_with_an_empty_body_is_released_by_verify(url):
    record = play(url, LegacyAgentDriver("empty"))
    assert record.failure is None and record.reward == 1.0
    assert [c["route"] for c in record.calls][0] == "seed_session" and record.calls[-1]["route"] == "verify"
    assert held(url)["sessions"] == 0


class Broken:
    name = "broken"

    async def play(self, task, tools):
        await tools.call("sec_filing_search", {"ticker": "HLXR1"})
        raise RuntimeError("policy bug")


def test_a_broken_policy_fails_its_episode_and_the_session_is_still_closed(url):
    record = play(url, EnvironmentServerDriver(), Broken())
    assert record.failure.kind == "policy" and "policy bug" in record.failure.detail
    assert [c["route"] for c in record.calls] == ["seed_session", "sec_filing_search", "close_session"]
    assert record.closed is True and record.reward is None
    assert held(url)["sessions"] == 0


def test_a_refused_episode_seed_is_an_http_failure_and_its_close_is_still_sent(url, monkeypatch):
    first = play(url, EnvironmentServerDriver(), index=1)  # seeded, verified and closed: its ID is fenced
    assert first.failure is None and first.closed
    sid = first.resources_session_id

    original = EnvironmentServerDriver.seed_body

    def same_id(self, state):  # a second episode that reuses the first one's resources_session_id
        body = original(self, state)
        state.record.resources_session_id = sid
        return {**body, "resources_session_id": sid}

    monkeypatch.setattr(EnvironmentServerDriver, "seed_body", same_id)
    record = play(url, EnvironmentServerDriver(), index=2)
    assert record.failure.kind == "http" and record.failure.route == "seed_session"
    assert "409" in record.failure.detail
    assert [c["route"] for c in record.calls] == ["seed_session", "close_session"]
    assert record.closed is False  # the fence names the first episode: a close by another one is refused too
