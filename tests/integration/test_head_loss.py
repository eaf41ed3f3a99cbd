"""Losing the whole Ray cluster, head and GCS included, with the marks in Redis (issue: state that survives the head;
contract §C.4 fences, §C.5 masked verify, §C.6 session_lost, Decision 14 cookies).

A second private cluster (harness/ray_head.py) runs `finsec serve --address` on a real redis-server, in either of two
setups: the Redis mark store (`mark_store_url`), or the GCS mark store on a GCS that Ray itself keeps in that Redis
(GCS fault tolerance, `RAY_REDIS_ADDRESS`, as KubeRay's `gcsFaultToleranceOptions` sets up; it works outside KubeRay
too). Sessions are seeded, some closed; then every process of that cluster is SIGKILLed at once, the cluster is
started again with the same settings and the app deployed again. Closed IDs stay fenced; without durable sessions,
open episodes are lost (seed 409, tools 404 session_lost, verify masked) with or without their cookie; the old
cookie of an agent-run session still verifies as lost, which needs the cookie secret kept with the marks. With
neither setup the fences are gone (the test fails: checked by hand)."""

from __future__ import annotations

import uuid

import httpx
import pytest
import redis

from finsec.corpus.generate import questions
from harness.bodies import close_body, episode_seed, new_session_id, verify_body
from harness.ray_head import RayHead, free_port
from harness.serve_configs import one_replica

# Without durable sessions, so that the open ones are lost (with them, the last test: a new cluster takes over).
SETUPS = {
    "redis mark store": lambda redis, app: {"FINSEC_MARK_STORE_URL": redis.url, "FINSEC_DURABLE_SESSIONS": "false"},
    "GCS fault tolerance": lambda redis, app: {
        "RAY_REDIS_ADDRESS": f"127.0.0.1:{redis.port}",
        "RAY_external_storage_namespace": app,
        "FINSEC_DURABLE_SESSIONS": "false",
    },
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("setup", list(SETUPS))
def test_a_lost_cluster_loses_no_fence_and_scores_no_lost_session(redis_server, tmp_path, setup):
    app = f"headloss-{uuid.uuid4().hex[:6]}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    head = RayHead(SETUPS[setup](redis_server, app))
    serve_config = one_replica(tmp_path, app, port)
    closed, open_ = [new_session_id() for _ in range(3)], [new_session_id() for _ in range(4)]
    try:
        head.start()
        head.serve(serve_config, url)
        cookies: dict[str, httpx.Cookies] = {}
        with httpx.Client(base_url=url, timeout=60) as plain:
            for sid in closed + open_:
                with httpx.Client(base_url=url, timeout=60) as c:
                    assert c.post("/seed_session", json=episode_seed(sid)).status_code == 200
                    cookies[sid] = httpx.Cookies(c.cookies)
            for sid in closed:
                assert plain.post("/close_session", json=close_body(sid)).status_code == 200
        legacy = httpx.Client(base_url=url, timeout=60)
        assert legacy.post("/seed_session", json={}).status_code == 200  # an agent-run seed: its cookie is its ID
        legacy_cookies = httpx.Cookies(legacy.cookies)
        legacy.close()

        assert head.kill_all() > 5  # gcs_server, raylet, agents, workers, the finsec driver
        head.start()
        head.serve(serve_config, url)

        with httpx.Client(base_url=url, timeout=60) as plain:
            for sid in closed:
                refused = plain.post("/seed_session", json=episode_seed(sid))
                assert refused.status_code == 409 and "closed" in refused.text, sid
            for sid in open_[:2]:  # a retried cookie-less seed: the durable seed says it was open
                refused = plain.post("/seed_session", json=episode_seed(sid))
                assert refused.status_code == 409 and "restarted" in refused.text, sid
        for sid in open_[2:]:  # the episode's own cookie: tools 404 session_lost, verify masked
            with httpx.Client(base_url=url, timeout=60, cookies=cookies[sid]) as c:
                tool = c.post("/retrieve_information", json={"prompt": "revenues {{doc}}"})
                assert tool.status_code == 404 and tool.json()["failure_kind"] == "session_lost", tool.text
                row = c.post("/verify", json=verify_body()).json()
                assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost"), row
                assert c.post("/seed_session", json={}).status_code == 409  # no agent-run takeover
        with httpx.Client(base_url=url, timeout=60, cookies=legacy_cookies) as c:
            row = c.post("/verify", json=verify_body()).json()  # a right answer: only the mask stops a reward
            assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost"), row
    finally:
        head.kill_all()
        client = redis.Redis.from_url(redis_server.url)
        for key in client.scan_iter(match=f"*{app}*", count=1000):  # our marks, or Ray's tables for this cluster
            client.unlink(key)


@pytest.mark.timeout(300)
def test_with_durable_sessions_a_new_cluster_takes_over_every_open_session(redis_server, tmp_path):
    """The same loss with `durable_sessions` (contract §C.11): the new cluster's shards restore every open session
    from Redis, documents included (the new document store is empty, so each text is fetched again and checked
    against its digest): each episode, with the cookie it held, answers its tools, verifies unmasked and closes;
    the agent-run session too; closed IDs stay fenced. The test above, without the setting, loses them all."""
    app = f"takeover-{uuid.uuid4().hex[:6]}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    head = RayHead({"FINSEC_MARK_STORE_URL": redis_server.url, "FINSEC_DURABLE_SESSIONS": "true"})
    serve_config = one_replica(tmp_path, app, port)
    closed, open_ = new_session_id(), [new_session_id() for _ in range(4)]
    document = {"url": questions()[0]["url"], "key": "doc"}
    try:
        head.start()
        head.serve(serve_config, url)
        cookies: dict[str, httpx.Cookies] = {}
        for sid in [closed, *open_, "agent-run"]:
            with httpx.Client(base_url=url, timeout=60) as c:
                seed = {} if sid == "agent-run" else episode_seed(sid)
                assert c.post("/seed_session", json=seed).status_code == 200
                if sid == closed:
                    assert c.post("/close_session", json=close_body(sid)).status_code == 200
                    continue
                assert "SUCCESS" in c.post("/parse_html_page", json=document).json()["results"]
                cookies[sid] = httpx.Cookies(c.cookies)

        assert head.kill_all() > 5
        head.start()
        head.serve(serve_config, url)

        with httpx.Client(base_url=url, timeout=60) as plain:
            assert plain.post("/seed_session", json=episode_seed(closed)).status_code == 409
            assert plain.post("/seed_session", json=episode_seed(open_[0])).status_code == 200  # a retried seed
        for sid, jar in cookies.items():
            with httpx.Client(base_url=url, timeout=60, cookies=jar) as c:
                tool = c.post("/retrieve_information", json={"prompt": "total net revenues {{doc}}"})
                assert tool.status_code == 200 and "passages" in tool.json()["results"], (sid, tool.text)
                row = c.post("/verify", json=verify_body()).json()
                assert (row["mask_sample"], row["reward"]) == (False, 1.0), (sid, row)
                if sid != "agent-run":
                    assert c.post("/close_session", json=close_body(sid)).status_code == 200
    finally:
        head.kill_all()
        client = redis.Redis.from_url(redis_server.url)
        for key in client.scan_iter(match=f"*{app}*", count=1000):
            client.unlink(key)
