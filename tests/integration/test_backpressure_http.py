"""Backpressure on Serve (issue 38): past `max_ongoing_requests` plus `max_queued_requests`, a request is answered
at once with 503 and Retry-After (Serve's own `backpressure_config`), never queued without bound; the requests it
admitted finish, and the app serves again when the load is gone.

A replica that admits one request and queues one is held full by parse_html_page calls that wait on a live-EDGAR
mirror which stalls until the test releases it: saturation by construction, no timing involved."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from deployments.local import QUIET_LOGS, deploy_application, undeploy
from deployments.settings import Settings
from tests.integration.conftest import episode_seed, new_session_id

TICKERS = b'{"0": {"cik_str": 1, "ticker": "EXM", "title": "Example Corp"}}'
FILING = "https://www.sec.gov/Archives/edgar/data/1/000000000125000001/ex-20241231.htm"


class StallingEdgar(ThreadingHTTPServer):
    """www.sec.gov on loopback: the ticker registry at once, every filing only after `release`."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.waiting = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path.endswith("company_tickers.json"):
                    body, kind = TICKERS, "application/json"
                else:
                    server.waiting += 1
                    server.released.wait(120)
                    body, kind = b"<html><body><p>Revenue was $5 million.</p></body></html>", "text/html"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture(scope="module")
def edgar() -> Iterator[StallingEdgar]:
    server = StallingEdgar()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.released.set()
    server.shutdown()


@pytest.fixture(scope="module")
def app_url(serve_url: str, edgar: StallingEdgar) -> Iterator[str]:
    settings = Settings(app_name="backpressure", num_shards=1, edgar_source="live", edgar_search_mode=None,
                        sec_www_base_url=edgar.url, sec_data_base_url=edgar.url,
                        fetch_trusted_networks=["127.0.0.1/32"], request_timeout=120)
    url = deploy_application(settings, serve_url, name="backpressure", route_prefix="/backpressure", options={
        "num_replicas": 1, "max_ongoing_requests": 1, "max_queued_requests": 1,
        "backpressure_config": {"retry_after_s": 2}, "ray_actor_options": {"num_cpus": 0},
        "logging_config": QUIET_LOGS})
    yield url
    undeploy(settings, purge=True)


def test_a_saturated_app_answers_503_with_retry_after_and_recovers(app_url: str, edgar: StallingEdgar):
    async def scenario() -> tuple[list[httpx.Response], httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(base_url=app_url + "/", timeout=120) as client:
            seeded = await client.post("seed_session", json=episode_seed(new_session_id()))
            assert seeded.status_code == 200, seeded.text
            client.cookies = seeded.cookies
            parse = {"url": FILING, "key": "filing"}
            held = [asyncio.create_task(client.post("parse_html_page", json=parse))]
            while edgar.waiting < 1:  # the replica's one slot is taken: its request waits on EDGAR
                await asyncio.sleep(0.05)
            # Seven more: one takes the queue's one place, the six others are turned away at once (waited for
            # up to a minute, so a replica that queued them all fails the test instead of hanging it).
            more = [asyncio.create_task(client.post("parse_html_page", json=parse))]
            more += [asyncio.create_task(client.post("sec_filing_search", json={"ticker": "EXM"})) for _ in range(6)]
            for _ in range(1200):
                if sum(task.done() for task in more) >= 6:
                    break
                await asyncio.sleep(0.05)
            edgar.released.set()
            admitted = await held[0]
            answered = list(await asyncio.gather(*more))
            after = await client.post("sec_filing_search", json={"ticker": "EXM"})
            return answered, admitted, after

    answered, admitted, after = asyncio.run(scenario())
    statuses = sorted(r.status_code for r in answered)
    assert statuses == [200] + [503] * 6, statuses  # one queued, then served; six turned away
    assert all(r.headers.get("retry-after") == "2" for r in answered if r.status_code == 503)
    assert admitted.status_code == 200 and "SUCCESS" in admitted.text
    assert after.status_code == 200  # the load gone, it serves again
