"""`finsec corpus serve`: a sec.gov-layout folder over loopback HTTP, and the app's live-EDGAR path reading it
(in one process, no Ray): the registry, the submissions and a filing all come over HTTP from the mirror."""

from __future__ import annotations

import json

import httpx
import pytest

from finsec.corpus.generate import ISSUERS, filings, write_corpus
from finsec_client.mirror_server import MirrorServer, NotAMirror, NotLoopback
from harness.inprocess import InProcess


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("mirror") / "www")


@pytest.fixture(scope="module")
def mirror(corpus):
    with MirrorServer(corpus, port=0) as server:
        yield server


def test_it_serves_the_layout_with_content_types(mirror, corpus):
    tickers = httpx.get(mirror.url + "/files/company_tickers.json")
    assert tickers.status_code == 200 and tickers.headers["content-type"].startswith("application/json")
    assert tickers.json() == json.loads((corpus / "files" / "company_tickers.json").read_text())
    filing = filings()[0]
    page = httpx.get(f"{mirror.url}/{filing.url_path}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    head = httpx.head(f"{mirror.url}/{filing.url_path}")
    assert head.status_code == 200 and int(head.headers["content-length"]) == len(page.content)


@pytest.mark.parametrize(
    "path",
    ["/", "/files", "/files/", "/../etc/passwd", "/files/%2e%2e/%2e%2e/etc/passwd", "/.hidden", "/files/missing.json"],
)
def test_nothing_else_is_served(mirror, path):
    assert httpx.get(mirror.url + path).status_code == 404


def test_only_posts_are_refused_and_only_loopback_is_served(mirror, corpus, tmp_path):
    assert httpx.post(mirror.url + "/files/company_tickers.json").status_code == 405
    with pytest.raises(NotLoopback):
        MirrorServer(corpus, host="0.0.0.0")
    with pytest.raises(NotAMirror, match="not in the sec.gov layout"):
        MirrorServer(tmp_path)


def test_the_live_edgar_path_reads_the_mirror_over_http(mirror):
    issuer = ISSUERS[2]
    own = sorted((f for f in filings() if f.issuer == issuer), key=lambda f: f.filing_date, reverse=True)
    with InProcess(
        edgar_source="live",
        sec_www_base_url=mirror.url,
        sec_data_base_url=mirror.url,
        fetch_trusted_networks=["127.0.0.1/32"],
        edgar_search_mode=None,
        user_agent="t t@example.com",
    ) as app:
        rows = json.loads(app.post("/sec_filing_search", json={"ticker": issuer.ticker}).json()["results"])
        assert [r["accession_number"] for r in rows] == [f.accession for f in own]
        app.post("/seed_session", json={})
        parsed = app.post("/parse_html_page", json={"url": own[0].url, "key": "k"}).json()["results"]
        assert parsed.startswith("SUCCESS")


def test_the_corpus_serve_command_serves_until_sigterm(corpus):
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from deployments.local import free_port

    port = free_port()
    command = [str(Path(sys.executable).parent / "finsec"), "corpus", "serve", str(corpus), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == f"serving {corpus} at http://127.0.0.1:{port}"
        assert httpx.get(f"http://127.0.0.1:{port}/files/company_tickers.json").status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
