"""The one fetch policy: what counts as an SEC host, and the two guarded fetchers built from it.

- The SEC fetcher (used by the live EDGAR source) may reach SEC hosts only, and takes SEC's content types.
- The page fetcher (parse_html_page on a URL that is not a filing document, contract §A.8 step 4) may
  reach SEC hosts and the configured allowlist; every hop to an SEC host takes a rate-limit slot (§F.2).

An SEC host is `sec.gov`, any `*.sec.gov`, or the host of a configured SEC base URL (a private mirror or
a test server). Both fetchers send the User-Agent on every hop, never use environment proxies, check the
host and every resolved address on every hop, and cap the body (finsec/net/safe_fetch.py).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Protocol

import httpx

from finsec.net.hosts import DEFAULT_PORTS, host_matches, normalize_host
from finsec.net.safe_fetch import DEFAULT_CONTENT_TYPES, Resolver, SafeFetcher, default_resolve

__all__ = ["FetchPolicy", "mirror_ports", "RateLimiter", "SEC_CONTENT_TYPES", "SEC_DOMAINS", "sec_hosts"]

SEC_DOMAINS = ("sec.gov", "*.sec.gov")

# Safe because nothing we fetch is rendered or executed: bodies are only decoded as text and parsed (HTML
# to text, or json.loads) in a worker thread, under the byte cap. SEC serves its JSON as application/json,
# filings as HTML or XML, full-text filings as text/plain, and some archive files with no type at all
# (allowed: "" below). Binary types (PDF, images, octet-stream) are refused: their "text" is noise.
SEC_CONTENT_TYPES = frozenset({*DEFAULT_CONTENT_TYPES, "application/json", ""})


class RateLimiter(Protocol):
    async def acquire(self) -> None: ...


def sec_hosts(base_urls: Iterable[str]) -> frozenset[str]:
    """Allowlist entries for SEC: sec.gov, *.sec.gov and the hosts of `base_urls` (normalized)."""
    hosts = set(SEC_DOMAINS)
    for base in base_urls:
        try:
            host = httpx.URL(base).host
        except (httpx.InvalidURL, ValueError) as error:
            raise ValueError(f"SEC base URL {base!r} is not a valid URL: {error}") from None
        if not host:
            raise ValueError(f"SEC base URL {base!r} has no host")
        hosts.add(normalize_host(host))
    return frozenset(hosts)


def mirror_ports(base_urls: Iterable[str]) -> dict[str, frozenset[int]]:
    """host -> ports, for the configured SEC base URLs whose host is not sec.gov's own: a private mirror (or a
    test's server) is one service on its machine, and trusting its address must not open every other port of
    that machine to agent-named URLs. sec.gov's hosts are public, so any of their ports may be asked."""
    ports: dict[str, set[int]] = {}
    for base in base_urls:
        url = httpx.URL(base)
        host = normalize_host(url.host)
        if not host_matches(host, SEC_DOMAINS):
            ports.setdefault(host, set()).add(url.port or DEFAULT_PORTS.get(url.scheme, 0))
    return {host: frozenset(found) for host, found in ports.items()}


@dataclass(frozen=True)
class FetchPolicy:
    """Plain parameters in, guarded fetchers out. `trusted_networks` are CIDRs the address check lets
    through (a private EDGAR mirror, a test's loopback server); empty in production."""

    sec_base_urls: Collection[str]
    max_bytes: int
    timeout_seconds: float
    user_agent: str
    limiter: RateLimiter
    page_hosts: Collection[str] = ()  # beyond SEC's, for the page fetcher only
    trusted_networks: Collection[str] = ()
    resolve: Resolver = default_resolve

    @property
    def sec_hosts(self) -> frozenset[str]:
        return sec_hosts(self.sec_base_urls)

    def is_sec_host(self, host: str) -> bool:
        return host_matches(normalize_host(host), self.sec_hosts)

    def sec_fetcher(self) -> SafeFetcher:
        """For the live EDGAR source, which takes a rate-limit slot before each attempt itself (§F.2); a
        redirect hop is another request to SEC, so it takes its own slot here."""

        async def redirect_slot(host: str, hop: int) -> None:
            if hop > 0:
                await self.limiter.acquire()

        return self._fetcher(
            allowed_hosts=self.sec_hosts,
            content_types=SEC_CONTENT_TYPES,
            before_hop=redirect_slot,
            host_ports=mirror_ports(self.sec_base_urls),
        )

    def page_fetcher(self) -> SafeFetcher:
        """For parse_html_page's generic path: SEC hosts and `page_hosts`; SEC hops are rate-limited."""
        hosts = self.sec_hosts

        async def sec_slot(host: str, hop: int) -> None:
            if host_matches(host, hosts):
                await self.limiter.acquire()

        listed = {normalize_host(h) for h in self.page_hosts}  # a host allowlisted for pages keeps every port
        ports = {host: found for host, found in mirror_ports(self.sec_base_urls).items() if host not in listed}
        return self._fetcher(
            allowed_hosts=[*hosts, *self.page_hosts],
            content_types=DEFAULT_CONTENT_TYPES,
            before_hop=sec_slot,
            host_ports=ports,
        )

    def _fetcher(self, *, allowed_hosts, content_types, before_hop, host_ports) -> SafeFetcher:
        return SafeFetcher(
            allowed_hosts=allowed_hosts,
            max_bytes=self.max_bytes,
            timeout_seconds=self.timeout_seconds,
            user_agent=self.user_agent,
            allowed_content_types=content_types,
            trusted_networks=self.trusted_networks,
            before_hop=before_hop,
            resolve=self.resolve,
            host_ports=host_ports,
        )
