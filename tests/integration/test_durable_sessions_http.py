"""Durable sessions on Serve (`durable_sessions`, contract §C.11): every shard process and the document store are
SIGKILLed while rollouts run, and nothing is lost. Each rollout in flight finishes scored and unmasked (a 503 while
a shard restarts is retried, as a driver may: every route is safe to repeat), and each session opened before the
kill, with its document, answers its tools, verifies unmasked and closes; closed IDs stay fenced. With restore off,
tests/integration/test_shard_failure.py shows the same kill losing every session the shard held."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness.fault_scenarios import THINK_SECONDS, Episode, episode, wait_gone

from .conftest import close_body, deployed_app, episode_seed, new_session_id, verify_body
from .test_shard_failure import FILING_URL, incarnation, wait_for_restart

PROMPT = {"prompt": "total net revenues {{doc}}"}


@pytest.fixture(scope="module")
def app(serve_url):
    yield from deployed_app(serve_url, "it-durable", durable_sessions=True)


def test_every_shard_and_the_document_store_killed_mid_traffic_lose_nothing(app):
    shards = app.settings.num_shards
    held = []  # sessions opened before the kill, each with a document: episodes, and one agent-run session
    for _ in range(2 * shards):
        client, sid = app.client(), new_session_id()
        assert client.post("/seed_session", json=episode_seed(sid)).status_code == 200
        assert client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200
        held.append((sid, client))
    agent = app.client()
    assert agent.post("/seed_session", json={}).status_code == 200
    assert agent.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200
    closed = new_session_id()
    with app.client() as client:
        assert client.post("/seed_session", json=episode_seed(closed)).status_code == 200
        assert client.post("/close_session", json=close_body(closed)).status_code == 200
    lives = {shard: incarnation(app, shard) for shard in range(shards)}
    log: list[Episode] = []

    async def load(stop: asyncio.Event) -> None:
        async def worker(n: int):
            async with app.async_client() as client:
                while not stop.is_set():
                    client.cookies.clear()
                    log.append(await episode(client, retry_5xx=True, think=THINK_SECONDS if n % 2 else 0.0))

        await asyncio.gather(*(worker(n) for n in range(8)))

    async def scenario() -> None:
        stop = asyncio.Event()
        running = asyncio.create_task(load(stop))
        await asyncio.sleep(1.0)
        names = [name.split(".")[0] for name in app.actors.shard_names] + ["documents"]
        pids = [await asyncio.to_thread(app.sigkill, name) for name in names]
        await asyncio.to_thread(wait_gone, pids)
        for shard, before in lives.items():
            await asyncio.to_thread(wait_for_restart, app, shard, before)
        await asyncio.sleep(1.5)  # and rollouts go on after the restarts
        stop.set()
        await running

    began = time.monotonic()
    asyncio.run(scenario())
    assert time.monotonic() - began < 120
    assert log and all(e.row is not None for e in log), [e.statuses for e in log if e.row is None]
    assert not [e for e in log if e.tool_lost], "a tool answered session_lost"
    assert [(e.row["mask_sample"], e.row["reward"]) for e in log] == [(False, 1.0)] * len(log)

    for sid, client in [*held, (None, agent)]:
        asked = client.post("/retrieve_information", json=PROMPT)
        assert asked.status_code == 200 and "passages" in asked.json()["results"], asked.text
        row = client.post("/verify", json=verify_body()).json()
        assert (row["mask_sample"], row["reward"]) == (False, 1.0), row
        if sid is not None:
            assert client.post("/close_session", json=close_body(sid)).status_code == 200
        client.close()
    assert app.stats()["counters"].get("restored", 0) >= len(held)  # by the settle, or by their first request
    with app.client() as late:  # fences are as durable as ever
        for sid in [closed, *(sid for sid, _ in held)]:
            assert late.post("/seed_session", json=episode_seed(sid)).status_code == 409, sid
