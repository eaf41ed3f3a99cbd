"""The Redis holding the marks comes back empty while the Serve app runs (a restart without persistence), and a shard
is SIGKILLed: no closed ID is seeded again, no lost session is scored, the shards that still hold their sessions
serve them, and `finsec store acknowledge-loss` is the way back. The app trusts the Redis's configuration here
(mark_store_durability_check false, as for a Redis that persists "another way"), so only the marker can tell."""

from __future__ import annotations

from contextlib import contextmanager

from deployments.cli import main as finsec
from finsec.net.ports import free_port
from harness.fault_scenarios import failures, store_forgets
from harness.redis_server import running_redis
from session_store import shard_index

from .conftest import close_body, deployed_app, episode_seed, verify_body
from .test_shard_failure import FILING_URL, ids_on_shard, incarnation, wait_for_restart


def test_a_redis_that_comes_back_empty_seeds_no_closed_id_and_scores_no_lost_session(serve_url, tmp_path):
    port = free_port()
    redis = running_redis(persist=False, port=port)
    server = redis.__enter__()
    app_settings = dict(num_shards=2, mark_store_url=server.url, mark_store_durability_check=False)
    try:
        with contextmanager(deployed_app)(serve_url, "it-store-loss", **app_settings) as app:
            closed = {k: ids_on_shard(k, 2, 3) for k in range(2)}
            opened = {k: ids_on_shard(k, 2, 2) for k in range(2)}
            clients = {}
            with app.client() as c:
                for sid in (s for sids in closed.values() for s in sids):
                    assert c.post("/seed_session", json=episode_seed(sid)).status_code == 200
                    assert c.post("/close_session", json=close_body(sid)).status_code == 200
            for sid in (s for sids in opened.values() for s in sids):
                clients[sid] = c = app.client()
                assert c.post("/seed_session", json=episode_seed(sid)).status_code == 200
                assert c.post("/parse_html_page", json={"url": FILING_URL, "key": "doc"}).status_code == 200

            redis.__exit__(None, None, None)  # Redis dies, and comes back at the same address with nothing
            redis = running_redis(persist=False, port=port)
            redis.__enter__()
            before = incarnation(app, 0)
            app.sigkill("shard-0-of-2")
            wait_for_restart(app, 0, before)

            with app.client() as late:
                for shard, sids in closed.items():
                    for sid in sids:
                        refused = late.post("/seed_session", json=episode_seed(sid))
                        # shard 1 still holds its fences: 409 from memory; shard 0's new life can prove nothing
                        assert refused.status_code == (503 if shard == 0 else 409), (shard, refused.text)
                fresh = late.post("/seed_session", json=episode_seed(ids_on_shard(0, 2, 1)[0]))
                assert fresh.status_code == 503 and "acknowledge-loss" in fresh.json()["detail"]
                assert fresh.headers["retry-after"]
                status = late.get("/status").json()["mark_store"]
                assert status["ok"] is False and "marker is gone" in status["problem"]
            for sid, client in clients.items():
                row = client.post("/verify", json=verify_body()).json()
                if shard_index(sid, 2) == 0:  # its session and its durable seed are both gone: never scored
                    assert (row["mask_sample"], row["failure_kind"]) == (True, "session_lost"), row
                    assert client.post("/seed_session", json=episode_seed(sid)).status_code == 503
                else:  # held in shard 1's memory all along: proven, and scored
                    assert (row["mask_sample"], row["reward"]) == (False, 1.0), row
                client.close()

            config = tmp_path / "serve.yaml"
            config.write_text(f"""
applications:
  - name: it-store-loss
    import_path: deployments.builder:build_app
    args: {{app_name: it-store-loss, mark_store_url: "redis://127.0.0.1:{port}/0",
            mark_store_durability_check: false}}
""")
            assert finsec(["store", "check", str(config)]) == 1  # the marker is gone
            assert finsec(["store", "acknowledge-loss", str(config)]) == 0
            assert finsec(["store", "check", str(config)]) == 0
            with app.client() as resumed:
                for shard in range(2):
                    assert (
                        resumed.post("/seed_session", json=episode_seed(ids_on_shard(shard, 2, 1)[0])).status_code
                        == 200
                    ), shard
                assert resumed.get("/status").json()["mark_store"] == {"ok": True, "problem": None}
    finally:
        redis.__exit__(None, None, None)


def test_the_fault_benchs_store_scenario_passes(serve_url):
    """bench/faults.py's scenario, shorter: rollouts while Redis comes back empty and a shard dies with it."""
    summary = store_forgets(serve_url, seconds=10.0, workers=8)
    assert failures(summary) == [], summary
    assert summary["closed_ids_tried_while_lost"] == 40 and 503 in summary["closed_ids_refused_with"]
    assert summary["seeds_refused_until_acknowledged"] > 0 and summary["recovery_seconds"] is not None
