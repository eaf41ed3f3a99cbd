"""Saturation by construction, for the backpressure tests (issue 38): a live-EDGAR mirror on loopback whose
filings wait until the test releases them, and a scenario that fills an app admitting one request and queueing one
with parse_html_page calls held there, then sends more. No timing involved."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from harness.bodies import episode_seed, new_session_id

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


@contextmanager
def stalling_edgar() -> Iterator[StallingEdgar]:
    server = StallingEdgar()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.released.set()
        server.shutdown()


def settings_for(edgar: StallingEdgar) -> dict:
    """The settings that send every filing fetch to `edgar`."""
    return {"num_shards": 1, "edgar_source": "live", "edgar_search_mode": None, "sec_www_base_url": edgar.url,
            "sec_data_base_url": edgar.url, "fetch_trusted_networks": ["127.0.0.1/32"], "request_timeout": 120}


def saturate(app_url: str, edgar: StallingEdgar, probe: str = "healthz") -> tuple[list[httpx.Response], ...]:
    """Fill an app that runs one request and queues one, send six more, release: (the seven answers past the one
    held, the held one's, one sent after, a GET of `probe` while it was full)."""

    async def scenario() -> tuple[list[httpx.Response], ...]:
        async with httpx.AsyncClient(base_url=app_url + "/", timeout=120) as client:
            seeded = await client.post("seed_session", json=episode_seed(new_session_id()))
            assert seeded.status_code == 200, seeded.text
            client.cookies = seeded.cookies
            parse = {"url": FILING, "key": "filing"}
            held = asyncio.create_task(client.post("parse_html_page", json=parse))
            while edgar.waiting < 1:  # the one slot is taken: its request waits on EDGAR
                await asyncio.sleep(0.05)
            # Seven more: one takes the queue's one place, the six others are turned away at once (waited for
            # up to a minute, so an app that queued them all fails the test instead of hanging it).
            more = [asyncio.create_task(client.post("parse_html_page", json=parse))]
            more += [asyncio.create_task(client.post("sec_filing_search", json={"ticker": "EXM"})) for _ in range(6)]
            for _ in range(1200):
                if sum(task.done() for task in more) >= 6:
                    break
                await asyncio.sleep(0.05)
            probed = await client.get(probe)
            edgar.released.set()
            admitted = await held
            answered = list(await asyncio.gather(*more))
            after = await client.post("sec_filing_search", json={"ticker": "EXM"})
            return answered, admitted, after, probed

    return asyncio.run(scenario())


def assert_turned_away_and_recovered(app_url: str, edgar: StallingEdgar, retry_after: str) -> httpx.Response:
    """The scenario's promises; returns the health check asked while the app was full."""
    answered, admitted, after, probed = saturate(app_url, edgar)
    statuses = sorted(r.status_code for r in answered)
    assert statuses == [200] + [503] * 6, statuses  # one queued, then served; six turned away
    assert all(r.headers.get("retry-after") == retry_after for r in answered if r.status_code == 503)
    assert admitted.status_code == 200 and "SUCCESS" in admitted.text
    assert after.status_code == 200  # the load gone, it serves again
    return probed
