"""The replicas' operator metrics (finsec/metrics.py), counted in memory in the one-process app:
verifies by outcome after grading, cache hits and misses, 503s by cause, and the README naming what is exported.
The live scrape of a running Ray app is tests/integration/test_metrics_scrape.py."""

from __future__ import annotations

import re
from pathlib import Path

from finsec.corpus.generate import filings
from finsec.metrics import exported_names
from harness.bodies import close_body, episode_seed, new_session_id, verify_body
from harness.inprocess import InProcess

FIRST = next(f for f in filings() if f.form == "10-K")
ROOT = Path(__file__).parents[3]


def test_verifies_are_counted_by_outcome_and_failure_kind_and_a_resend_hits_the_verdict_cache():
    with InProcess() as app:
        sid = new_session_id()
        app.post("/seed_session", json=episode_seed(sid))
        right, wrong = verify_body("42"), verify_body("17")
        assert app.post("/verify", json=right).json()["reward"] == 1.0
        assert app.post("/verify", json=right).json()["reward"] == 1.0  # the re-send: the kept verdict
        assert app.post("/verify", json=wrong).json()["reward"] == 0.0
        app.post("/close_session", json=close_body(sid))
        assert app.post("/verify", json=right).json()["mask_sample"] is True  # after close: masked, session_lost
        metrics = app.metrics
        assert metrics.count("finsec_verifies", outcome="scored") == 3
        assert metrics.count("finsec_verifies", outcome="masked", failure_kind="session_lost") == 1
        # the rewards of the scored rows, and none of the masked one's: 1 + 1 + 0 over 3
        assert (metrics.count("finsec_rewards"), metrics.count("finsec_verify_reward")) == (2.0, 3)
        assert metrics.count("finsec_cache_lookups", cache="verdicts", result="hit") == 1
        assert metrics.count("finsec_cache_lookups", cache="verdicts", result="miss") == 2


def test_texts_and_indexes_are_counted_as_hits_once_a_replica_holds_them():
    with InProcess() as app:
        sid = new_session_id()
        app.post("/seed_session", json=episode_seed(sid))
        app.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"})
        for _ in range(2):
            assert app.post("/retrieve_information", json={"prompt": "total net revenues {{doc}}"}).status_code == 200
        metrics = app.metrics
        assert metrics.count("finsec_cache_lookups", cache="indexes", result="miss") == 1
        assert metrics.count("finsec_cache_lookups", cache="indexes", result="hit") == 1
        assert metrics.count("finsec_cache_lookups", cache="texts", result="hit") == 2
        assert metrics.count("finsec_sec_fetches", source="mirror", status="200") >= 1


def test_a_503_is_counted_by_its_cause():
    with InProcess(num_shards=1, max_sessions_per_shard=1) as app:
        app.post("/seed_session", json=episode_seed(new_session_id()))
        full = app.post("/seed_session", json=episode_seed(new_session_id(), rollout="r2"))
        assert full.status_code == 503 and full.headers["Retry-After"]
        assert app.metrics.count("finsec_unavailable", cause="store_full") == 1
        assert app.metrics.count("finsec_unavailable") == 1


def test_the_readme_names_exactly_the_exported_metrics():
    """cluster/README.md's metrics section lists every name Prometheus shows, and nothing else."""
    section = (ROOT / "cluster/README.md").read_text().split("## Metrics", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(ray_finsec_[a-z_]+)[`{]", section))
    reaper = {
        "ray_finsec_session_events_total",
        "ray_finsec_sessions_held",
        "ray_finsec_marks_held",
        "ray_finsec_digests_held",
        "ray_finsec_document_store_bytes",
        "ray_finsec_shard_seconds_total",
        "ray_finsec_shard_calls_total",
        "ray_finsec_mark_store_ok",
        "ray_finsec_clock_step_seconds",
        "ray_finsec_shards_unreachable",
        "ray_finsec_stalled_sessions",
    }
    assert named == set(exported_names()) | reaper


def test_the_grafana_dashboard_charts_every_metric_and_only_exported_ones():
    import json

    import yaml

    dashboard = json.loads((ROOT / "cluster/monitoring/grafana-dashboard.json").read_text())
    panels = [p for panel in dashboard["panels"] for p in (panel, *panel.get("panels", []))]  # rows hold some
    exprs = [t["expr"] for panel in panels for t in panel.get("targets", [])]
    used = {name for e in exprs for name in re.findall(r"\b(ray_finsec_[a-z_]+)", e)}
    readme = (ROOT / "cluster/README.md").read_text().split("## Metrics", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(ray_finsec_[a-z_]+)[`{]", readme))
    base = {re.sub(r"_(count|bucket|sum)$", "", n) for n in used}
    assert {re.sub(r"_count$", "", n) for n in named} <= base | used, "a README metric the dashboard leaves out"
    assert used <= named | {re.sub(r"_count$", "_bucket", n) for n in named}, "a dashboard metric nobody exports"
    monitor = yaml.safe_load((ROOT / "cluster/monitoring/podmonitor.yaml").read_text())
    assert monitor["kind"] == "PodMonitor" and monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


def test_status_says_what_the_deployment_is_without_its_secrets(redis_server):
    """GET /status: version, shape, per-shard state; the Redis URL without its password."""
    from deployments.about import mark_store
    from deployments.settings import Settings

    secret_url = f"redis://:hunter2@127.0.0.1:{redis_server.port}/1"
    assert mark_store(Settings(mark_store_url=secret_url)) == f"redis://127.0.0.1:{redis_server.port}/1"
    assert mark_store(Settings()) == "gcs"
    with InProcess(num_shards=2) as app:
        sid = new_session_id()
        app.post("/seed_session", json=episode_seed(sid))
        status = app.run(app.client.get("/status")).json()
    assert status["app"] == "in-process" and "code " in status["version"]
    assert status["settings"]["mark_store"] == "memory" and status["settings"]["grader"] == "deterministic"
    assert status["held"]["sessions"] == 1 and [s["shard"] for s in status["shards"]] == [0, 1]
    assert sum(s["sessions"] for s in status["shards"]) == 1 and status["actors"] == []
