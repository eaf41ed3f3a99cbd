"""The tools over MCP at /mcp on the Serve app: two ingress replicas under route prefix /finsec, driven by the `mcp`
SDK's own client (tests/unit/deployments/test_mcp.py has the one-process cases). An MCP session's calls land on either replica
and still speak for one agent-run session; its reward comes from /verify over REST; ending it releases that
session (on the replica that holds it, at once or by its idle timeout). Skips without the `mcp` extra."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from harness.extras import needs

needs("mcp", "mcp", "httpx2")

import httpx2  # noqa: E402
from mcp import Client, ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from finsec.corpus.generate import questions  # noqa: E402
from harness.bodies import claims_of  # noqa: E402

from .conftest import deployed_app, verify_body  # noqa: E402

Q = questions()[0]


@pytest.fixture(scope="module")
def app(serve_url):
    yield from deployed_app(serve_url, "it-mcp", replicas=2, route_prefix="/finsec", mcp_session_idle_seconds=2)


async def play(session) -> None:
    for _ in range(3):  # calls enough to land on both replicas
        found = await session.call_tool("sec_filing_search", {"ticker": Q["ticker"]})
        assert not found.is_error and Q["ticker"] in found.content[0].text
    stored = await session.call_tool("parse_html_page", {"url": Q["url"], "key": "filing"})
    assert "SUCCESS" in stored.content[0].text, stored.content[0].text
    for _ in range(3):
        asked = await session.call_tool("retrieve_information", {"prompt": Q["question"] + " {{filing}}"})
        assert not asked.is_error and "passages" in asked.content[0].text, asked.content[0].text
    await session.call_tool("submit_final_result", {"final_result": Q["expected_answer"]})


def scored(app, cookie: str) -> dict:
    with app.client(cookies={app.settings.cookie_name: cookie}) as client:
        row = client.post("/verify", json=verify_body(Q["expected_answer"], Q["expected_answer"]))
    assert row.status_code == 200, row.text
    return row.json()


def released(app, sid: str) -> bool:
    deadline = time.monotonic() + 30
    while app.describe(sid)["open"] and time.monotonic() < deadline:
        time.sleep(0.2)
    return not app.describe(sid)["open"]


def test_an_mcp_session_across_replicas_is_one_agent_run_session(app):
    http = httpx2.AsyncClient(timeout=60)

    async def episode():
        async with (
            http,
            streamable_http_client(app.base_url + "/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert [t.name for t in (await session.list_tools()).tools][0] == "sec_filing_search"
            await play(session)
            return http.cookies.get(app.settings.cookie_name)

    cookie = asyncio.run(episode())
    sid = claims_of(cookie)["session_id"]
    assert released(app, sid)  # the client's DELETE, or its replica's idle timeout
    row = scored(app, cookie)
    assert (row["reward"], row.get("mask_sample", False)) == (1.0, False), json.dumps(row)[:500]


def test_the_stateless_revision_on_serve(app):
    http = httpx2.AsyncClient(timeout=60)

    async def episode():
        async with http, Client(streamable_http_client(app.base_url + "/mcp", http_client=http)) as client:
            assert client.protocol_version == "2026-07-28"
            await play(client)
            return http.cookies.get(app.settings.cookie_name)

    cookie = asyncio.run(episode())
    assert app.describe(claims_of(cookie)["session_id"])["open"]  # an agent-run session, ended by its verify
    assert scored(app, cookie)["reward"] == 1.0
    assert not app.describe(claims_of(cookie)["session_id"])["open"]


def test_an_mcp_session_idle_on_its_replica_but_used_through_the_other_stays_open(app):
    """The calls reach both replicas by the cookie (a POST naming an MCP session a replica does not hold goes on by
    it); the MCP session's own replica idles it out meanwhile (2 s) and must not retire what the calls still use."""
    http = httpx2.AsyncClient(timeout=60)
    foreign = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        "mcp-session-id": "held-by-no-replica",
    }
    ask = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "retrieve_information", "arguments": {"prompt": Q["question"] + " {{filing}}"}},
    }

    async def episode():
        manager = streamable_http_client(app.base_url + "/mcp", http_client=http, terminate_on_close=False)
        async with http, manager as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("parse_html_page", {"url": Q["url"], "key": "filing"})
            cookie = http.cookies.get(app.settings.cookie_name)
        async with httpx2.AsyncClient(timeout=60, cookies={app.settings.cookie_name: cookie}) as calls:
            for _ in range(24):  # 6 s of calls through either replica, past the 2 s idle timeout
                answered = await calls.post(app.base_url + "/mcp", content=json.dumps(ask), headers=foreign)
                assert "passages" in answered.text, answered.text[:300]
                await asyncio.sleep(0.25)
        return cookie

    cookie = asyncio.run(episode())
    sid = claims_of(cookie)["session_id"]
    assert app.describe(sid)["open"]  # in use until now: not retired by its replica's idle timeout
    row = scored(app, cookie)  # the verify releases it, scored with the document it still holds
    assert (row["reward"], row.get("mask_sample", False)) == (1.0, False), json.dumps(row)[:500]
