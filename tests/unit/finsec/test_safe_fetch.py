"""SafeFetcher against a real loopback HTTP server.

127.0.0.1 plays the public internet: the injected policy forbids every address but 127.0.0.1, and the
injected resolver maps made-up names ("filings.example") onto it. Those names exist in no real DNS, so a
successful fetch also proves the fetcher connected to the address it vetted rather than re-resolving.
A transport spy refuses (and records) any connection to an address other than 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address, ip_address

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from finsec.net.safe_fetch import (
    MAX_URL_CHARS,
    FetchedPage,
    FetchError,
    FetchFailed,
    FetchRefused,
    SafeFetcher,
    default_is_forbidden,
    default_resolve,
)
from finsec_client.threaded_server import ThreadedServer

MAX_BYTES = 4096
STREAM_CHUNK = 64 * 1024
STREAM_CHUNKS = 1000  # 64 MiB if anyone read it all
UA = "finsec-serve-test/1.0 (ops@example.com)"
PAGE_TEXT = "<html><body><h1>Café 10-K</h1><p>Revenue rose 5 % — to €1.2bn.</p></body></html>"
HINT = "parse_html_page only fetches SEC filings and allowlisted hosts."


# --- the loopback server -------------------------------------------------------------------------


@dataclass
class Seen:
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    chunks_streamed: int = 0
    stream_hung_up: bool = False

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


def build_app(seen: Seen):  # noqa: C901 (one route per hostile case)
    def here(request: Request, path: str, host: str = "filings.example") -> str:
        return f"http://{host}:{request.url.port}{path}"

    def redirect_to(target):
        async def endpoint(request: Request) -> Response:
            return RedirectResponse(target(request) if callable(target) else target, status_code=302)

        return endpoint

    def raw_redirect(location: str):
        async def endpoint(request: Request) -> Response:
            return Response(b"", status_code=302, headers={"Location": location})  # sent as is, unquoted

        return endpoint

    def body(content: bytes, content_type: str, status: int = 200):
        async def endpoint(request: Request) -> Response:
            # Set Content-Type by hand: media_type= would append a charset to text/* types.
            return Response(content, status_code=status, headers={"Content-Type": content_type})

        return endpoint

    async def big_stream(request: Request) -> Response:
        async def chunks():
            for _ in range(STREAM_CHUNKS):
                # uvicorn silently drops writes after a hang-up, so watch for it rather than count sends.
                if await request.is_disconnected():
                    seen.stream_hung_up = True
                    return
                seen.chunks_streamed += 1
                yield b"x" * STREAM_CHUNK

        return StreamingResponse(chunks(), headers={"Content-Type": "text/html"})  # chunked, no length

    async def slow(request: Request) -> Response:
        for _ in range(30):  # 1.5 s, but stop early once the client gives up so shutdown stays quick
            if await request.is_disconnected():
                break
            await asyncio.sleep(0.05)
        return Response(b"late", headers={"Content-Type": "text/html"})

    routes = [
        Route("/page", body(PAGE_TEXT.encode(), "text/html; charset=utf-8")),
        Route("/cp1252", body("Café — 10-K".encode("cp1252"), "text/plain; charset=windows-1252")),
        Route("/latin1-undeclared", body("Café".encode("latin-1"), "text/html")),
        Route("/exact", body(b"y" * MAX_BYTES, "text/html")),
        Route("/big", body(b"z" * (MAX_BYTES + 1), "text/html")),
        Route("/big-stream", big_stream),
        Route("/binary", body(b"\x00\x01\x02", "application/octet-stream")),
        Route("/no-type", body(b"hello", "")),
        Route("/missing", body(b"<h1>Not Found</h1>", "text/html", status=404)),
        Route("/slow", slow),
        Route("/secret", body(b"internal secrets", "text/plain")),
        Route("/redirect", redirect_to("/page")),
        Route("/redirect-abs", redirect_to(lambda r: here(r, "/page"))),
        Route("/redirect-internal", redirect_to(lambda r: here(r, "/secret", "internal.example"))),
        Route("/redirect-mixed", redirect_to(lambda r: here(r, "/secret", "mixed.example"))),
        Route("/redirect-unlisted", redirect_to(lambda r: f"http://127.0.0.1:{r.url.port}/secret")),
        Route("/redirect-metadata", redirect_to("http://169.254.169.254/latest/meta-data/")),
        Route("/redirect-file", redirect_to("file:///etc/passwd")),
        Route("/loop", redirect_to("/loop")),
        # Locations httpx cannot parse or connect to: each must end as a FetchError, never escape as another type
        Route("/redirect-bad-port", raw_redirect("http://filings.example:99999/page")),
        Route("/redirect-bad-idna", raw_redirect("http://xn--zz.filings.example/page")),
        Route("/redirect-bad-ipv6", raw_redirect("http://[zz]/page")),
        Route("/redirect-long-label", raw_redirect(f"http://{'a' * 64}.filings.example/page")),
        Route("/redirect-legacy-ip", raw_redirect("http://2130706433/secret")),
        Route("/redirect-empty", raw_redirect("")),
    ]
    app = Starlette(routes=routes)

    async def recording_app(scope, receive, send) -> None:
        if scope["type"] == "http":
            seen.requests.append((scope["path"], {k.decode(): v.decode() for k, v in scope["headers"]}))
        await app(scope, receive, send)

    return recording_app


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[int, Seen]]:
    seen = Seen()
    with ThreadedServer(build_app(seen)) as server:
        yield server.port, seen


@pytest.fixture
def port(server: tuple[int, Seen]) -> int:
    return server[0]


@pytest.fixture
def seen(server: tuple[int, Seen]) -> Seen:
    server[1].requests.clear()
    server[1].chunks_streamed = 0
    server[1].stream_hung_up = False
    return server[1]


class Dialled(list[httpx.Request]):
    @property
    def hosts(self) -> list[str]:
        return [request.url.host for request in self]


@pytest.fixture(autouse=True)
def connections(monkeypatch: pytest.MonkeyPatch) -> Dialled:
    """Every request the fetcher tried to send. Anything not for 127.0.0.1 is recorded and never dialled."""
    contacted = Dialled()
    real = httpx.AsyncHTTPTransport.handle_async_request

    async def spy(self, request: httpx.Request) -> httpx.Response:
        contacted.append(request)
        if request.url.host != "127.0.0.1":
            raise httpx.ConnectError(f"test spy: refusing to dial {request.url.host}", request=request)
        return await real(self, request)

    monkeypatch.setattr(httpx.AsyncHTTPTransport, "handle_async_request", spy)
    return contacted


# --- fetcher set-up ------------------------------------------------------------------------------


class FakeDNS:
    TABLE = {
        "filings.example": ["127.0.0.1"],
        "www.filings.example": ["127.0.0.1"],
        "internal.example": ["10.0.0.5"],
        "mixed.example": ["127.0.0.1", "10.0.0.5"],  # one bad answer must be enough to refuse
    }

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, host: str) -> list[str]:
        self.asked.append(host)
        if host not in self.TABLE:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.TABLE[host]


def only_loopback_is_public(ip: IPv4Address | IPv6Address) -> bool:
    return ip != IPv4Address("127.0.0.1")


def make_fetcher(dns: FakeDNS | None = None, **overrides) -> SafeFetcher:
    options = dict(
        allowed_hosts=["filings.example", "*.filings.example", "internal.example", "mixed.example"],
        max_bytes=MAX_BYTES,
        timeout_seconds=3.0,
        user_agent=UA,
        max_redirects=3,
        resolve=dns or FakeDNS(),
        is_forbidden_address=only_loopback_is_public,
    )
    return SafeFetcher(**(options | overrides))


def fetch(fetcher: SafeFetcher, url: str) -> FetchedPage:
    return asyncio.run(fetcher.fetch(url))


def refused(fetcher: SafeFetcher, url: str) -> str:
    with pytest.raises(FetchRefused) as caught:
        fetch(fetcher, url)
    return str(caught.value)


# --- success paths -------------------------------------------------------------------------------


def test_fetches_page_pinned_with_ua_host_and_utf8_text(port: int, seen: Seen, connections: Dialled) -> None:
    dns = FakeDNS()
    page = fetch(make_fetcher(dns), f"http://filings.example:{port}/page")
    assert (page.status, page.content_type, page.url) == (200, "text/html", f"http://filings.example:{port}/page")
    assert page.body == PAGE_TEXT.encode() and page.text() == PAGE_TEXT
    assert dns.asked == ["filings.example"]
    assert connections.hosts == ["127.0.0.1"]  # dialled the vetted IP, not the name
    [(path, headers)] = seen.requests
    assert path == "/page"
    assert headers["user-agent"] == UA
    assert headers["host"] == f"filings.example:{port}"  # virtual host preserved while pinned


def test_https_is_pinned_too_with_sni_and_host_for_the_name(port: int, connections: Dialled) -> None:
    # The loopback server speaks plain HTTP, so the TLS handshake fails; what matters is what was dialled.
    with pytest.raises(FetchFailed, match=f"Failed to fetch https://filings.example:{port}/page: could not connect"):
        fetch(make_fetcher(), f"https://filings.example:{port}/page")
    [request] = connections
    assert (request.url.scheme, request.url.host, request.url.port) == ("https", "127.0.0.1", port)
    assert request.extensions["sni_hostname"] == "filings.example"  # TLS verifies the cert for the name
    assert request.headers["host"] == f"filings.example:{port}"


def test_host_match_is_case_insensitive_and_wildcard_covers_subdomains(port: int) -> None:
    assert fetch(make_fetcher(), f"http://FILINGS.Example:{port}/page").text() == PAGE_TEXT
    assert fetch(make_fetcher(), f"http://www.filings.example:{port}/page").text() == PAGE_TEXT


def test_relative_and_absolute_redirects_are_followed_with_ua_on_every_hop(port: int, seen: Seen) -> None:
    for start in ("/redirect", "/redirect-abs"):
        seen.requests.clear()
        page = fetch(make_fetcher(), f"http://filings.example:{port}{start}")
        assert page.url == f"http://filings.example:{port}/page" and page.text() == PAGE_TEXT
        assert seen.paths == [start, "/page"]
        assert all(headers["user-agent"] == UA for _, headers in seen.requests)


def test_body_of_exactly_max_bytes_is_accepted(port: int) -> None:
    assert fetch(make_fetcher(), f"http://filings.example:{port}/exact").body == b"y" * MAX_BYTES


def test_text_uses_declared_charset_then_utf8_then_latin1(port: int) -> None:
    assert fetch(make_fetcher(), f"http://filings.example:{port}/cp1252").text() == "Café — 10-K"
    assert fetch(make_fetcher(), f"http://filings.example:{port}/latin1-undeclared").text() == "Café"
    assert FetchedPage("u", 200, "text/html", "é".encode(), charset="no-such-codec").text() == "é"
    assert FetchedPage("u", 200, "text/html", "\ufeffé".encode()).text() == "é"  # BOM dropped


# --- address policy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1/x", "127.0.0.1 is a loopback address"),
        (
            "http://169.254.169.254/latest/",
            "169.254.169.254 is a link-local address (where cloud metadata services live)",
        ),
        ("http://[::ffff:127.0.0.1]:8080/", "::ffff:127.0.0.1 is a loopback address"),
        ("http://10.1.2.3/", "10.1.2.3 is a private-network address"),
        ("http://100.64.0.1/", "100.64.0.1 is a carrier-grade NAT address"),
        ("https://[::1]/", "::1 is a loopback address"),
    ],
)
def test_default_policy_refuses_internal_literals_before_connecting(url: str, why: str, connections: Dialled) -> None:
    # No injected hooks at all, and the internal address even sits on the allowlist.
    hosts = ["www.sec.gov", "127.0.0.1", "169.254.169.254", "::1", "10.1.2.3"]
    fetcher = SafeFetcher(allowed_hosts=hosts, max_bytes=MAX_BYTES, timeout_seconds=1.0, user_agent=UA)
    assert refused(fetcher, url) == f"Refused to fetch {url}: {why}; {HINT}"
    assert connections.hosts == []


def test_default_policy_refuses_a_name_that_resolves_to_loopback(port: int, seen: Seen) -> None:
    fetcher = make_fetcher(is_forbidden_address=default_is_forbidden)
    message = refused(fetcher, f"http://filings.example:{port}/page")
    assert "filings.example resolves to 127.0.0.1, a loopback address" in message
    assert seen.requests == []


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.5",
        "172.16.3.4",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fc00::1",
        "fd12::1",
        "fe80::1",
        "ff02::1",
        "::ffff:10.0.0.5",
        "::ffff:169.254.169.254",
        "2002:a00:5::1",
        "64:ff9b::a00:5",
        # IPv6 ranges Python's is_global calls global: site-local, NAT64 to a public IPv4 host, local-use NAT64,
        # documentation (RFC 9637), SRv6 SIDs, unassigned, IPv4-compatible
        "fec0::1",
        "feff::1",
        "64:ff9b::808:808",
        "64:ff9b:1::1",
        "3fff::1",
        "5f00::1",
        "4000::1",
        "::808:808",
    ],
)
def test_default_policy_forbids_internal_addresses(address: str) -> None:
    assert default_is_forbidden(ip_address(address))


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "162.159.1.1", "2606:4700::1111", "::ffff:8.8.8.8", "2a00:1450:4001::200e", "2620:4f:8000::1"],
)
def test_default_policy_allows_public_addresses(address: str) -> None:
    assert not default_is_forbidden(ip_address(address))


def test_name_resolving_to_private_address_is_refused(port: int, seen: Seen, connections: Dialled) -> None:
    message = refused(make_fetcher(), f"http://internal.example:{port}/secret")
    assert "internal.example resolves to 10.0.0.5, a private-network address" in message
    assert connections.hosts == [] and seen.requests == []


def test_any_forbidden_answer_refuses_even_with_a_public_one(port: int, seen: Seen) -> None:
    assert "mixed.example resolves to 10.0.0.5" in refused(make_fetcher(), f"http://mixed.example:{port}/secret")
    assert seen.requests == []  # the good-looking 127.0.0.1 answer was not used either


@pytest.mark.parametrize(
    ("start", "why"),
    [
        ("/redirect-internal", "internal.example resolves to 10.0.0.5, a private-network address"),
        ("/redirect-mixed", "mixed.example resolves to 10.0.0.5"),
        ("/redirect-metadata", "169.254.169.254 is a link-local address"),
        ("/redirect-unlisted", "host '127.0.0.1' is not on the allowlist"),
        ("/redirect-file", "scheme 'file' is not allowed"),
    ],
)
def test_redirect_hops_are_rechecked_and_bad_targets_never_contacted(
    start: str, why: str, port: int, seen: Seen, connections: Dialled
) -> None:
    message = refused(make_fetcher(), f"http://filings.example:{port}{start}")
    assert why in message
    assert f"(redirected from http://filings.example:{port}{start})" in message
    assert seen.paths == [start]  # /secret was never requested
    assert connections.hosts == ["127.0.0.1"]  # only the first hop was dialled


def test_redirect_limit(port: int, seen: Seen) -> None:
    message = refused(make_fetcher(max_redirects=2), f"http://filings.example:{port}/loop")
    assert message == f"Refused to fetch http://filings.example:{port}/loop: it redirected more than 2 times."
    assert seen.paths == ["/loop"] * 3


# --- URL policy ----------------------------------------------------------------------------------


def test_host_not_on_allowlist_is_refused_without_dns() -> None:
    dns = FakeDNS()
    fetcher = make_fetcher(dns, allowed_hosts=["*.sec.gov", "filings.example"])
    for url in ("http://evil.example/", "http://sec.gov/", "http://evilsec.gov/", "http://www.sec.gov.evil.example/x"):
        assert "is not on the allowlist (*.sec.gov, filings.example)" in refused(fetcher, url)
    assert dns.asked == []


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://filings.example/x", "gopher://filings.example/"])
def test_only_http_and_https(url: str) -> None:
    scheme = url.split(":")[0]
    assert f"scheme {scheme!r} is not allowed; only http and https" in refused(make_fetcher(), url)


@pytest.mark.parametrize("userinfo", ["user:pw@", "user@", ":pw@"])
def test_userinfo_is_refused(userinfo: str, port: int, seen: Seen) -> None:
    message = refused(make_fetcher(), f"http://{userinfo}filings.example:{port}/page")
    assert "credentials (user@host) are not allowed" in message
    assert seen.requests == []


def test_unresolvable_name_fails() -> None:
    with pytest.raises(FetchFailed, match="could not resolve host 'nowhere.filings.example'"):
        fetch(make_fetcher(), "http://nowhere.filings.example/")


# --- response policy -----------------------------------------------------------------------------


def test_oversize_body_with_content_length_is_refused(port: int) -> None:
    message = refused(make_fetcher(), f"http://filings.example:{port}/big")
    assert message.endswith(f"the response is {MAX_BYTES + 1} bytes, over the {MAX_BYTES}-byte limit.")


def test_oversize_streamed_body_is_cut_off(port: int, seen: Seen) -> None:
    started = time.monotonic()
    message = refused(make_fetcher(), f"http://filings.example:{port}/big-stream")
    assert message.endswith(f"the response body exceeds the {MAX_BYTES}-byte limit.")
    elapsed = time.monotonic() - started
    deadline = time.monotonic() + 2
    while not seen.stream_hung_up and time.monotonic() < deadline:
        time.sleep(0.01)  # the server notices the hang-up on its next chunk
    assert seen.stream_hung_up and seen.chunks_streamed < STREAM_CHUNKS  # we left long before the end
    assert elapsed < 2


@pytest.mark.parametrize(("path", "shown"), [("/binary", "'application/octet-stream'"), ("/no-type", "'missing'")])
def test_wrong_content_type_is_refused(path: str, shown: str, port: int) -> None:
    message = refused(make_fetcher(), f"http://filings.example:{port}{path}")
    assert f"content type {shown} is not a web page (allowed: application/xhtml+xml, " in message


def test_non_2xx_status_fails_with_status(port: int) -> None:
    with pytest.raises(FetchFailed) as caught:
        fetch(make_fetcher(), f"http://filings.example:{port}/missing")
    assert caught.value.status == 404
    url = f"http://filings.example:{port}/missing"
    assert str(caught.value) == f"Failed to fetch {url}: the server answered HTTP 404 Not Found."


def test_timeout_fails(port: int) -> None:
    started = time.monotonic()
    with pytest.raises(FetchFailed, match=r"(timed out|no complete response) .*0\.3 seconds"):
        fetch(make_fetcher(timeout_seconds=0.3), f"http://filings.example:{port}/slow")
    assert time.monotonic() - started < 1.2


# --- host names, checked before any resolution (a 64-character label made getaddrinfo raise UnicodeError) ---


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("a" * 64 + ".filings.example", "has a label of 64 characters; DNS allows at most 63"),
        (".".join(["abcdefghi"] * 25) + ".filings.example", "characters long; DNS allows at most 253"),
        ("a_b.filings.example", "is not a valid host name"),
        ("-a.filings.example", "is not a valid host name"),
        ("a-.filings.example", "is not a valid host name"),
        ("ex%41mple.filings.example", "is not a valid host name"),
        ("a..filings.example", "has an empty label"),
        ("1.2.3.4.5", "is neither a host name nor an IP address"),
    ],
)
def test_invalid_host_names_are_refused_before_dns(host: str, why: str, connections: Dialled) -> None:
    dns = FakeDNS()
    assert why in refused(make_fetcher(dns), f"http://{host}/page")
    assert dns.asked == [] and connections.hosts == []


def test_an_overlong_label_is_refused_with_the_real_resolver_too() -> None:
    fetcher = make_fetcher(resolve=default_resolve)  # getaddrinfo would raise UnicodeError on this name
    assert "label of 64 characters" in refused(fetcher, f"http://{'a' * 64}.filings.example/")


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0xa9.254.169.254", "169.254.169.254"),
        ("10.1", "10.0.0.1"),
    ],
)
def test_legacy_ipv4_spellings_are_refused_even_when_allowlisted(host: str, address: str, connections: Dialled) -> None:
    # The C resolver turns every one of these into `address`; ipaddress does not parse them.
    fetcher = SafeFetcher(allowed_hosts=[host], max_bytes=MAX_BYTES, timeout_seconds=1.0, user_agent=UA)
    message = refused(fetcher, f"http://{host}/")
    assert f"non-standard spelling of the IP address {address}" in message
    assert connections.hosts == []


@pytest.mark.parametrize(
    "url",
    [
        "http://0177.0.0.1/",
        "http://[::ffff:7f00:1]/",
        "http://[0:0:0:0:0:ffff:127.0.0.1]/",
        "http://[::7f00:1]/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://[::]/",
        "http://0.0.0.0/",
        "http://[2002:7f00:1::]/",
    ],
)
def test_other_internal_address_forms_are_refused(url: str, connections: Dialled) -> None:
    hosts = ["0177.0.0.1", "::ffff:7f00:1", "::7f00:1", "fe80::1", "fd00::1", "::", "0.0.0.0", "2002:7f00:1::"]
    fetcher = SafeFetcher(allowed_hosts=hosts, max_bytes=MAX_BYTES, timeout_seconds=1.0, user_agent=UA)
    refused(fetcher, url)
    assert connections.hosts == []


HOSTILE_URLS = [
    "",
    "http://",
    "http:///page",
    "http://:80/",
    "http://[::1/",
    "http://filings.example:99999/",
    "http://filings.example:0/",
    "http://filings.example:abc/",
    "http://fil\x00ings.example/",
    "http://a b.example/",
    "http://xn--zz.filings.example/",
    "http://bücher.filings.example/",
    "\\\\filings.example\\x",
    "http://filings.example/" + "x" * 500_000,
    "//filings.example/page",
    "javascript:alert(1)",
]


@pytest.mark.parametrize("url", HOSTILE_URLS, ids=range(len(HOSTILE_URLS)))
def test_hostile_urls_only_ever_raise_fetch_errors(url: str) -> None:
    with pytest.raises(FetchError) as caught:
        fetch(make_fetcher(), url)
    assert len(str(caught.value)) < 1000  # a 500 KB URL is not echoed back


def test_overlong_url_is_refused_with_its_length() -> None:
    url = "http://filings.example/" + "x" * MAX_URL_CHARS
    message = refused(make_fetcher(), url)
    assert f"the URL is {len(url)} characters long; the limit is {MAX_URL_CHARS}." in message


@pytest.mark.parametrize(
    ("start", "error", "why"),
    [
        ("/redirect-bad-port", FetchRefused, "port 99999 is out of range"),
        ("/redirect-bad-idna", FetchRefused, "response could not be used (Invalid A-label)"),
        ("/redirect-bad-ipv6", FetchRefused, "Invalid URL in location header: Invalid IPv6 address"),
        ("/redirect-long-label", FetchRefused, "label of 64 characters"),
        ("/redirect-legacy-ip", FetchRefused, "non-standard spelling of the IP address 127.0.0.1"),
        ("/redirect-empty", FetchRefused, "redirected more than 3 times"),  # an empty Location is this URL again
    ],
)
def test_unusable_locations_are_fetch_errors(start: str, error: type, why: str, port: int, seen: Seen) -> None:
    with pytest.raises(error) as caught:
        fetch(make_fetcher(), f"http://filings.example:{port}{start}")
    assert why in str(caught.value)
    assert "/secret" not in seen.paths and "/page" not in seen.paths


# --- trusted networks: loopback servers standing in for public hosts, production policy otherwise intact ---


def trusting(*networks: str, **overrides) -> SafeFetcher:
    return make_fetcher(is_forbidden_address=default_is_forbidden, trusted_networks=networks, **overrides)


def test_a_trusted_network_lets_an_allowlisted_host_reach_it(port: int) -> None:
    assert fetch(trusting("127.0.0.1/32"), f"http://filings.example:{port}/page").text() == PAGE_TEXT
    assert fetch(trusting("127.0.0.1"), f"http://filings.example:{port}/page").text() == PAGE_TEXT
    assert "a loopback address" in refused(trusting(), f"http://filings.example:{port}/page")


def test_trust_is_exactly_the_networks_named(connections: Dialled) -> None:
    fetcher = trusting("127.0.0.1/32", allowed_hosts=["127.0.0.2", "::1"])
    assert "127.0.0.2 is a loopback address" in refused(fetcher, "http://127.0.0.2/secret")
    assert "::1 is a loopback address" in refused(fetcher, "http://[::1]/secret")
    assert connections.hosts == []


def test_trust_does_not_bypass_the_host_allowlist(port: int, seen: Seen) -> None:
    message = refused(trusting("127.0.0.0/8"), f"http://127.0.0.1:{port}/secret")
    assert "host '127.0.0.1' is not on the allowlist" in message and seen.requests == []


def test_trusted_network_must_be_a_network() -> None:
    with pytest.raises(ValueError, match="trusted network 'localhost' is not an IP network"):
        trusting("localhost")
    with pytest.raises(ValueError, match="'127.0.0.1/8'"):
        trusting("127.0.0.1/8")  # host bits set: say 127.0.0.0/8 or 127.0.0.1/32


# --- per-hop hook and content types ---


def test_before_hop_runs_for_every_hop_that_passed_the_checks(port: int) -> None:
    calls: list[tuple[str, int]] = []

    async def before_hop(host: str, number: int) -> None:
        calls.append((host, number))

    fetch(make_fetcher(before_hop=before_hop), f"http://filings.example:{port}/redirect")
    assert calls == [("filings.example", 0), ("filings.example", 1)]
    calls.clear()
    refused(make_fetcher(before_hop=before_hop), f"http://filings.example:{port}/redirect-internal")
    assert calls == [("filings.example", 0)]  # the internal hop was refused before its hook


def test_time_in_before_hop_is_not_charged_to_the_timeout(port: int) -> None:
    async def queued(host: str, number: int) -> None:
        await asyncio.sleep(1.2)  # e.g. waiting for a rate-limit slot

    page = fetch(make_fetcher(before_hop=queued, timeout_seconds=1.0), f"http://filings.example:{port}/page")
    assert page.text() == PAGE_TEXT


def test_an_empty_content_type_entry_allows_a_missing_type(port: int) -> None:
    fetcher = make_fetcher(allowed_content_types={"text/html", ""})
    assert fetch(fetcher, f"http://filings.example:{port}/no-type").body == b"hello"
    assert "(allowed: missing, text/html)" in refused(fetcher, f"http://filings.example:{port}/binary")


def test_an_unforeseen_exception_becomes_a_fetch_failure() -> None:
    async def broken_resolver(host: str) -> list[str]:
        raise RuntimeError("resolver bug")

    with pytest.raises(
        FetchFailed, match=r"Failed to fetch http://filings.example/: unexpected RuntimeError \(resolver bug\)"
    ):
        fetch(make_fetcher(resolve=broken_resolver), "http://filings.example/")
