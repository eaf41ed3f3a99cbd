"""Actor processes die (SIGKILL, not ray.kill) while rollouts run: what they held is reported lost, loudly;
everything else carries on, closed IDs stay fenced, and no fault turns into an unmasked reward."""

from __future__ import annotations

import asyncio
import time

import pytest

from deployments.corpus.generate import questions
from session_store import StoreUnavailable, shard_index

from .conftest import close_body, cookie_claims, deployed_app, episode_seed, new_session_id, verify_body

TASK = questions()[0]
FILING_URL = TASK["url"]


@pytest.fixture(scope="module")
def app(serve_url):
    yield from deployed_app(serve_url, "it-shard-failure")


def ids_on_shard(shard: int, num_shards: int, n: int) -> list[str]:
    found = []
    while len(found) < n:
        sid = new_session_id()
        if shard_index(sid, num_shards) == shard:
            found.append(sid)
    return found


def incarnation(app, shard: int) -> str | None:
    try:
        return app.stats()["shards"][shard]["incarnation"]
    except StoreUnavailable:
        return None


def wait_for_restart(app, shard: int, before: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < 60:
        now = incarnation(app, shard)
        if now is not None and now != before:
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError("the killed shard did not come back")


async def rollout(client, sid: str, log: list[dict]) -> None:
    """One episode as single_agent_turn drives it; every status and the verify row are logged."""
    steps, row = [], None
    for path, body in (("/seed_session", episode_seed(sid)),
                       ("/parse_html_page", {"url": FILING_URL, "key": "doc"}),
                       ("/retrieve_information", {"prompt": "total net revenues {{doc}}"}),
                       ("/verify", verify_body())):
        r = await client.post(path, json=body)
        steps.append(r.status_code)
        if path == "/seed_session" and r.status_code != 200:
            break
        if path == "/verify" and r.status_code == 200:
            row = r.json()
    await client.post("/close_session", json=close_body(sid))
    log.append({"sid": sid, "steps": steps, "row": row})


def test_a_sigkilled_shard_loses_only_its_sessions_loudly(app):
    k = app.settings.num_shards
    victim = 1
    open_ids = {s: ids_on_shard(s, k, 2) for s in range(k)}
    closed_ids = {s: ids_on_shard(s, k, 2) for s in range(k)}
    clients = {}
    for shard in range(k):
        for sid in closed_ids[shard]:
            with app.client() as c:
                assert c.post("/seed_session", json=episode_seed(sid)).status_code == 200
                assert c.post("/close_session", json=close_body(sid)).status_code == 200
        for sid in open_ids[shard]:
            clients[sid] = c = app.client()
            assert c.post("/seed_session", json=episode_seed(sid)).status_code == 200
            assert c.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200
    before = incarnation(app, victim)
    log: list[dict] = []

    async def load(stop: asyncio.Event) -> None:  # rollouts on every shard keep running through the crash
        async def worker():
            async with app.async_client() as client:
                while not stop.is_set():
                    client.cookies.clear()
                    await rollout(client, new_session_id(), log)
        await asyncio.gather(*(worker() for _ in range(8)))

    async def scenario() -> float:
        stop = asyncio.Event()
        running = asyncio.create_task(load(stop))
        await asyncio.sleep(1.0)
        app.sigkill(app.actors.shard_names[victim].split(".")[0])
        recovery = await asyncio.to_thread(wait_for_restart, app, victim, before)
        await asyncio.sleep(1.5)  # and rollouts go on after the restart
        stop.set()
        await running
        return recovery

    recovery = asyncio.run(scenario())
    assert recovery < 30

    for row in log:
        assert all(status in (200, 404, 409, 503) for status in row["steps"]), row  # never a 500
        faulted = any(status in (404, 503) for status in row["steps"][1:])
        if row["row"] is not None:
            if faulted:  # the fault reached this episode: its reward is not a measurement
                assert row["row"]["mask_sample"] is True, row
            elif row["row"]["mask_sample"]:  # the kill landed between its last tool call and its verify
                assert shard_index(row["sid"], k) == victim, row
                assert row["row"]["failure_kind"] == "session_lost", row
            else:
                assert row["row"]["reward"] == 1.0, row
    on_victim = [r for r in log if shard_index(r["sid"], k) == victim]
    assert any(r["steps"] == [200, 200, 200, 200] for r in on_victim[-3:]), "restarted shard serves again"
    assert all(r["steps"] == [200, 200, 200, 200] for r in log if shard_index(r["sid"], k) != victim
               and 503 not in r["steps"])

    for shard, sids in open_ids.items():
        for sid in sids:
            client = clients.pop(sid)
            retrieve = client.post("/retrieve_information", json={"prompt": "revenues {{doc}}"})
            row = client.post("/verify", json=verify_body()).json()
            if shard == victim:
                assert retrieve.status_code == 404 and retrieve.json()["failure_kind"] == "session_lost"
                assert "restarted" in retrieve.json()["detail"]
                assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost")
                with app.client() as retry:  # the loss is fenced: a cookie-less seed cannot resurrect it
                    assert retry.post("/seed_session", json=episode_seed(sid)).status_code == 409
            else:
                assert retrieve.status_code == 200 and "passages" in retrieve.json()["results"]
                assert (row["mask_sample"], row["reward"]) == (False, 1.0)
            client.post("/close_session", json=close_body(sid))
            client.close()
    with app.client() as late:  # closed IDs stay fenced, on the restarted shard too (durable marks)
        for sids in closed_ids.values():
            for sid in sids:
                assert late.post("/seed_session", json=episode_seed(sid)).status_code == 409, sid


def test_an_agent_run_session_on_a_killed_shard_is_lost_not_unknown(app):
    with app.client() as client:
        client.post("/seed_session", json={})
        sid = cookie_claims(client.get("/healthz"), app.settings.cookie_name)["session_id"]
        shard = shard_index(sid, app.settings.num_shards)
        before = incarnation(app, shard)
        app.sigkill(app.actors.shard_names[shard].split(".")[0])
        wait_for_restart(app, shard, before)
        row = client.post("/verify", json=verify_body()).json()
        assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost")
        # verify fenced the loss, so a reset under the old cookie is refused; a new run starts without it
        assert client.post("/seed_session", json={}).status_code == 409
    with app.client() as fresh:
        assert fresh.post("/seed_session", json={}).status_code == 200


def test_an_agent_run_seed_cannot_take_over_a_lost_episode(app):
    """After a restart, a model calling seed_session with {} and the episode's cookie must not get a fresh,
    empty session to be scored on (§C.3)."""
    sid = ids_on_shard(2, app.settings.num_shards, 1)[0]
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(sid))
        client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"})
        before = incarnation(app, 2)
        app.sigkill(app.actors.shard_names[2].split(".")[0])
        wait_for_restart(app, 2, before)
        assert client.post("/seed_session", json={}).status_code == 409
        row = client.post("/verify", json=verify_body()).json()
        assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost")


def test_a_killed_document_store_loses_no_filing_text(app):
    """Texts of filings are parsed again from their URL, so their sessions carry on; the store comes back."""
    with app.client() as client:
        client.post("/seed_session", json=episode_seed(new_session_id()))
        client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"})
        app.sigkill("documents")

        async def both_replicas():  # concurrent, so at least one replica may miss its own cache
            async with app.async_client(cookies=client.cookies) as c:
                return await asyncio.gather(*(c.post("/retrieve_information", json={
                    "prompt": "total net revenues {{doc}}"}) for _ in range(6)))

        deadline = time.monotonic() + 60
        while True:
            replies = asyncio.run(both_replicas())
            if all(r.status_code == 200 for r in replies) or time.monotonic() > deadline:
                break
            assert all(r.status_code in (200, 503) for r in replies)
            time.sleep(0.5)
        assert all(r.status_code == 200 and "passages" in r.json()["results"] for r in replies)
        assert client.post("/verify", json=verify_body()).json()["mask_sample"] is False


def replica_pids(app_name: str) -> list[int]:
    from pathlib import Path

    title = f"ServeReplica:{app_name}:FinsecIngress".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::" + title):
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


def test_a_sigkilled_ingress_replica_loses_no_session(app):
    """Replicas are stateless: killing one mid-run fails its in-flight requests in a way a driver retries (every
    route is safe to repeat by the contract), and every session carries on with its documents."""
    import os
    import signal

    import httpx

    sids = [new_session_id() for _ in range(6)]
    clients = {sid: app.client() for sid in sids}
    for sid, client in clients.items():
        client.post("/seed_session", json=episode_seed(sid))
        assert client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200
    statuses: list[int] = []

    async def retrying(client, path, body):
        for _ in range(60):
            try:
                response = await client.post(path, json=body)
            except httpx.TransportError:
                statuses.append(0)
                await asyncio.sleep(0.25)
                continue
            statuses.append(response.status_code)
            if response.status_code < 500:
                return response
            await asyncio.sleep(0.25)
        raise AssertionError(f"{path} never recovered")

    async def scenario():
        async def session_loop(sid):
            async with app.async_client(cookies=clients[sid].cookies) as client:
                for _ in range(12):
                    r = await retrying(client, "/retrieve_information", {"prompt": "total net revenues {{doc}}"})
                    assert r.status_code == 200, r.text  # the session never lost its document
                    await asyncio.sleep(0.1)
        running = asyncio.gather(*(session_loop(sid) for sid in sids))
        await asyncio.sleep(0.3)
        victim = replica_pids(app.settings.app_name)[0]
        os.kill(victim, signal.SIGKILL)
        started = time.monotonic()
        await running
        return victim, time.monotonic() - started

    victim, _ = asyncio.run(scenario())
    assert victim not in replica_pids(app.settings.app_name)
    assert set(statuses) <= {0, 200, 500, 502, 503}
    for sid, client in clients.items():  # every session, whichever replica held its requests, is intact
        row = client.post("/verify", json=verify_body()).json()
        assert (row["mask_sample"], row["reward"]) == (False, 1.0)
        assert client.post("/close_session", json=close_body(sid)).status_code == 200
        client.close()
