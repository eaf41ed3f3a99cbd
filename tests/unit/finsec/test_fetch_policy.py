"""The one fetch policy (finsec/net/policy.py) and the live EDGAR source through it, against real HTTP
servers on loopback: 127.0.0.1 stands in for SEC (trusted explicitly, as a private mirror would be) and
127.0.0.2 is a distinct "internal" server holding a secret that no redirect may ever reach (contract §F.2)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from deployments.services import edgar_source, page_fetcher
from deployments.settings import Settings
from finsec.corpus.generate import filings as corpus_filings
from finsec.edgar.filing_text import DocumentUnavailable
from finsec.edgar.live import LiveSource
from finsec.edgar.source import MirrorSource
from finsec.net.policy import SEC_CONTENT_TYPES, FetchPolicy
from finsec.net.safe_fetch import FetchedPage, FetchRefused
from harness.sec_server import SecServer

UA = "finsec-serve-tests/1.0 tests@example.com"
FIRST = next(f for f in corpus_filings() if f.form == "10-K")
STAND_IN = ["127.0.0.1/32"]


class CountingLimiter:
    def __init__(self) -> None:
        self.slots = 0

    async def acquire(self) -> None:
        self.slots += 1


def run(coroutine):
    return asyncio.run(coroutine)


@pytest.fixture(scope="module")
def secret_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("internal")
    (root / "secret.htm").write_text("<html><body>internal secret</body></html>")
    with SecServer(root, host="127.0.0.2") as running:
        yield running


@pytest.fixture
def secret(secret_server):
    secret_server.reset()
    return secret_server


def policy(sec: SecServer, limiter=None, **overrides) -> FetchPolicy:
    options = dict(
        sec_base_urls=[sec.url],
        trusted_networks=STAND_IN,
        max_bytes=20_000_000,
        timeout_seconds=2.0,
        user_agent=UA,
        limiter=limiter or CountingLimiter(),
    )
    return FetchPolicy(**(options | overrides))


def live(sec: SecServer, limiter=None, **overrides) -> LiveSource:
    limiter = limiter or CountingLimiter()
    return LiveSource(
        fetcher=policy(sec, limiter, **overrides).sec_fetcher(),
        www_base_url=sec.url,
        data_base_url=sec.url,
        limiter=limiter,
        backoff_seconds=0.01,
    )


# ----- what an SEC host is -----


def test_sec_hosts_are_sec_gov_its_subdomains_and_the_configured_bases() -> None:
    rules = FetchPolicy(
        sec_base_urls=["https://www.sec.gov", "https://data.sec.gov/", "http://127.0.0.1:8080"],
        max_bytes=1,
        timeout_seconds=1,
        user_agent=UA,
        limiter=CountingLimiter(),
    )
    assert rules.sec_hosts == {"sec.gov", "*.sec.gov", "www.sec.gov", "data.sec.gov", "127.0.0.1"}
    assert all(rules.is_sec_host(h) for h in ("sec.gov", "WWW.SEC.GOV.", "efts.sec.gov", "127.0.0.1"))
    assert not any(rules.is_sec_host(h) for h in ("evilsec.gov", "sec.gov.evil.example", "127.0.0.2", "example.com"))
    with pytest.raises(ValueError, match="SEC base URL"):
        _ = FetchPolicy(
            sec_base_urls=["not a url"], max_bytes=1, timeout_seconds=1, user_agent=UA, limiter=CountingLimiter()
        ).sec_hosts


# ----- the live source goes through the guard -----


@pytest.mark.parametrize(
    "location",
    [
        "{secret}/secret.htm",
        "http://localhost:{port}/secret.htm",
        "http://2130706433:{port}/secret.htm",
        "http://[::ffff:127.0.0.2]:{port}/secret.htm",
        "http://0x7f.0.0.2:{port}/secret.htm",
        "http://www.sec.gov.evil.example:{port}/secret.htm",
    ],
)
def test_a_redirect_from_sec_never_reaches_another_server(sec, secret, location) -> None:
    sec.redirect(FIRST.url_path, location.format(secret=secret.url, port=secret.port))
    assert run(live(sec).read_archive(FIRST.url_path)) is None
    assert secret.seen == []
    assert len(sec.requests_for(FIRST.url_path)) == 1  # a refusal is final, not retried


def test_production_policy_refuses_the_loopback_stand_in(sec) -> None:
    assert run(live(sec, trusted_networks=()).read_archive(FIRST.url_path)) is None
    assert sec.seen == []  # refused before connecting


def test_live_reads_are_capped(sec, corpus) -> None:
    size = (corpus / FIRST.url_path).stat().st_size
    assert run(live(sec, max_bytes=size).read_archive(FIRST.url_path)) == (corpus / FIRST.url_path).read_bytes()
    assert run(live(sec, max_bytes=size - 1).read_archive(FIRST.url_path)) is None
    assert len(sec.requests_for(FIRST.url_path)) == 2  # the oversize answer was not retried


@pytest.mark.parametrize(
    ("content_type", "allowed"),
    [
        ("text/html", True),
        ("text/plain", True),
        ("application/xml", True),
        ("", True),
        ("application/json", True),
        ("application/octet-stream", False),
        ("application/pdf", False),
        ("image/png", False),
    ],
)
def test_sec_content_types(sec, content_type: str, allowed: bool) -> None:
    sec.serve_as(FIRST.url_path, content_type)
    assert (run(live(sec).read_archive(FIRST.url_path)) is not None) is allowed
    assert (content_type in SEC_CONTENT_TYPES) is allowed


def test_sec_json_is_read(sec) -> None:
    tickers = run(live(sec).read_json("files/company_tickers.json"))
    assert FIRST.issuer.ticker in {row["ticker"] for row in tickers.values()}


def test_a_redirect_within_sec_is_followed_with_the_user_agent_and_a_slot_per_hop(sec, corpus) -> None:
    old = f"Archives/edgar/data/{FIRST.issuer.cik}/{'1' * 18}/moved.htm"
    sec.redirect(old, f"{sec.url}/{FIRST.url_path}")
    limiter = CountingLimiter()
    assert run(live(sec, limiter).read_archive(old)) == (corpus / FIRST.url_path).read_bytes()
    assert [s.path for s in sec.seen] == [old, FIRST.url_path] and {s.user_agent for s in sec.seen} == {UA}
    assert limiter.slots == 2  # one for the attempt, one for the redirect hop


def test_transport_errors_are_retried_with_a_slot_per_attempt(sec) -> None:
    with socket.socket() as closed:  # a port nobody listens on: every connect fails
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    limiter = CountingLimiter()
    source = LiveSource(
        fetcher=policy(sec, limiter, sec_base_urls=[dead]).sec_fetcher(),
        www_base_url=dead,
        data_base_url=dead,
        limiter=limiter,
        max_attempts=3,
        backoff_seconds=0.01,
    )
    assert run(source.read_archive(FIRST.url_path)) is None
    assert limiter.slots == 3


def test_environment_proxies_are_ignored(sec, monkeypatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    assert run(live(sec).read_archive(FIRST.url_path)) is not None


@pytest.mark.parametrize(
    "path",
    [
        "MANIFEST.json",
        "submissions/../files/company_tickers.json",
        f"{FIRST.url_path.rsplit('/', 1)[0]}/../../1/{'0' * 18}/x.htm",
        "x" * 10_000,
    ],
)
def test_live_source_asks_sec_only_for_layout_paths(sec, path: str) -> None:
    source = live(sec)
    assert run(source.read_archive(path)) is None and run(source.read_json(path)) is None
    assert sec.seen == []


# ----- the page fetcher -----


def test_page_fetcher_rate_limits_sec_hops_only(sec, secret) -> None:
    limiter = CountingLimiter()
    fetcher = policy(sec, limiter, page_hosts=["127.0.0.2"], trusted_networks=["127.0.0.1", "127.0.0.2"]).page_fetcher()
    run(fetcher.fetch(f"{sec.url}/{FIRST.url_path}"))
    assert limiter.slots == 1
    run(fetcher.fetch(f"{secret.url}/secret.htm"))
    assert limiter.slots == 1  # not an SEC host
    secret.redirect("to-sec.htm", f"{sec.url}/{FIRST.url_path}")
    assert b"Total net revenues" in run(fetcher.fetch(f"{secret.url}/to-sec.htm")).body
    assert limiter.slots == 2  # the SEC hop of that redirect


def test_page_fetcher_refuses_private_addresses_by_default(sec) -> None:
    fetcher = policy(sec, trusted_networks=(), page_hosts=["127.0.0.1"]).page_fetcher()
    with pytest.raises(FetchRefused, match="127.0.0.1 is a loopback address"):
        run(fetcher.fetch(f"{sec.url}/{FIRST.url_path}"))
    assert sec.seen == []


# ----- the services wiring (settings -> policy) -----


def live_settings(sec: SecServer, **overrides) -> Settings:
    return Settings(
        **(
            {
                "edgar_source": "live",
                "sec_www_base_url": sec.url,
                "sec_data_base_url": sec.url,
                "edgar_search_mode": None,
                "user_agent": UA,
                "retry_backoff_seconds": 0.01,
            }
            | overrides
        )
    )


def test_settings_trust_nothing_by_default() -> None:
    assert Settings().fetch_trusted_networks == []


def test_edgar_source_uses_the_guard_and_the_trusted_networks_setting(sec) -> None:
    trusted = edgar_source(live_settings(sec, fetch_trusted_networks=STAND_IN), CountingLimiter())
    assert run(trusted.read_archive(FIRST.url_path)) is not None
    assert run(edgar_source(live_settings(sec), CountingLimiter()).read_archive(FIRST.url_path)) is None
    assert len(sec.seen) == 1  # the untrusted one never connected
    size = len(run(trusted.read_archive(FIRST.url_path)))
    capped = edgar_source(
        live_settings(sec, fetch_trusted_networks=STAND_IN, fetch_max_bytes=size - 1), CountingLimiter()
    )
    assert run(capped.read_archive(FIRST.url_path)) is None


def test_edgar_source_caps_the_mirror_too(corpus) -> None:
    mirror = edgar_source(Settings(corpus_dir=corpus, fetch_max_bytes=100), CountingLimiter())
    assert isinstance(mirror, MirrorSource) and run(mirror.read_archive(FIRST.url_path)) is None


def test_page_fetcher_setting_wiring(sec) -> None:
    limiter = CountingLimiter()
    fetch = page_fetcher(live_settings(sec, fetch_trusted_networks=STAND_IN), limiter)
    page = run(fetch(f"{sec.url}/{FIRST.url_path}"))
    assert b"Total net revenues" in page.body and page.media_type == "text/html" and limiter.slots == 1
    with pytest.raises(DocumentUnavailable, match="Refused to fetch .*127.0.0.1 is a loopback address"):
        run(page_fetcher(live_settings(sec), limiter)(f"{sec.url}/{FIRST.url_path}"))


def test_concurrent_live_requests_are_capped_per_host() -> None:
    class Fetcher:  # records how many requests each host has in flight at once
        def __init__(self) -> None:
            self.in_flight: dict[str, int] = {}
            self.peak: dict[str, int] = {}

        async def fetch(self, url: str) -> FetchedPage:
            host = url.split("/")[2]
            self.in_flight[host] = self.in_flight.get(host, 0) + 1
            self.peak[host] = max(self.peak.get(host, 0), self.in_flight[host])
            await asyncio.sleep(0.01)
            self.in_flight[host] -= 1
            return FetchedPage(url, 200, "application/json", b"{}")

    fetcher = Fetcher()
    source = LiveSource(
        fetcher=fetcher,
        www_base_url="https://www.sec.gov",
        data_base_url="https://data.sec.gov",
        limiter=CountingLimiter(),
        max_connections_per_host=2,
    )

    async def burst():
        await asyncio.gather(
            *(source.read_archive(FIRST.url_path) for _ in range(6)),
            *(source.read_json(f"submissions/CIK{FIRST.issuer.cik:010d}.json") for _ in range(6)),
        )

    run(burst())
    assert fetcher.peak == {"www.sec.gov": 2, "data.sec.gov": 2}
