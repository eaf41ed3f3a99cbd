"""A live-EDGAR mirror on loopback whose filings wait until they are released: a request that parses one holds
its place for as long as its caller likes (the admission tests, harness/held_place.py; bench/admission_memory.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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
    return {
        "num_shards": 1,
        "edgar_source": "live",
        "edgar_search_mode": None,
        "sec_www_base_url": edgar.url,
        "sec_data_base_url": edgar.url,
        "fetch_trusted_networks": ["127.0.0.1/32"],
        "request_timeout": 120,
    }
