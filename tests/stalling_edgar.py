"""A held place by construction, for the admission tests: a live-EDGAR mirror on loopback whose filings wait until
the test releases them, and a scenario that holds the one place of an app with a parse_html_page waiting there,
then sends more (tests/unit/test_serve_in_process.py and tests/integration/test_admission_http.py share it)."""

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


def admission_settings(edgar: StallingEdgar) -> dict:
    """An app that works on one request at a time and lets the others wait 5 s for the place, its filings from
    `edgar`."""
    return {**settings_for(edgar), "admission_running": 1, "admission_wait_seconds": 5,
            "admission_retry_after_seconds": 3}


def assert_waits_then_refuses(app_url: str, edgar: StallingEdgar) -> httpx.Response:
    """The promises of admission by waiting time, on an app of `admission_settings`: with its one place held by a
    parse waiting on EDGAR, requests wait for it; past the 5 s bound they get 503 with Retry-After, unstarted;
    requests that wait less are all served once the place comes free, and the app serves on. Returns a health check
    asked while the place was held."""

    async def scenario() -> httpx.Response:
        async with httpx.AsyncClient(base_url=app_url + "/", timeout=120) as client:
            seeded = await client.post("seed_session", json=episode_seed(new_session_id()))
            assert seeded.status_code == 200, seeded.text
            client.cookies = seeded.cookies
            parse = {"url": FILING, "key": "filing"}
            search = {"ticker": "EXM"}
            held = asyncio.create_task(client.post("parse_html_page", json=parse))
            while edgar.waiting < 1:  # the one place is taken: its request waits on EDGAR
                await asyncio.sleep(0.05)
            probed = await client.get("healthz")
            # Past the bound: turned away, unstarted, with the config's Retry-After.
            late = await asyncio.gather(*(client.post("sec_filing_search", json=search) for _ in range(3)))
            assert [r.status_code for r in late] == [503] * 3, [r.text for r in late]
            assert all(r.headers.get("retry-after") == "3" and "admission_wait_seconds" in r.json()["detail"]
                       for r in late)
            # Within it: they wait, however many, and are served once the place is free (on a server that
            # refused by count, all but one or two would be 503 now).
            waiting = [asyncio.create_task(client.post("parse_html_page", json=parse))]
            waiting += [asyncio.create_task(client.post("sec_filing_search", json=search)) for _ in range(6)]
            await asyncio.sleep(1)  # for them to reach the server: well within the bound
            edgar.released.set()
            admitted = await held
            assert admitted.status_code == 200 and "SUCCESS" in admitted.text, admitted.text
            answered = await asyncio.gather(*waiting)
            assert [r.status_code for r in answered] == [200] * 7, [r.text[:200] for r in answered]
            after = await client.post("sec_filing_search", json=search)
            assert after.status_code == 200, after.text
            return probed

    return asyncio.run(scenario())
