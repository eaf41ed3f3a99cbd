"""What an operator sees of a running Serve app: its metrics as Prometheus scrapes them (driven through a verify,
a judge outage, SEC faults that are retried and a full shard, then the node's metrics-export port is scraped
until every name cluster/README.md lists is there, with the labels that tell the outcomes apart), and the app's
own log lines as structured JSON in the replica's Serve log (`logging_config.encoding: JSON`)."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from deployments.local import QUIET_LOGS
from finsec.corpus.generate import filings, write_corpus
from harness.llm_stub import responses_reply
from harness.sec_server import SecServer
from tests.conftest import METRICS_PORT

from .conftest import close_body, deployed_app, episode_seed, new_session_id, verify_body

ROOT = Path(__file__).parents[2]
FIRST, OTHER, SLOW = [f for f in filings() if f.form == "10-K"][:3]


@pytest.fixture(scope="module")
def sec(tmp_path_factory):
    with SecServer(write_corpus(tmp_path_factory.mktemp("sec") / "www")) as server:
        yield server


@pytest.fixture(scope="module")
def app(serve_url, sec, llm_server):
    yield from deployed_app(
        serve_url,
        "it-metrics",
        replicas=1,
        num_shards=1,
        max_sessions_per_shard=2,
        admission_running=1,
        edgar_source="live",
        sec_www_base_url=sec.url,
        sec_data_base_url=sec.url,
        edgar_search_mode=None,
        fetch_trusted_networks=["127.0.0.1/32"],
        request_timeout=2.0,
        retry_backoff_seconds=0.01,
        judge_model={"base_url": llm_server.base_url, "model": "judge"},
        judge_retry_delays=[0.0, 0.0],
        judge_call_timeout=5.0,
        logging_config={**QUIET_LOGS, "encoding": "JSON"},
    )


def scrape() -> str:
    return httpx.get(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=10).text


def readme_names() -> set[str]:
    section = (ROOT / "cluster/README.md").read_text().split("## Metrics", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(ray_finsec_[a-z_]+)[`{]", section))


def sample(text: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include these."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        head, value = line.rsplit(" ", 1)
        found = dict(re.findall(r'(\w+)="([^"]*)"', head))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(value)
    return total


@pytest.mark.timeout(180)
def test_every_metric_the_readme_names_is_exported_with_its_labels(app, sec, stub):
    with app.client() as client:
        sid = new_session_id()
        assert client.post("/seed_session", json=episode_seed(sid)).status_code == 200
        sec.script(FIRST.url_path, [503, 429])  # two failures, then the filing: two retries
        assert "SUCCESS" in client.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"}).json()["results"]
        assert client.post("/retrieve_information", json={"prompt": "revenues {{doc}}"}).status_code == 200
        for _ in range(3):
            stub.reply({"error": "overloaded"}, status=503)  # a judge outage: a masked judge_failed row
        assert client.post("/verify", json=verify_body("42")).json()["failure_kind"] == "judge_failed"
        stub.reply(responses_reply("[[2]]"))
        assert client.post("/verify", json=verify_body("42")).json()["reward"] == 1.0
        other = new_session_id()
        assert client.post("/seed_session", json=episode_seed(other, rollout="r2")).status_code == 200
        full = client.post("/seed_session", json=episode_seed(new_session_id(), rollout="r3"))
        assert full.status_code == 503  # the shard holds max_sessions_per_shard
        # One place (admission_running 1): a search waits while a parse holds it on a slow EDGAR.
        sec.hang(SLOW.url_path, 1.0)
        with ThreadPoolExecutor(1) as pool, app.client(cookies=dict(client.cookies)) as holder:
            held = pool.submit(holder.post, "/parse_html_page", json={"url": SLOW.url, "key": "slow"})
            time.sleep(0.3)
            assert client.post("/sec_filing_search", json={"ticker": "AAPL"}).status_code == 200
            assert held.result().status_code == 200
        for done, rollout in ((sid, "r1"), (other, "r2")):
            client.post("/close_session", json=close_body(done, rollout))

    wanted = readme_names()
    deadline = time.monotonic() + 120
    while True:
        text = scrape()
        missing = {name for name in wanted if not re.search(rf"^{name}[{{ ]", text, re.M)}
        if (
            not missing
            and sample(text, "ray_finsec_verifies_total", app="it-metrics", outcome="scored") >= 1
            and sample(text, "ray_finsec_shard_calls_total", app="it-metrics", phase="batch") >= 6
        ):
            break  # the reaper publishes the shards' totals at its ticks: wait for one after the closes
        assert time.monotonic() < deadline, f"never exported: {sorted(missing)}"
        time.sleep(1)
    mine = {"app": "it-metrics"}
    assert sample(text, "ray_finsec_verifies_total", **mine, outcome="masked", failure_kind="judge_failed") == 1
    assert sample(text, "ray_finsec_verifies_total", **mine, outcome="scored") == 1
    # the mean reward's parts: the scored row's reward, and none of the masked one's
    assert sample(text, "ray_finsec_rewards_total", **mine) == 1.0
    assert sample(text, "ray_finsec_verify_reward_count", **mine) == 1
    assert sample(text, "ray_finsec_sec_fetches_total", **mine, source="live", status="503") >= 1
    assert sample(text, "ray_finsec_sec_fetches_total", **mine, source="live", status="429") >= 1
    assert sample(text, "ray_finsec_retries_total", **mine, target="sec") >= 2
    assert sample(text, "ray_finsec_retries_total", **mine, target="judge") == 2
    assert sample(text, "ray_finsec_unavailable_total", **mine, cause="store_full") == 1
    assert sample(text, "ray_finsec_model_call_seconds_count", **mine, model="judge", outcome="error") == 3
    assert sample(text, "ray_finsec_cache_lookups_total", **mine, cache="indexes", result="miss") >= 1
    # the seeds' and closes' durable mark writes, timed by the shard and published by the reaper
    assert sample(text, "ray_finsec_shard_calls_total", **mine, phase="mark_write") >= 2
    assert sample(text, "ray_finsec_shard_seconds_total", **mine, phase="mark_write") > 0
    assert sample(text, "ray_finsec_shard_calls_total", **mine, phase="batch") >= 6
    # every call of a rollout route timed by the replica, and its event loop's lag sampled
    assert sample(text, "ray_finsec_request_seconds_count", **mine, route="/seed_session") == 3
    assert sample(text, "ray_finsec_request_seconds_count", **mine, route="/verify") == 2
    assert sample(text, "ray_finsec_event_loop_lag_seconds_count", **mine) >= 1


def test_the_apps_own_warnings_are_json_lines_in_the_replicas_serve_log(app, sec):
    import json

    import ray

    sec.script(OTHER.url_path, [503, 503, 503])  # every attempt fails: finsec.edgar.live warns
    with app.client() as client:
        sid = new_session_id()
        client.post("/seed_session", json=episode_seed(sid, rollout="logs"))
        assert "Failed" in client.post("/parse_html_page", json={"url": OTHER.url, "key": "doc"}).json()["results"]
        client.post("/close_session", json=close_body(sid, "logs"))
    folder = Path(ray._private.worker._global_node.get_logs_dir_path()) / "serve"
    deadline = time.monotonic() + 30
    while True:
        lines = [
            line
            for path in folder.glob("replica_it-metrics_*.log")
            for line in path.read_text().splitlines()
            if "failed after its retries" in line
        ]
        if lines or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert lines, "the warning never reached the replica's Serve log"
    record = json.loads(lines[-1])  # a JSON object, not a text line
    assert record["levelname"] == "WARNING" and OTHER.url_path in record["message"]
    assert record["replica"] and record["application"] == "it-metrics"
