"""A redeploy with changed settings while sessions are open, without durable sessions: the new settings hold,
sessions of the old deployment are reported lost (never scored as if nothing happened), closed IDs stay fenced,
and the old deployment's actors are retired once no replica uses them."""

from __future__ import annotations

import time

import ray

from deployments.ingress import app_actors
from deployments.local import deploy, undeploy
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir, questions
from harness.fault_scenarios import ingress_error_page

from .conftest import close_body, episode_seed, new_session_id, verify_body

FILING_URL = questions()[0]["url"]


def actor_names(settings: Settings) -> set[str]:
    namespace = app_actors(settings).namespace
    return {a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == namespace}


def test_a_redeploy_with_new_settings_takes_effect_and_loses_old_sessions_loudly(serve_url):
    import httpx

    # Without durable sessions: with them (the default) the new shards restore the old sessions (§C.11).
    common = dict(
        app_name="it-redeploy",
        num_shards=2,
        corpus_dir=embedded_corpus_dir(),
        reaper_interval_seconds=0.5,
        durable_sessions=False,
    )
    first = Settings(**common, session_ttl_seconds=600)
    deploy(first, serve_url, replicas=2)
    try:
        old_names = actor_names(first)
        open_sid, closed_sid = new_session_id(), new_session_id()
        old = httpx.Client(base_url=serve_url, timeout=60)
        assert old.post("/seed_session", json=episode_seed(open_sid)).status_code == 200
        assert old.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200
        with httpx.Client(base_url=serve_url, timeout=60) as c:
            c.post("/seed_session", json=episode_seed(closed_sid))
            assert c.post("/close_session", json=close_body(closed_sid)).status_code == 200

        second = Settings(**common, session_ttl_seconds=3)  # a new TTL: new shards, new names
        deploy(second, serve_url, replicas=2)

        # Old sessions: lost, loudly, on every route that touches them.
        retrieve = retried(lambda: old.post("/retrieve_information", json={"prompt": "revenue {{doc}}"}))
        assert retrieve.status_code == 404 and retrieve.json()["failure_kind"] == "session_lost"
        row = retried(lambda: old.post("/verify", json=verify_body())).json()
        assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost")
        with httpx.Client(base_url=serve_url, timeout=60) as late:  # closed IDs stay fenced across the redeploy
            assert late.post("/seed_session", json=episode_seed(closed_sid)).status_code == 409
            assert late.post("/seed_session", json=episode_seed(open_sid)).status_code == 409  # lost: fenced

        # The new TTL holds.
        fresh = new_session_id()
        with httpx.Client(base_url=serve_url, timeout=60) as c:
            assert c.post("/seed_session", json=episode_seed(fresh)).status_code == 200
            time.sleep(3.5)
            row = c.post("/verify", json=verify_body()).json()
            assert (row["mask_sample"], row["failure_kind"]) == (True, "session_expired")

        # The old deployment's actors are retired; the new ones stay.
        stale = old_names - current(second)
        assert stale, "the new TTL must have given the shards new names"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and actor_names(second) & stale:
            time.sleep(0.5)
        assert not actor_names(second) & stale, "the old deployment's actors are still alive"
        assert current(second) <= actor_names(second)
        old.close()
    finally:
        undeploy(first)


def retried(send, attempts: int = 20):
    """What a rollout driver does: every route is safe to repeat by the contract (retried seed, repeated close,
    re-sent verify), so a 5xx from a replica that is being replaced is retried. Ray Serve answers 500 for a
    request that reaches a replica while it shuts down."""
    for _ in range(attempts):
        response = send()
        if response.status_code < 500:
            return response
        # Serve's (no content type) or HAProxy's page; the app's 5xx are JSON 503s. Never Starlette's own 500.
        assert (
            response.status_code != 500 or ingress_error_page(response) or ("content-type" not in response.headers)
        ), (response.headers, response.text[:300])
        time.sleep(0.5)
    return response


def current(settings: Settings) -> set[str]:
    """The actors the new deployment uses: what its replicas declared active."""
    from ray.experimental import internal_kv

    raw = internal_kv._internal_kv_get(b"active-actors", namespace=app_actors(settings).kv_namespace)
    return set(raw.decode().split("\n"))


def test_a_redeploy_that_changes_shard_settings_under_traffic_splits_no_session(serve_url):
    """Episodes run throughout a redeploy with new shard settings (durable sessions, the default): while old and new
    shard lives both serve, every session has one owner. No split session, no late score, no closed ID seeded
    again (harness/two_owners.py, which retries 5xx as a driver does)."""
    import asyncio
    import threading

    from harness.two_owners import MUST_BE_ZERO, two_owners

    common = dict(
        app_name="it-redeploy-traffic", num_shards=2, corpus_dir=embedded_corpus_dir(), reaper_interval_seconds=0.5
    )
    first = Settings(**common, session_ttl_seconds=600)
    deploy(first, serve_url, replicas=2)
    try:
        counts = {}
        traffic = threading.Thread(
            target=lambda: counts.update(asyncio.run(two_owners([serve_url], workers=6, seconds=40)))
        )
        traffic.start()
        time.sleep(5)
        deploy(Settings(**common, session_ttl_seconds=900), serve_url, replicas=2)  # new shards beside the old
        traffic.join()
        assert counts["episodes"] >= 20 and not any(counts[name] for name in MUST_BE_ZERO), counts
        assert counts["scored"] >= counts["episodes"] // 2, counts
    finally:
        undeploy(first)
