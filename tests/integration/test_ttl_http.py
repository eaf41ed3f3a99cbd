"""TTL eviction by the reaper and the tool time budget, over HTTP (contract §C.9, §A.15, §G.3)."""

from __future__ import annotations

import json
import re
import time

import pytest
import ray

from finsec.corpus.generate import questions

from .conftest import close_body, cookie_claims, deployed_app, episode_seed, new_session_id, verify_body

TTL = 3.0
BUDGET = 1.0
FILING_URL = questions()[0]["url"]


@pytest.fixture(scope="module")
def app(serve_url):
    yield from deployed_app(
        serve_url, "it-ttl", session_ttl_seconds=TTL, reaper_interval_seconds=0.25, max_rollout_time_seconds=BUDGET
    )


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


def test_reaper_evicts_the_abandoned_session_and_keeps_the_fresh_one(app):
    old, young = (new_session_id() for _ in range(2))
    with app.client() as abandoned, app.client() as fresh:
        abandoned.post("/seed_session", json=episode_seed(old))
        assert abandoned.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200
        time.sleep(TTL * 0.6)
        assert fresh.post("/seed_session", json=episode_seed(young, rollout="r2")).status_code == 200
        assert app.stats()["sessions"] == 2  # the seed evicted nothing still within its TTL
        # Nobody touches the old session again: only the reaper can release it.
        wait_for(lambda: app.stats()["sessions"] == 1 and app.stats()["documents"] == 0, timeout=TTL + 3)
        status = ray.get(app.named_actor("reaper").status.remote())
        assert status["evicted"].sessions >= 1 and status["held"]["sessions"] >= 1  # it was the reaper
        assert app.describe(young)["open"]
        assert app.describe(old) | {"fence_cause": None} == {
            "open": False,
            "episode": False,
            "documents": [],
            "fenced": True,
            "fence_cause": None,
            "expired": True,
        }
        row = abandoned.post("/verify", json=verify_body()).json()
        assert (row["mask_sample"], row["failure_kind"], row["reward"]) == (True, "session_expired", 0.0)
        assert abandoned.post("/parse_html_page", json={"url": FILING_URL, "key": "d"}).status_code == 404
        assert abandoned.post("/seed_session", json=episode_seed(old)).status_code == 409  # fenced as after close
        assert abandoned.post("/close_session", json=close_body(old, rollout="other")).status_code == 409
        assert abandoned.post("/close_session", json=close_body(old)).status_code == 200
        assert fresh.post("/close_session", json=close_body(young, rollout="r2")).status_code == 200


def test_new_agent_run_seed_clears_the_expired_mark(app):
    with app.client() as client:
        client.post("/seed_session", json={})
        sid = cookie_claims(client.get("/healthz"), app.settings.cookie_name)["session_id"]
        wait_for(lambda: app.describe(sid)["expired"], timeout=TTL + 3)
        assert client.post("/verify", json=verify_body()).json()["failure_kind"] == "session_expired"
        assert client.post("/seed_session", json={}).status_code == 200
        assert app.describe(sid)["expired"] is False
        row = client.post("/verify", json=verify_body()).json()
        assert (row["mask_sample"], row["reward"]) == (False, 1.0)


def test_time_budget_stops_tools_but_not_submit(app):
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        assert "SUCCESS" in client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).json()["results"]
        time.sleep(BUDGET + 0.3)
        client.post("/seed_session", json=episode_seed(sid))  # a retried seed does not restart the budget
        for route, body in (
            ("/parse_html_page", {"url": "", "key": ""}),
            ("/retrieve_information", {"prompt": "{{doc}}"}),
            ("/sec_filing_search", {"ticker": "HLXR1"}),
            ("/edgar_search", {"search_query": "revenue"}),
            ("/web_search", {"search_query": "revenue"}),
        ):
            r = client.post(route, json=body)
            assert r.status_code == 200, route
            assert re.match(
                r"Time budget exhausted \(\d+s / 1s\)\. No further tool calls will be executed\.",
                json.loads(r.json()["results"])["error"],
            ), route
        r = client.post("/submit_final_result", json={"final_result": "42"})
        assert json.loads(r.json()["results"]) == {"success": True, "result": "42"}
        client.post("/close_session", json=close_body(sid))


def test_agent_run_seed_restarts_the_budget(app):
    with app.client() as client:
        client.post("/seed_session", json={})
        time.sleep(BUDGET + 0.3)
        assert "Time budget" in client.post("/parse_html_page", json={"url": FILING_URL, "key": "d"}).text
        client.post("/seed_session", json={})
        assert "SUCCESS" in client.post("/parse_html_page", json={"url": FILING_URL, "key": "d"}).text


def test_a_killed_reaper_comes_back_and_no_expired_session_is_served_meanwhile(app):
    reaper = app.named_actor("reaper")
    ticks = ray.get(reaper.status.remote())["ticks"]
    first = app.sigkill("reaper")
    sid = new_session_id()
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"})
        time.sleep(TTL + 0.5)  # past its TTL, whether or not a reaper ticked
        assert client.post("/retrieve_information", json={"prompt": "{{doc}}"}).status_code == 404
        assert client.post("/verify", json=verify_body()).json()["failure_kind"] == "session_expired"

    def ticking_again() -> bool:
        try:
            return (
                ray.get(reaper.pid.remote(), timeout=5) != first
                and ray.get(reaper.status.remote(), timeout=5)["ticks"] >= 1
            )
        except ray.exceptions.RayError:
            return False

    wait_for(ticking_again, timeout=60)
    assert ticks >= 1
