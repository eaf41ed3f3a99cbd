"""Actor processes die (SIGKILL, not ray.kill) while rollouts run, with `durable_sessions: false` (with it, the
default, the sessions survive: test_durable_sessions_http.py): what they held is reported lost, loudly;
everything else carries on, closed IDs stay fenced, and no fault turns into an unmasked reward. A lost session
is told by what the episode saw (harness/fault_scenarios.py: the shard life that seeded it, a tool's 404, when
its verify was sent), not by its reward: the scripted answers are right, so a lost session scored unmasked
would look like any clean episode."""

from __future__ import annotations

import asyncio
import time

import pytest

from finsec.corpus.generate import questions
from harness.fault_scenarios import THINK_SECONDS, Episode, Fault, episode, ingress_error_page, losses, wait_gone
from session_store import StoreUnavailable, shard_index

from .conftest import close_body, cookie_claims, deployed_app, episode_seed, new_session_id, verify_body

TASK = questions()[0]
FILING_URL = TASK["url"]


@pytest.fixture(scope="module")
def app(serve_url):  # restore off: what a lost session looks like (with it, test_durable_sessions_http.py)
    yield from deployed_app(serve_url, "it-shard-failure", durable_sessions=False)


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


def test_a_sigkilled_shard_loses_only_its_sessions_loudly(app):  # noqa: C901 (a fault scenario asserts each outcome in turn)
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
    log: list[Episode] = []

    async def load(stop: asyncio.Event) -> None:  # rollouts on every shard keep running through the crash
        async def worker(n: int):  # every other one pauses before verify, so kills land where only it can tell
            async with app.async_client() as client:
                while not stop.is_set():
                    client.cookies.clear()
                    log.append(await episode(client, retry_5xx=False, think=THINK_SECONDS if n % 2 else 0.0))

        await asyncio.gather(*(worker(n) for n in range(8)))

    async def scenario() -> tuple[Fault, float]:
        stop = asyncio.Event()
        running = asyncio.create_task(load(stop))
        await asyncio.sleep(1.0)
        began = time.monotonic()
        pid = await asyncio.to_thread(app.sigkill, app.actors.shard_names[victim].split(".")[0])
        await asyncio.to_thread(wait_gone, [pid])
        fault = Fault(began, time.monotonic(), frozenset({victim}))
        recovery = await asyncio.to_thread(wait_for_restart, app, victim, before)
        await asyncio.sleep(1.5)  # and rollouts go on after the restart
        stop.set()
        await running
        return fault, recovery

    fault, recovery = asyncio.run(scenario())
    assert recovery < 30

    def shard_of(e: Episode) -> int:
        return shard_index(e.sid, k)

    lost = losses(log, fault, shard_of, old={before})
    for e in log:
        assert all(c.status in (200, 404, 409, 503) for c in e.calls), e  # never a 500
        if e.row is None:
            continue
        if lost[id(e)]:  # gone when its verify came, whatever the reward says
            assert (e.row["mask_sample"], e.row["failure_kind"]) == (True, "session_lost"), e
        elif lost[id(e)] is False:  # a measurement: the answer is right
            assert (e.row["mask_sample"], e.row["reward"]) == (False, 1.0), e
        elif e.row["mask_sample"]:  # verified while the shard died: either is right, masked only as lost
            assert e.row["failure_kind"] == "session_lost", e
    on_victim = [e for e in log if shard_of(e) == victim]
    assert any(e.clean for e in on_victim[-3:]), "restarted shard serves again"
    assert all(e.statuses == [200] * 5 for e in log if shard_of(e) != victim), "other shards never noticed"

    for shard, sids in open_ids.items():
        for sid in sids:
            client = clients.pop(sid)
            # verify first: no tool call between the crash and it, so the verify alone must see the loss
            row = client.post("/verify", json=verify_body()).json()
            retrieve = client.post("/retrieve_information", json={"prompt": "revenues {{doc}}"})
            if shard == victim:
                assert (row["mask_sample"], row["failure_kind"], row["reward"]) == (True, "session_lost", 0.0)
                assert retrieve.status_code == 404 and retrieve.json()["failure_kind"] == "session_lost"
                assert "restarted" in retrieve.json()["detail"]
                with app.client() as retry:  # the loss is fenced: a cookie-less seed cannot resurrect it
                    assert retry.post("/seed_session", json=episode_seed(sid)).status_code == 409
                    # and its fence still names the episode: a close for another one is 409 (§C.4)
                    assert retry.post("/close_session", json=close_body(sid, "another")).status_code == 409
            else:
                assert (row["mask_sample"], row["reward"]) == (False, 1.0)
                assert retrieve.status_code == 200 and "passages" in retrieve.json()["results"]
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
                return await asyncio.gather(
                    *(c.post("/retrieve_information", json={"prompt": "total net revenues {{doc}}"}) for _ in range(6))
                )

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


INGRESS_SETTLES = 10.0  # seconds after a replica's death within which HAProxy may still send a request to it


def test_a_sigkilled_ingress_replica_loses_no_session(app):
    """Replicas are stateless: killing one mid-run fails its in-flight requests in a way a driver retries (every
    route is safe to repeat by the contract), and every session carries on with its documents.

    The app itself never answers 500. What a killed replica's in-flight requests get is a dropped connection or
    HAProxy's own page for a backend that died mid-request (Serve's HAProxy config turns 502/503/504 into one
    500 page, `ingress_error_page`): those are told apart from an app 500 by their shape, and may only come
    for requests sent before HAProxy stopped routing to the dead replica."""
    import os
    import signal

    import httpx

    sids = [new_session_id() for _ in range(6)]
    clients = {sid: app.client() for sid in sids}
    for sid, client in clients.items():
        client.post("/seed_session", json=episode_seed(sid))
        assert client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200
    replies: list[tuple[float, int, bool]] = []  # (sent, status or 0 for a dropped connection, HAProxy's page)

    async def retrying(client, path, body):
        for _ in range(60):
            sent = time.monotonic()
            try:
                response = await client.post(path, json=body)
            except httpx.TransportError:
                replies.append((sent, 0, False))
                await asyncio.sleep(0.25)
                continue
            replies.append((sent, response.status_code, ingress_error_page(response)))
            if response.status_code < 500:
                return response
            await asyncio.sleep(0.25)
        raise AssertionError(f"{path} never recovered")

    async def scenario():
        until = time.monotonic() + 0.3 + INGRESS_SETTLES + 2  # on past the window, so "late" can be seen

        async def session_loop(sid):
            async with app.async_client(cookies=clients[sid].cookies) as client:
                while time.monotonic() < until:
                    r = await retrying(client, "/retrieve_information", {"prompt": "total net revenues {{doc}}"})
                    assert r.status_code == 200, r.text  # the session never lost its document
                    await asyncio.sleep(0.1)

        running = asyncio.gather(*(session_loop(sid) for sid in sids))
        await asyncio.sleep(0.3)
        victim = replica_pids(app.settings.app_name)[0]
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        await running
        return victim, killed

    victim, killed = asyncio.run(scenario())
    assert victim not in replica_pids(app.settings.app_name)
    app_errors = [r for r in replies if r[1] >= 500 and not r[2] and r[1] != 503]
    assert not app_errors, f"the app answered {app_errors}: a replica's death is never an app 500"
    late = [r for r in replies if (r[1] == 0 or r[2]) and r[0] > killed + INGRESS_SETTLES]
    assert not late, f"{late}: requests sent {INGRESS_SETTLES:.0f} s after the kill still reached the dead replica"
    for sid, client in clients.items():  # every session, whichever replica held its requests, is intact
        row = client.post("/verify", json=verify_body()).json()
        assert (row["mask_sample"], row["reward"]) == (False, 1.0)
        assert client.post("/close_session", json=close_body(sid)).status_code == 200
        client.close()
