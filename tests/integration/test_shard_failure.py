"""A shard actor dies while sessions are open: its sessions are lost, loudly; everything else carries on."""

from __future__ import annotations

import time

import pytest
import ray

from deployments.corpus.generate import questions
from session_store.errors import StoreUnavailable
from session_store.routing import shard_index

from .conftest import close_body, cookie_claims, deployed_app, episode_seed, new_session_id, verify_body

FILING_URL = questions()[0]["url"]


@pytest.fixture(scope="module")
def app(serve_url):
    yield from deployed_app(serve_url, "it-shard-failure")


def ids_on_every_shard(num_shards: int, per_shard: int = 2) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {k: [] for k in range(num_shards)}
    while any(len(v) < per_shard for v in found.values()):
        sid = new_session_id()
        bucket = found[shard_index(sid, num_shards)]
        if len(bucket) < per_shard:
            bucket.append(sid)
    return found


def restarted_incarnation(app, shard: int, before: str) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            now = app.stats()["shards"][shard]["incarnation"]
            if now != before:
                return now
        except StoreUnavailable:
            pass
        time.sleep(0.2)
    raise AssertionError("the killed shard did not come back")


def test_killed_shard_reports_its_sessions_lost_and_others_are_untouched(app):
    spec = app.store.spec
    by_shard = ids_on_every_shard(spec.num_shards)
    clients = {}
    for sids in by_shard.values():
        for sid in sids:
            client = clients[sid] = app.client()
            assert client.post("/seed_session", json=episode_seed(sid)).status_code == 200
            assert client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200
    victim = 1
    before = app.stats()["shards"][victim]["incarnation"]
    ray.kill(ray.get_actor(spec.shard_name(victim), namespace=spec.namespace), no_restart=False)
    restarted_incarnation(app, victim, before)

    for shard, sids in by_shard.items():
        for sid in sids:
            client = clients[sid]
            retrieve = client.post("/retrieve_information", json={"prompt": "revenues {{doc}}"})
            row = client.post("/verify", json=verify_body()).json()
            if shard == victim:
                assert retrieve.status_code == 404 and retrieve.json()["failure_kind"] == "session_lost"
                assert "restarted" in retrieve.json()["detail"]
                assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost")
                # the loss is fenced: a cookie-less retry of the seed cannot resurrect an empty session
                with app.client() as retry:
                    assert retry.post("/seed_session", json=episode_seed(sid)).status_code == 409
            else:
                assert retrieve.status_code == 200 and "passages" in retrieve.json()["results"]
                assert (row["mask_sample"], row["reward"]) == (False, 1.0)
            assert client.post("/close_session", json=close_body(sid)).status_code == 200
            client.close()

    fresh = next(s for s in (new_session_id() for _ in range(1000))
                 if shard_index(s, spec.num_shards) == victim)
    with app.client() as client:  # the restarted shard serves new sessions
        assert client.post("/seed_session", json=episode_seed(fresh)).status_code == 200
        assert client.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200
        assert client.post("/retrieve_information", json={"prompt": "{{doc}}"}).status_code == 200
        assert client.post("/close_session", json=close_body(fresh)).status_code == 200
    assert app.stats()["sessions"] == 0


def test_agent_run_session_on_a_killed_shard_is_lost_not_unknown(app):
    spec = app.store.spec
    with app.client() as client:
        client.post("/seed_session", json={})
        sid = cookie_claims(client.get("/healthz"), app.settings.cookie_name)["session_id"]
        shard = shard_index(sid, spec.num_shards)
        before = app.stats()["shards"][shard]["incarnation"]
        ray.kill(ray.get_actor(spec.shard_name(shard), namespace=spec.namespace), no_restart=False)
        restarted_incarnation(app, shard, before)
        row = client.post("/verify", json=verify_body()).json()
        assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost")
        # verify fenced the loss, so a reset under the old cookie is refused; a new run starts without it
        assert client.post("/seed_session", json={}).status_code == 409
    with app.client() as fresh:
        assert fresh.post("/seed_session", json={}).status_code == 200
