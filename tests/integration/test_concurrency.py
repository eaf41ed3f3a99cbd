"""Many rollouts at once: seeds racing seeds, seeds racing closes, and a churn of 1,000 sessions that must
leave nothing behind (contract §C.1: per-ID locks; §C.4: no live session behind a fence)."""

from __future__ import annotations

import asyncio

import pytest

from finsec.corpus.generate import questions

from .conftest import close_body, cookie_claims, deployed_app, episode_seed, new_session_id, verify_body

FILING_URL = questions()[0]["url"]


@pytest.fixture(scope="module")
def app(serve_url):
    yield from deployed_app(serve_url, "it-concurrency")


def test_100_concurrent_identical_seeds_create_exactly_one_session(app):
    sid = new_session_id()

    async def storm():
        async with app.async_client() as client:
            return await asyncio.gather(*(client.post("/seed_session", json=episode_seed(sid)) for _ in range(100)))

    replies = asyncio.run(storm())
    assert [r.status_code for r in replies] == [200] * 100
    assert {cookie_claims(r, app.settings.cookie_name)["session_id"] for r in replies} == {sid}
    assert app.stats()["sessions"] == 1 and app.describe(sid)["open"]
    with app.client() as client:
        assert client.post("/close_session", json=close_body(sid)).status_code == 200
    assert app.stats()["sessions"] == 0


def test_concurrent_seed_and_close_never_leave_a_live_session_behind_a_fence(app):
    sids = [new_session_id() for _ in range(60)]

    async def race(client, sid):
        # Alternate who starts first; either order must end closed and fenced.
        seed, close = (
            client.post("/seed_session", json=episode_seed(sid)),
            client.post("/close_session", json=close_body(sid)),
        )
        if int(sid[-1], 16) % 2:
            return await asyncio.gather(seed, close)
        close_reply, seed_reply = await asyncio.gather(close, seed)
        return seed_reply, close_reply

    async def run():
        async with app.async_client() as client:
            return await asyncio.gather(*(race(client, sid) for sid in sids))

    for seed, close in asyncio.run(run()):
        assert seed.status_code in (200, 409)  # 409: the close came first and fenced the ID
        assert close.status_code == 200  # the seed's own episode: a close of it is never refused
    for sid in sids:
        state = app.describe(sid)
        assert state["fenced"] and not state["open"], (sid, state)
    assert app.stats()["sessions"] == 0


async def one_rollout(client, sid: str) -> None:
    r = await client.post("/seed_session", json=episode_seed(sid))
    assert r.status_code == 200, r.text
    r = await client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"})
    assert "SUCCESS" in r.json()["results"], r.text
    r = await client.post("/retrieve_information", json={"prompt": "total net revenues {{doc}}"})
    assert r.status_code == 200, r.text
    r = await client.post("/verify", json=verify_body())
    assert r.json()["reward"] == 1.0, r.text
    r = await client.post("/close_session", json=close_body(sid))
    assert r.status_code == 200, r.text


@pytest.mark.timeout(900)  # ~2 minutes on a 2-core machine; the margin is for a loaded one
def test_a_thousand_sessions_leave_no_session_document_or_reference_behind(app):
    sids = [new_session_id() for _ in range(1000)]

    async def worker():  # 32 rollout workers, each reusing one client; cookies cleared between rollouts
        async with app.async_client() as client:
            while sids:
                client.cookies.clear()
                await one_rollout(client, sids.pop())

    async def run():
        await asyncio.gather(*(worker() for _ in range(32)))

    asyncio.run(run())
    stats = app.stats()
    assert (stats["sessions"], stats["documents"], stats["document_chars"], stats["digests"]) == (0, 0, 0, 0)
    assert stats["fences"] >= 1000  # within their TTL, fences stay: late seeds must still be refused
    assert stats["expired_marks"] == 0
