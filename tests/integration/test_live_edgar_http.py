"""The live-EDGAR path end to end: the Serve app (2 replicas) configured for live SEC, pointed at a real HTTP
server on loopback that serves a folder in the sec.gov layout. Retries, timeouts, the User-Agent and the
cluster-wide rate limit are observed at that server (contract §F.2)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from finsec.corpus.generate import ISSUERS, filings, write_corpus
from harness.sec_server import SecServer, most_in_any_window

from .conftest import deployed_app

LIMIT = 4  # requests per second for the whole app
UA = "finsec-serve-it/1.0 live-tests@example.com"
ISSUER = ISSUERS[1]
OWN = [f for f in filings() if f.issuer == ISSUER]


@pytest.fixture(scope="module")
def sec(tmp_path_factory):
    with SecServer(write_corpus(tmp_path_factory.mktemp("sec") / "www")) as server:
        yield server


@pytest.fixture(scope="module")
def app(serve_url, sec):
    yield from deployed_app(
        serve_url,
        "it-live",
        edgar_source="live",
        sec_www_base_url=sec.url,
        sec_data_base_url=sec.url,
        # 1.5 s: the margin over the 1 s window checked at the server absorbs arrival jitter on a loaded 2-core CI
        user_agent=UA,
        requests_per_second=LIMIT,
        rate_limit_window_seconds=1.5,
        request_timeout=1.0,
        retry_backoff_seconds=0.05,
        edgar_search_mode=None,
        fetch_trusted_networks=["127.0.0.1/32"],
    )


def test_live_sec_filing_search_and_parse(app, sec):
    with app.client() as client:
        rows = json.loads(client.post("/sec_filing_search", json={"ticker": ISSUER.ticker}).json()["results"])
        newest_first = sorted(OWN, key=lambda f: f.filing_date, reverse=True)
        assert [row["accession_number"] for row in rows] == [f.accession for f in newest_first]
        client.post("/seed_session", json={})
        r = client.post("/parse_html_page", json={"url": "https://www.sec.gov/" + OWN[0].url_path, "key": "k"})
        assert r.json()["results"].startswith("SUCCESS")
    assert sec.requests_for("files/company_tickers.json")  # the replicas loaded the registry from the server
    assert sec.requests_for(f"submissions/CIK{ISSUER.cik:010d}.json")
    assert {s.user_agent for s in sec.seen} == {UA}


def test_one_fetch_and_parse_of_a_filing_serves_every_replica(app, sec):
    path = OWN[3].url_path

    async def session(client):  # each client is a new session
        await client.post("/seed_session", json={})
        return await client.post("/parse_html_page", json={"url": "https://www.sec.gov/" + path, "key": "k"})

    async def sessions(n):  # concurrent, so the ingress spreads them over both replicas
        clients = [app.async_client() for _ in range(n)]
        try:
            return await asyncio.gather(*(session(c) for c in clients))
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    first = asyncio.run(sessions(1))  # the first parse fetches; every later one, on any replica, reuses it
    replies = first + asyncio.run(sessions(12))
    assert all(r.json()["results"].startswith("SUCCESS") for r in replies)
    assert len({r.headers["x-finsec-replica"] for r in replies}) == 2 and len(sec.requests_for(path)) == 1


def test_throttled_and_refused_requests_are_retried(app, sec):
    retried, refused = OWN[1].url_path, OWN[2].url_path
    sec.script(retried, [429, 503])
    sec.script(refused, [403, 403, 403])
    with app.client() as client:
        client.post("/seed_session", json={})
        ok = client.post("/parse_html_page", json={"url": "https://www.sec.gov/" + retried, "key": "a"})
        failed = client.post("/parse_html_page", json={"url": "https://www.sec.gov/" + refused, "key": "b"})
    assert ok.json()["results"].startswith("SUCCESS") and len(sec.requests_for(retried)) == 3
    assert failed.json()["results"] == (
        f"Failed to download filing from https://www.sec.gov/{refused}. The SEC server may be temporarily unavailable."
    )
    assert len(sec.requests_for(refused)) == 3


def test_a_source_that_never_answers_times_out(app, sec):
    path = "Archives/edgar/data/990000002/000000000000000099/hangs.htm"
    sec.hang(path, 5)
    with app.client() as client:
        client.post("/seed_session", json={})
        started = time.monotonic()
        r = client.post("/parse_html_page", json={"url": "https://www.sec.gov/" + path, "key": "k"})
        elapsed = time.monotonic() - started
    assert r.status_code == 200 and r.json()["results"].startswith("Failed to download filing from")
    assert len(sec.requests_for(path)) == 3 and elapsed < 10  # three 1 s timeouts and short backoffs


def test_rate_limit_holds_for_the_whole_app_across_replicas(app, sec):
    paths = [f"Archives/edgar/data/990000002/{n:018d}/doc.htm" for n in range(24)]  # missing: one request each

    async def burst():
        async with app.async_client() as client:
            await client.post("/seed_session", json={})
            return await asyncio.gather(
                *(client.post("/parse_html_page", json={"url": "https://www.sec.gov/" + p, "key": "k"}) for p in paths)
            )

    replies = asyncio.run(burst())
    assert len({r.headers["x-finsec-replica"] for r in replies}) == 2  # both replicas fetched
    arrivals = [s.at for p in paths for s in sec.requests_for(p)]
    assert len(arrivals) == len(paths)
    assert most_in_any_window(arrivals, 1.0) <= LIMIT
    assert max(arrivals) - min(arrivals) >= (len(paths) - 1) * 1.5 / LIMIT - 1  # it was throttled, not just slow
