"""SSRF is refused in every form, through parse_html_page itself (contract §A.8 step 4, §F.2), in one process.

Live EDGAR points at a loopback SEC server on 127.0.0.1, trusted as a private mirror would be
(`fetch_trusted_networks=["127.0.0.1/32"]`). Two servers hold a secret and must never be reached: one on
127.0.0.2 (another host), and a neighbour on 127.0.0.1 itself but on another port (another service on the
mirror's host: trusting the mirror is not trusting every port of its machine). Names resolve through a fake
DNS, so "a name that resolves privately" is tested without the network.

Each attempt gets a tool error the agent can read (200), the secret servers' request logs stay empty, and
nothing is stored under the key.
"""

from __future__ import annotations

import socket
from ipaddress import ip_address
from pathlib import Path

import pytest

from finsec.corpus.generate import filings, write_corpus
from harness.bodies import episode_seed, new_session_id
from harness.inprocess import InProcess
from harness.sec_server import SecServer

FIRST = next(f for f in filings() if f.form == "10-K")
SECRET = "internal secret"
ANSWERS = ("Refused to fetch", "Failed to fetch", "Failed to download filing")
FAKE_DNS = {  # name -> the addresses it resolves to
    "internal.example": ["127.0.0.2"],
    "metadata.example": ["169.254.169.254"],
    "ten.example": ["10.0.0.5"],
    "mixed.example": ["93.184.216.34", "127.0.0.2"],
    "v6.example": ["::1"],
    "mapped.example": ["::ffff:127.0.0.2"],
    "localhost": ["127.0.0.1", "::1"],
}
ALLOWLISTED = [
    "internal.example",
    "metadata.example",
    "ten.example",
    "mixed.example",
    "v6.example",
    "mapped.example",
    "localhost",
    "127.0.0.2",
    "169.254.169.254",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("ssrf") / "mirror")


@pytest.fixture(scope="module")
def servers(corpus, tmp_path_factory):
    hidden = tmp_path_factory.mktemp("internal")
    (hidden / "secret.htm").write_text(f"<html><body>{SECRET}</body></html>")
    (hidden / "latest").mkdir()
    (hidden / "latest" / "meta-data").write_text(f"<html><body>{SECRET}: iam credentials</body></html>")
    with SecServer(corpus) as sec, SecServer(hidden, host="127.0.0.2") as secret, SecServer(hidden) as neighbour:
        yield sec, secret, neighbour


@pytest.fixture
def fake_dns(monkeypatch):
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if name in FAKE_DNS:
            return [
                (
                    socket.AF_INET6 if ip_address(a).version == 6 else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, port or 0),
                )
                for a in FAKE_DNS[name]
            ]
        try:
            ip_address(name)
        except (TypeError, ValueError):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def app(servers, fake_dns):
    sec, secret, neighbour = servers
    for server in servers:
        server.reset()
    with InProcess(
        edgar_source="live",
        sec_www_base_url=sec.url,
        sec_data_base_url=sec.url,
        fetch_trusted_networks=["127.0.0.1/32"],
        fetch_allowed_hosts=ALLOWLISTED,
        edgar_search_mode=None,
        retry_backoff_seconds=0.01,
        request_timeout=5.0,
        requests_per_second=10_000,
    ) as running:
        sid = new_session_id()
        running.post("/seed_session", json=episode_seed(sid))
        running.sid = sid
        yield running
    assert secret.seen == [], secret.seen  # never reached, whatever the test did
    assert neighbour.seen == [], neighbour.seen


def secret_targets(secret: SecServer, neighbour: SecServer) -> list[str]:
    """Every spelling of "the secret server" a URL or a Location can use."""
    p = secret.port
    return [
        f"{secret.url}/secret.htm",
        f"http://127.0.0.2:{p}/secret.htm",
        f"http://localhost:{neighbour.port}/secret.htm",
        f"http://2130706434:{p}/secret.htm",  # decimal 127.0.0.2
        f"http://0177.0.0.2:{p}/secret.htm",  # octal
        f"http://0x7f.0.0.2:{p}/secret.htm",  # hex
        f"http://0x7f000002:{p}/secret.htm",
        f"http://127.2:{p}/secret.htm",  # short form
        f"http://[::1]:{p}/secret.htm",
        f"http://[::ffff:127.0.0.2]:{p}/secret.htm",
        f"http://[::ffff:7f00:2]:{p}/secret.htm",
        f"http://[0:0:0:0:0:ffff:127.0.0.2]:{p}/secret.htm",
        f"http://0.0.0.0:{p}/secret.htm",
        f"http://127.0.0.2.:{p}/secret.htm",  # trailing dot
        f"http://internal.example:{p}/secret.htm",  # allowlisted, resolves privately
        f"http://mixed.example:{p}/secret.htm",  # one public and one private answer
        f"http://mapped.example:{p}/secret.htm",
        f"http://v6.example:{p}/secret.htm",
        f"http://unlisted.example:{p}/secret.htm",  # not allowlisted (and does not resolve)
        f"http://127.0.0.1:{neighbour.port}/secret.htm",  # the mirror's host, another port
        f"http://localhost:{neighbour.port}/latest/meta-data",
        "http://169.254.169.254/latest/meta-data",
        f"http://metadata.example:{p}/latest/meta-data",
        "http://[fe80::1]/",
        "http://10.0.0.1/",
        "http://ten.example/",
        "http://192.168.1.1/",
        "http://172.16.0.1/",
        "http://100.64.0.1/",
        "http://[fc00::1]/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        f"http://127.0.0.2:{p}@{secret.url[7:]}/secret.htm",  # credentials in front
        f"http://{secret.url[7:]}#@www.sec.gov/secret.htm",
        f"gopher://127.0.0.2:{p}/secret.htm",
    ]


def assert_refused(app, response, what: str) -> None:
    assert response.status_code == 200, (what, response.text[:300])
    reply = response.json()["results"]
    assert reply.startswith(ANSWERS), (what, reply[:300])
    assert SECRET not in reply, what
    assert app.describe(app.sid)["documents"] == [], what


def test_parse_html_page_refuses_private_loopback_and_link_local_targets(app, servers):
    """§A.8 step 4: the page fetcher reaches SEC hosts and the allowlist only, and never a private address,
    whatever spelling or DNS answer names it. Mutation: checking the allowlist but not the resolved address
    (or trusting the mirror's whole host, any port) fails this."""
    sec, secret, neighbour = servers
    for url in secret_targets(secret, neighbour):
        assert_refused(app, app.post("/parse_html_page", json={"url": url, "key": "k"}), url)
    missing = app.post("/retrieve_information", json={"prompt": "{{k}}"}).json()["results"]
    assert "not found" in missing


def test_a_redirect_from_sec_never_reaches_the_secret_for_a_filing(app, servers):
    """§F.2: every redirect hop of a live EDGAR read is checked again. Mutation: following redirects in the
    HTTP client (follow_redirects=True) fails this."""
    sec, secret, neighbour = servers
    url = f"https://www.sec.gov/{FIRST.url_path}"
    for location in secret_targets(secret, neighbour) + [f"//127.0.0.2:{secret.port}/secret.htm"]:
        sec.reset()
        sec.redirect(FIRST.url_path, location)
        assert_refused(app, app.post("/parse_html_page", json={"url": url, "key": "k"}), location)
        assert len(sec.requests_for(FIRST.url_path)) == 1, location  # a refusal is final, not retried
    sec.reset()
    assert app.post("/parse_html_page", json={"url": url, "key": "k"}).json()["results"].startswith("SUCCESS")


def test_a_redirect_from_sec_never_reaches_the_secret_for_a_page(app, servers):
    """The generic page fetch (a URL on an SEC host that is not a filing document) checks every hop too."""
    sec, secret, neighbour = servers
    for location in secret_targets(secret, neighbour):
        sec.reset()
        sec.redirect("moved.htm", location)
        assert_refused(app, app.post("/parse_html_page", json={"url": f"{sec.url}/moved.htm", "key": "k"}), location)


def test_the_trusted_mirror_is_still_fetched(app, servers):
    """The positive control: a page on the SEC stand-in itself (trusted host and port) is fetched and stored,
    so every refusal above is the target's, not a fetcher that refuses everything."""
    sec, _, _ = servers
    reply = app.post("/parse_html_page", json={"url": f"{sec.url}/{FIRST.url_path}", "key": "k"}).json()
    assert reply["results"].startswith("SUCCESS")
