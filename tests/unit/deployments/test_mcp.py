"""The tools over MCP at /mcp (deployments/routes/mcp.py), driven by the `mcp` SDK's own client against the
one-process app under uvicorn on loopback: which finsec session a client's calls speak for, that ending an MCP
session releases what it seeded, and that the contract's promises (fences, lost sessions, caps, hostile bodies)
hold on this path too. The reward comes from /verify over REST, with the cookie the MCP replies set. Skips
without the `mcp` extra; tests/integration/test_mcp_http.py runs the same endpoint on Serve."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx
import pytest

from harness.extras import needs

needs("mcp", "mcp", "httpx2")

import httpx2  # noqa: E402  (the mcp SDK's HTTP client)
from mcp import Client, ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from deployments.inprocess import InProcessApp, in_process_app  # noqa: E402
from deployments.settings import Settings  # noqa: E402
from finsec.corpus.generate import embedded_corpus_dir  # noqa: E402
from finsec.tools.catalog import DEFAULT_TOOLS, parameters  # noqa: E402
from finsec_client.tasks import embedded_tasks  # noqa: E402
from finsec_client.threaded_server import ThreadedServer  # noqa: E402
from harness.bodies import claims_of, close_body, episode_seed, new_session_id, verify_body  # noqa: E402
from harness.inprocess import Clock, restart_shards  # noqa: E402

TASK = next(t for t in embedded_tasks() if t.hint("ticker") and t.hint("form") == "10-K")
COOKIE = "finsec_session"
# A call as it reaches a replica that does not hold its MCP session (another replica's, or one from before a restart)
ELSEWHERE = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
    "mcp-session-id": "held-by-another-replica",
}
ASK = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "retrieve_information", "arguments": {"prompt": "revenue {{filing}}"}},
}


class Server:
    def __init__(self, app: InProcessApp, url: str):
        self.app, self.url, self.mcp = app, url, url + "/mcp"

    def held(self) -> int:
        return httpx.get(self.url + "/status", timeout=10).json()["held"]["sessions"]

    def wait_held(self, count: int) -> int:
        deadline = time.monotonic() + 15
        while self.held() != count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.held()

    def post(self, route: str, body: Any, cookie: str | None = None) -> httpx.Response:
        return httpx.post(self.url + route, json=body, cookies={COOKIE: cookie} if cookie else None, timeout=30)


@contextmanager
def serving(clock: Clock | None = None, **settings: Any) -> Iterator[Server]:
    app = in_process_app(Settings(app_name="mcp", corpus_dir=embedded_corpus_dir(), **settings), clock=clock)
    with ThreadedServer(app.api, lifespan="on") as running:
        yield Server(app, running.url)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serving(num_shards=2) as running:
        yield running


@asynccontextmanager
async def handshake(server: Server, http: httpx2.AsyncClient | None = None) -> AsyncIterator[ClientSession]:
    """An MCP session (the initialize handshake, Mcp-Session-Id); leaving it sends the client's DELETE."""
    http = http or httpx2.AsyncClient()
    async with (
        http,
        streamable_http_client(server.mcp, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text(result) -> str:
    return result.content[0].text


async def play(session, answer: str = TASK.expected_answer) -> None:
    """An agent's calls: find the filing, store it, ask it, submit."""
    found = await session.call_tool("sec_filing_search", {"ticker": TASK.hint("ticker"), "form_types": ["10-K"]})
    assert not found.is_error, text(found)
    url = json.loads(text(found))[0]["filing_url"]
    stored = await session.call_tool("parse_html_page", {"url": url, "key": "filing"})
    assert "SUCCESS" in text(stored), text(stored)
    asked = await session.call_tool("retrieve_information", {"prompt": TASK.question + " {{filing}}"})
    assert not asked.is_error and "filing" in text(asked), text(asked)
    submitted = await session.call_tool("submit_final_result", {"final_result": answer})
    assert json.loads(text(submitted)) == {"success": True, "result": answer}


def reward(server: Server, cookie: str | None, answer: str = TASK.expected_answer) -> dict[str, Any]:
    row = server.post("/verify", verify_body(answer, TASK.expected_answer), cookie)
    assert row.status_code == 200, row.text
    return row.json()


def test_the_tools_are_listed_from_the_catalog(server):
    async def listed():
        async with handshake(server) as session:
            return (await session.list_tools()).tools

    tools = asyncio.run(listed())
    assert [t.name for t in tools] == list(DEFAULT_TOOLS)  # web_search only when it is configured
    assert all(t.input_schema == parameters(t.name) and t.description for t in tools)


def test_an_mcp_session_is_an_agent_run_session_released_when_it_ends(server):
    http = httpx2.AsyncClient()

    async def episode():
        async with handshake(server, http) as session:
            await play(session)
            assert server.held() == 1
            return http.cookies.get(COOKIE)

    cookie = asyncio.run(episode())
    assert server.held() == 0  # the client's DELETE released it
    row = reward(server, cookie)  # a verify after the MCP session ended still grades it (§C.5 step 8)
    assert (row["reward"], row.get("mask_sample", False)) == (1.0, False), row


def no_cookies() -> httpx2.AsyncClient:
    """A client that keeps no cookie, as some agent harnesses are."""
    return httpx2.AsyncClient(cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])))


def test_a_client_that_drops_cookies_keeps_its_mcp_session(server):
    async def episode():
        async with handshake(server, no_cookies()) as session:
            await play(session)  # retrieve_information sees what parse_html_page stored

    asyncio.run(episode())
    assert server.held() == 0


def test_a_new_mcp_session_is_a_new_run(server):
    """A harness that keeps one HTTP client (and so one cookie jar) for many runs starts each in a fresh session:
    never one an earlier run still holds, whose end would release it under the new run."""
    http = httpx2.AsyncClient()

    async def runs():
        async with (
            http,
            streamable_http_client(server.mcp, http_client=http) as (r1, w1),
            ClientSession(r1, w1) as first,
        ):
            await first.initialize()
            await play(first)
            async with (
                streamable_http_client(server.mcp, http_client=http) as (r2, w2),
                ClientSession(r2, w2) as second,
            ):
                await second.initialize()
                unseen = await second.call_tool("retrieve_information", {"prompt": "revenue {{filing}}"})
                assert "filing" in text(unseen) and "not" in text(unseen).lower(), text(unseen)  # not stored here
                assert server.held() == 2
            assert server.held() == 1  # the second run's end released its own session only
            still = await first.call_tool("retrieve_information", {"prompt": "revenue {{filing}}"})
            assert not still.is_error and "passages" in text(still), text(still)

    asyncio.run(runs())
    assert server.held() == 0


def test_an_mcp_session_this_replica_does_not_hold_goes_on_by_its_cookie(server):
    """Another replica's MCP session, or one from before a restart: its calls speak for the cookie's session."""
    http = httpx2.AsyncClient()

    async def episode():
        async with handshake(server, http) as session:
            await play(session)
            raw = httpx.AsyncClient(timeout=30, cookies={COOKIE: http.cookies.get(COOKIE)})
            async with raw:
                answered = await raw.post(server.mcp, content=json.dumps(ASK), headers=ELSEWHERE)
                stream = await raw.get(server.mcp, headers=ELSEWHERE)
            return answered, stream

    answered, stream = asyncio.run(episode())
    assert answered.status_code == 200 and "passages" in answered.text, answered.text[:300]  # the same session
    assert stream.status_code == 405  # no event stream for a session held elsewhere


def test_an_episode_seeded_over_rest_is_bound_by_its_cookie(server):
    sid = new_session_id()
    seeded = server.post("/seed_session", episode_seed(sid, expected_answer=TASK.expected_answer))
    cookie = seeded.cookies[COOKIE]

    async def episode():
        async with handshake(server, httpx2.AsyncClient(cookies={COOKIE: cookie})) as session:
            await play(session)

    asyncio.run(episode())
    # The MCP session ended, the episode did not: it is its trainer's to verify and close (§C.4).
    assert server.held() == 1
    assert server.post("/retrieve_information", {"prompt": "revenue {{filing}}"}, cookie).status_code == 200
    assert reward(server, cookie)["reward"] == 1.0
    assert server.post("/close_session", close_body(sid), cookie).status_code == 200

    async def after_close():  # the fence holds on this path: 404 session_lost, no new session
        async with handshake(server, httpx2.AsyncClient(cookies={COOKIE: cookie})) as session:
            return await session.call_tool("parse_html_page", {"url": "https://www.sec.gov/x.htm", "key": "k"})

    refused = asyncio.run(after_close())
    assert refused.is_error and refused.structured_content["status_code"] == 404
    assert refused.structured_content["failure_kind"] == "session_lost"
    assert server.held() == 0


def test_a_lost_session_is_reported_as_lost():
    with serving(num_shards=1, durable_sessions=False) as lossy:  # durable sessions would be restored

        async def episode():
            async with handshake(lossy) as session:
                await play(session)
                restart_shards(lossy.app)  # what a SIGKILL of every shard does
                return await session.call_tool("retrieve_information", {"prompt": "revenue {{filing}}"})

        lost = asyncio.run(episode())
    assert lost.is_error and lost.structured_content["failure_kind"] == "session_lost", lost.content


def test_the_stateless_revision_keeps_its_session_in_the_cookie(server):
    http = httpx2.AsyncClient()

    async def episode():
        async with http, Client(streamable_http_client(server.mcp, http_client=http)) as client:
            assert client.protocol_version == "2026-07-28"  # no MCP session: the cookie is the session
            await play(client)
            return http.cookies.get(COOKIE)

    cookie = asyncio.run(episode())
    assert server.held() == 1  # ended by its verify, as any agent-run session (§B.2)
    assert reward(server, cookie)["reward"] == 1.0
    assert server.held() == 0


def test_a_call_with_neither_cookie_nor_mcp_session_speaks_for_none(server):
    async def calls():
        http = no_cookies()
        async with http, Client(streamable_http_client(server.mcp, http_client=http)) as client:
            found = await client.call_tool("sec_filing_search", {"ticker": TASK.hint("ticker")})
            stored = await client.call_tool("parse_html_page", {"url": "https://www.sec.gov/x.htm", "key": "k"})
            return found, stored

    found, stored = asyncio.run(calls())
    assert not found.is_error and TASK.hint("ticker") in text(found)
    assert stored.is_error and stored.structured_content["failure_kind"] == "session_lost"
    assert server.held() == 0  # nothing was seeded for it


def test_only_the_tools_are_reachable(server):
    async def calls():
        async with handshake(server) as session:
            return [
                await session.call_tool(name, {"resources_session_id": "x", "episode_id": {"rollout_id": "r"}})
                for name in ("close_session", "seed_session", "../verify", "web_search", "mcp")
            ]

    results = asyncio.run(calls())
    for result in results:
        assert "does not exist" in text(result), text(result)
    assert "web_search" not in text(results[-1])  # the tools offered here, not every route's
    assert server.held() == 0


def rpc(server: Server, tool: str, arguments: str, path: str = "/mcp") -> httpx.Response:
    """A raw tools/call of the stateless revision, as a hostile client sends it."""
    return httpx.post(
        server.url + path,
        content=call(tool, arguments),
        timeout=30,
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": tool,
        },
    )


def call(name: str, arguments: str) -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "'
        + name.encode()
        + b'", "arguments": '
        + arguments.encode()
        + b', "_meta": {"io.modelcontextprotocol/protocolVersion": '
        b'"2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}, '
        b'"io.modelcontextprotocol/clientCapabilities": {}}}}'
    )


@pytest.mark.parametrize(
    ("arguments", "status", "says"),
    [
        ('{"ticker": NaN}', 422, "non-finite"),
        ('{"ticker": "\\ud800"}', 422, "surrogate"),
        ("[" * 80 + "]" * 80, 422, "nests deeper"),
        ('{"ticker": "' + "A" * 17_000_000 + '"}', 413, "max_request_bytes"),
    ],
)
def test_hostile_bodies_get_the_same_clear_4xx(server, arguments, status, says):
    refused = rpc(server, "sec_filing_search", arguments)
    assert refused.status_code == status and says in refused.text, refused.text[:300]


def test_the_caps_and_argument_checks_are_the_routes(server):
    answered = rpc(server, "sec_filing_search", '{"ticker": "' + "A" * 40 + '"}')
    assert answered.status_code == 200
    assert "ticker" in answered.json()["result"]["content"][0]["text"]  # §A.6's length cap, as over REST
    invalid = rpc(server, "parse_html_page", '{"url": 3}').json()["result"]
    assert invalid["isError"] and invalid["structuredContent"]["status_code"] == 422


def test_the_rollout_prefix_reaches_it(server):
    answered = rpc(server, "sec_filing_search", '{"ticker": "HLXR1"}', path="/ng-rollout/r1/mcp")
    assert answered.status_code == 200 and "HLXR1" in answered.json()["result"]["content"][0]["text"]


def test_the_time_budget_holds_on_this_path():
    clock = Clock()
    with serving(clock, num_shards=1, max_rollout_time_seconds=60) as budgeted:

        async def calls():
            async with handshake(budgeted) as session:
                found = await session.call_tool("sec_filing_search", {"ticker": TASK.hint("ticker")})
                clock.advance(61)  # the session clock of its shard: a minute past the seed
                return found, await session.call_tool("sec_filing_search", {"ticker": TASK.hint("ticker")})

        found, spent = asyncio.run(calls())
    assert TASK.hint("ticker") in text(found)
    assert "Time budget exhausted" in text(spent) and not spent.is_error  # a tool result, as over REST (§A.15)


async def left_open(server: Server) -> str:
    """An MCP session that stores the filing and is left without a goodbye (no DELETE); its cookie."""
    http = httpx2.AsyncClient()
    manager = streamable_http_client(server.mcp, http_client=http, terminate_on_close=False)
    async with http, manager as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("parse_html_page", {"url": TASK.data["url"], "key": "filing"})
        assert server.held() >= 1
        return http.cookies.get(COOKIE)


def test_an_idle_mcp_session_ends_and_releases_its_session():
    with serving(num_shards=1, mcp_session_idle_seconds=1) as idle:
        asyncio.run(left_open(idle))  # no DELETE: only the idle timeout ends it
        assert idle.wait_held(0) == 0


def test_without_the_mcp_package_the_endpoint_names_the_fix(monkeypatch):
    """No mcp, or another major version than the extra pins (nemo-gym's environment brings mcp 1.x): the app
    still starts, and /mcp is a 501 that says what to install."""
    import sys

    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ImportError
    monkeypatch.delitem(sys.modules, "deployments.routes.mcp", raising=False)
    with serving(num_shards=1) as bare:
        refused = httpx.post(bare.mcp, json={}, timeout=10)
        assert httpx.get(bare.url + "/healthz", timeout=10).status_code == 200
    assert refused.status_code == 501 and "finsec-serve[mcp]" in refused.json()["detail"]


def test_an_idle_end_leaves_a_session_other_replicas_still_serve():
    """Calls that reach another replica by the cookie never reach this replica's idle timer: when it ends the MCP
    session, the agent-run session goes on (a raw POST naming an MCP session this replica does not hold is how
    another replica's call arrives here)."""
    with serving(num_shards=1, mcp_session_idle_seconds=1) as idle:

        async def episode():
            cookie = await left_open(idle)
            async with httpx.AsyncClient(timeout=30, cookies={COOKIE: cookie}) as other_replica:
                for _ in range(12):  # 3 s of calls elsewhere: the MCP session here idles out meanwhile
                    answered = await other_replica.post(idle.mcp, content=json.dumps(ASK), headers=ELSEWHERE)
                    assert "passages" in answered.text, answered.text[:300]
                    await asyncio.sleep(0.25)
            return cookie

        cookie = asyncio.run(episode())
        assert idle.held() == 1  # still open: it was in use
        asked = idle.post("/retrieve_information", {"prompt": "revenue {{filing}}"}, cookie)
        assert asked.status_code == 200, asked.text
        assert idle.wait_held(0) == 0  # and released once nothing named it for the idle time


def test_a_delete_reaching_another_replica_releases_the_session(server):
    cookie = asyncio.run(left_open(server))
    assert server.held() == 1
    ended = httpx.delete(server.mcp, cookies={COOKIE: cookie}, timeout=30, headers=ELSEWHERE)
    assert ended.status_code == 200, ended.text
    assert server.held() == 0


def test_the_cookies_episode_wins_on_every_call(server):
    """An MCP session opened without a cookie holds its own agent-run session; a call that then carries an
    episode's cookie speaks for the episode, and its reply's cookie still names the episode."""
    sid = new_session_id()
    episode = server.post("/seed_session", episode_seed(sid, expected_answer=TASK.expected_answer)).cookies[COOKIE]
    http = httpx2.AsyncClient()

    async def calls():
        async with handshake(server, http) as session:
            own = http.cookies.get(COOKIE)
            http.cookies.clear()
            http.cookies.set(COOKIE, episode)
            stored = await session.call_tool("parse_html_page", {"url": TASK.data["url"], "key": "filing"})
            assert "SUCCESS" in text(stored), text(stored)
            return own, {cookie.value for cookie in http.cookies.jar if cookie.name == COOKIE}

    own, after = asyncio.run(calls())
    # The reply did not replace the episode's cookie: every reply sets the session's cookie again, signed anew (a
    # second later it is another value, kept beside the one the test set), so what must hold is the session named.
    assert {claims_of(cookie)["session_id"] for cookie in after} == {claims_of(episode)["session_id"]} == {sid}
    assert server.post("/retrieve_information", {"prompt": "revenue {{filing}}"}, episode).status_code == 200
    missing = server.post("/retrieve_information", {"prompt": "revenue {{filing}}"}, own)
    assert missing.status_code != 200 or "filing" not in missing.json()["results"].split("passages")[0], missing.text
    assert server.post("/close_session", close_body(sid), episode).status_code == 200


def test_initializing_again_seeds_nothing_more(server):
    async def initializes():
        async with handshake(server) as session:
            for _ in range(20):
                await session.initialize()
            return server.held()

    assert asyncio.run(initializes()) == 1
    assert server.wait_held(0) == 0
