"""Host-name rules of the fetch guard (finsec/net/hosts.py), pure."""

from __future__ import annotations

from ipaddress import IPv4Address, ip_address, ip_network

import pytest

from finsec.net.hosts import host_matches, host_name_problem, in_networks, legacy_ipv4, normalize_host


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0x7F000001".lower(), "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("1.2.3.4", "1.2.3.4"),
        ("4294967295", "255.255.255.255"),
    ],
)
def test_legacy_ipv4_reads_every_inet_aton_spelling(host: str, address: str) -> None:
    assert legacy_ipv4(host) == IPv4Address(address)


@pytest.mark.parametrize("host", ["4294967296", "256.1.1.1", "1.2.3.4.5", "08.1.1.1", "0xg.1", "a.1", "", "1..1"])
def test_legacy_ipv4_rejects_what_is_not_an_address(host: str) -> None:
    assert legacy_ipv4(host) is None


@pytest.mark.parametrize(
    "host",
    [
        "www.sec.gov",
        "xn--bcher-kva.de",
        "a-b.c",
        "a" * 63 + ".com",
        "8.8.8.8",
        "::1",
        "sec.gov",
        "localhost",
        "3com.com",
    ],
)
def test_valid_names_and_canonical_addresses_pass(host: str) -> None:
    assert host_name_problem(host) is None


@pytest.mark.parametrize(
    "host",
    [
        "",
        "a" * 64,
        "a_b.com",
        "-a.com",
        "a-.com",
        "a..com",
        "a b.com",
        "a%41.com",
        "x.123",
        "127.1",
        "0x7f.0.0.1",
        "é.com",
        ".".join(["a"] * 128),
    ],
)
def test_invalid_names_have_a_reason(host: str) -> None:
    assert host_name_problem(host)


def test_host_patterns() -> None:
    patterns = {"sec.gov", "*.sec.gov", "10.0.0.1"}
    assert host_matches("www.sec.gov", patterns) and host_matches("a.b.sec.gov", patterns)
    assert host_matches("sec.gov", patterns) and host_matches("10.0.0.1", patterns)
    assert not host_matches("evilsec.gov", patterns) and not host_matches("sec.gov.evil.com", patterns)


def test_normalize_host() -> None:
    assert normalize_host("WWW.SEC.GOV.") == "www.sec.gov"
    assert normalize_host("[::FFFF:7F00:1]") == "::ffff:7f00:1"


def test_in_networks_sees_through_ipv4_mapped_addresses() -> None:
    nets = [ip_network("127.0.0.1/32")]
    assert in_networks(ip_address("127.0.0.1"), nets) and in_networks(ip_address("::ffff:127.0.0.1"), nets)
    assert not in_networks(ip_address("127.0.0.2"), nets) and not in_networks(ip_address("::1"), nets)
