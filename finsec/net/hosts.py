"""Host names and addresses as the fetch guard judges them: normal form, DNS name rules, IP spellings, allowlists;
and the URL limits every part of the project applies.

Everything here is pure and checked before any resolution: `getaddrinfo` IDNA-encodes a name first and raises
UnicodeError on a label over 63 characters, and the C resolver accepts legacy IPv4 spellings (`2130706433`,
`0177.0.0.1`, `0x7f.1`, `127.1`) that `ipaddress` does not, so those must be caught here, not after DNS.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

from finsec.tool_error import shown

__all__ = [
    "DEFAULT_PORTS",
    "host_matches",
    "host_name_problem",
    "in_networks",
    "IPAddress",
    "IPNetwork",
    "legacy_ipv4",
    "MAX_HOST_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_URL_CHARS",
    "normalize_host",
    "parse_ip",
    "parse_networks",
]

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

MAX_URL_CHARS = 2048  # what browsers and CDNs reliably carry; longer is an attack or a mistake
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_HOST_CHARS = 253  # RFC 1035, without the trailing dot
MAX_LABEL_CHARS = 63
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\Z")  # LDH; IDNA names arrive as xn-- A-labels
_NUMERIC_LABEL = re.compile(r"(?:[0-9]+|0x[0-9a-f]*)\Z")  # the WHATWG test for "ends in a number"


def parse_ip(text: str) -> IPAddress | None:
    """A canonical IP literal (dotted quad or IPv6), else None."""
    try:
        return ip_address(text)
    except ValueError:
        return None


def normalize_host(host: str) -> str:
    """Lower case, no trailing dot, IP literals in their canonical text (brackets dropped)."""
    host = host.strip().lower().rstrip(".")
    ip = parse_ip(host.strip("[]"))
    return str(ip) if ip is not None else host


def legacy_ipv4(host: str) -> IPv4Address | None:
    """The address a numeric host like `2130706433`, `0177.0.0.1`, `0x7f.1` or `127.1` stands for (the WHATWG
    IPv4 parser, which is also what inet_aton accepts), or None when `host` is not such a spelling."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        if part.startswith("0x"):
            digits, base = part[2:] or "0", 16
        elif len(part) > 1 and part.startswith("0"):
            digits, base = part[1:], 8
        else:
            digits, base = part, 10
        try:
            numbers.append(int(digits, base))
        except ValueError:
            return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = last
    for position, n in enumerate(head):
        value += n << (8 * (3 - position))
    return IPv4Address(value)


def host_name_problem(host: str) -> str | None:
    """Why the normalized `host` is not a usable DNS name (or canonical IP), in words the agent can act on."""
    if parse_ip(host) is not None:
        return None
    if not host:
        return "the URL has no host."
    if len(host) > MAX_HOST_CHARS:
        return f"the host name is {len(host)} characters long; DNS allows at most {MAX_HOST_CHARS}."
    labels = host.split(".")
    if _NUMERIC_LABEL.match(labels[-1]):  # a name ending in a number is an IP address in URL syntax
        legacy = legacy_ipv4(host)
        if legacy is None:
            return f"host {host!r} is neither a host name nor an IP address."
        return f"host {host!r} is a non-standard spelling of the IP address {legacy}; write addresses as a.b.c.d."
    for label in labels:
        if not label:
            return f"host {host!r} has an empty label (two dots in a row)."
        if len(label) > MAX_LABEL_CHARS:
            return (
                f"host {shown(host, 80)!r} has a label of {len(label)} characters; DNS allows at most "
                f"{MAX_LABEL_CHARS}."
            )
        if not _LABEL.match(label):
            return (
                f"host {shown(host, 80)!r} is not a valid host name: labels use letters, digits and inner hyphens only."
            )
    return None


def host_matches(host: str, patterns: Collection[str]) -> bool:
    """`host` is listed, or a `*.domain` entry covers it. `*.sec.gov` covers www.sec.gov and a.b.sec.gov but not
    sec.gov itself (list that separately); wildcards never match an IP literal. `patterns` are normalized."""
    if host in patterns:
        return True
    if parse_ip(host) is not None:
        return False
    parts = host.split(".")
    return any("*." + ".".join(parts[i:]) in patterns for i in range(1, len(parts)))


def parse_networks(networks: Collection[str]) -> tuple[IPNetwork, ...]:
    """CIDR networks ("127.0.0.1/32", "10.8.0.0/16"; a bare address means just that address)."""
    parsed = []
    for network in networks:
        try:
            parsed.append(ip_network(str(network).strip()))
        except ValueError as error:
            raise ValueError(f"trusted network {network!r} is not an IP network in CIDR form: {error}") from None
    return tuple(parsed)


def in_networks(ip: IPAddress, networks: Collection[IPNetwork]) -> bool:
    """`ip`, or the IPv4 address an IPv4-mapped IPv6 address routes to, lies in one of `networks`."""
    forms = [ip]
    if isinstance(ip, IPv6Address) and ip.ipv4_mapped:
        forms.append(ip.ipv4_mapped)
    return any(form in network for form in forms for network in networks if form.version == network.version)
