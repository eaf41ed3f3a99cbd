"""Races on one ID: seeds of two episodes, closes, verifies and tool calls fired at once, from several clients,
through both replicas. Whatever order they land in, the outcome must be one the contract allows (§C.1: one
ID's operations are serialized; §C.4: never a live session behind a fence; §C.2: never two episodes for an ID)."""

from __future__ import annotations

import asyncio

import pytest

from finsec.corpus.generate import questions

from .conftest import close_body, deployed_app, episode_seed, new_session_id, verify_body

FILING_URL = questions()[0]["url"]


@pytest.fixture(scope="module")
def app(serve_url):
    yield from deployed_app(serve_url, "it-races")


async def race(app, sid: str) -> dict[str, list]:
    """Each client does its own thing with the ID at the same moment; returns every reply by kind."""

    async def seeded_then(client, rollout: str, then: str):
        seed = await client.post("/seed_session", json=episode_seed(sid, rollout=rollout))
        follow = None
        if then == "parse":
            follow = await client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"})
        elif then == "verify":
            follow = await client.post("/verify", json=verify_body())
        return rollout, seed, then, follow

    async def close(client, rollout: str):
        return rollout, await client.post("/close_session", json=close_body(sid, rollout=rollout))

    clients = [app.async_client() for _ in range(8)]
    try:
        results = await asyncio.gather(
            seeded_then(clients[0], "A", "parse"),
            seeded_then(clients[1], "A", "verify"),
            seeded_then(clients[2], "B", "parse"),
            seeded_then(clients[3], "B", "verify"),
            seeded_then(clients[4], "A", "none"),
            close(clients[5], "A"),
            close(clients[6], "B"),
            close(clients[7], "A"),
        )
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))
    seeds = [(r[0], r[1]) for r in results if len(r) == 4]
    follows = [(r[0], r[1], r[2], r[3]) for r in results if len(r) == 4 and r[3] is not None]
    closes = [r for r in results if len(r) == 2]
    return {"seeds": seeds, "follows": follows, "closes": closes}


def test_racing_operations_on_one_id_end_in_a_state_the_contract_allows(app):
    async def many():
        sids = [new_session_id() for _ in range(24)]
        return sids, await asyncio.gather(*(race(app, sid) for sid in sids))

    sids, outcomes = asyncio.run(many())
    for sid, got in zip(sids, outcomes, strict=False):
        # each kind of call has its own answers: a seed or a close is a 200 or a 409, never a 404 or a 5xx
        assert {r.status_code for _, r in got["seeds"]} <= {200, 409}, [r.status_code for _, r in got["seeds"]]
        assert {r.status_code for _, r in got["closes"]} <= {200, 409}, [r.status_code for _, r in got["closes"]]
        seeded = {rollout for rollout, r in got["seeds"] if r.status_code == 200}
        assert len(seeded) <= 1, f"{sid}: two episodes seeded one ID: {seeded}"
        closed = {rollout for rollout, r in got["closes"] if r.status_code == 200}
        assert len(closed) <= 1, f"{sid}: closed for two episodes: {closed}"
        if seeded and closed:
            assert seeded == closed, f"{sid}: episode {seeded} seeded but {closed} closed it"
        for _rollout, seed, then, follow in got["follows"]:
            if seed.status_code != 200:
                continue
            if then == "parse":  # the seed's cookie reaches its session, or a close of it came first
                if follow.status_code == 404:
                    lost = follow.json()
                    assert lost["failure_kind"] == "session_lost" and "closed" in lost["detail"], (sid, lost)
                else:
                    assert follow.status_code == 200 and "SUCCESS" in follow.json()["results"], follow.text
            else:  # a right answer: scored 1.0 on the open session, or masked because a close came first
                assert follow.status_code == 200, follow.text
                row = follow.json()
                expected = (True, "session_lost", 0.0) if row["mask_sample"] is True else (False, None, 1.0)
                assert (row["mask_sample"], row["failure_kind"], row["reward"]) == expected, (sid, row)
        state = app.describe(sid)
        assert closed, f"{sid}: every close was refused"  # a close of the never-seeded or seeded episode wins
        assert state["fenced"] and not state["open"], (sid, state)  # never a live session behind a fence
    assert app.stats()["sessions"] == 0
