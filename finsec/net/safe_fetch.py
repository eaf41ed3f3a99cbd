"""Fetch agent-named URLs without giving the agent a proxy into our network (SSRF guard).

Every hop (the first URL and each redirect) must: be http(s) with no userinfo, name a valid and
allowlisted host, and resolve only to addresses the policy permits (or that the operator trusts). We
then connect to an address we checked, never re-resolving the name, and stream the body under a size
cap. Every failure is a FetchRefused or FetchFailed with a message the agent can read: nothing else
escapes `fetch` (contract §A.0: bad input is a tool error, never a 500). Transport only: no HTML parsing.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_network

import httpx

from finsec.net.hosts import (
    DEFAULT_PORTS,
    MAX_URL_CHARS,
    IPAddress,
    host_matches,
    host_name_problem,
    in_networks,
    normalize_host,
    parse_ip,
    parse_networks,
)
from finsec.text.plain_text import decode
from finsec.tool_error import shown

__all__ = [
    "address_kind",
    "BeforeHop",
    "DEFAULT_CONTENT_TYPES",
    "default_is_forbidden",
    "default_resolve",
    "FetchedPage",
    "FetchError",
    "FetchFailed",
    "FetchRefused",
    "Resolver",
    "retry_after",
    "SafeFetcher",
]

log = logging.getLogger(__name__)

Resolver = Callable[[str], Awaitable[list[str]]]
BeforeHop = Callable[[str, int], Awaitable[None]]  # (host, hop number: 0 is the first URL)

DEFAULT_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain", "application/xml", "text/xml"})
_HINT = "parse_html_page only fetches SEC filings and allowlisted hosts."
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_SHOWN_URL_CHARS = 200  # messages quote at most this much of a URL
_CGNAT = ip_network("100.64.0.0/10")  # not in ipaddress.is_private on 3.11
# IPv6 is routable on the internet only within global unicast, and Python 3.11's is_global counts site-local
# (fec0::/10), NAT64 (64:ff9b::/96, which reaches IPv4 hosts) and unassigned space as global: so an allowlist.
_IPV6_GLOBAL_UNICAST = ip_network("2000::/3")
_IPV6_SPECIAL = (ip_network("2001::/23"), ip_network("2001:db8::/32"), ip_network("3fff::/20"))  # IANA: protocols, docs


class FetchError(Exception):
    def __init__(self, url: str, message: str):
        super().__init__(message)
        self.url = url


class FetchRefused(FetchError):
    """Our policy said no (scheme, host, address, size, type, redirects); retrying will not help."""


class FetchFailed(FetchError):
    """The network or the server said no (DNS, connect, timeout, non-2xx status)."""

    def __init__(self, url: str, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(url, message)
        self.status = status
        self.retry_after = retry_after  # the server's Retry-After, in seconds, when it sent one


@dataclass(frozen=True)
class FetchedPage:
    url: str  # final URL after redirects
    status: int
    content_type: str  # media type only, lower-cased, e.g. "text/html"
    body: bytes
    charset: str | None = None

    def text(self) -> str:
        return decode(self.body, self.charset)  # a declared charset can be wrong or unknown: fall back


def address_kind(ip: IPAddress) -> str | None:
    """Why the default policy refuses `ip` (e.g. "a loopback address"), or None if it is public."""
    if isinstance(ip, IPv6Address) and (inner := ip.ipv4_mapped or ip.sixtofour):
        return address_kind(inner)  # IPv6 forms that route to an IPv4 host (::ffff:a.b.c.d, 6to4)
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address (where cloud metadata services live)"
    if ip.is_multicast:
        return "a multicast address"
    if isinstance(ip, IPv4Address) and ip in _CGNAT:
        return "a carrier-grade NAT address"
    if ip.is_private:
        return "a private-network address"
    if isinstance(ip, IPv6Address) and (ip not in _IPV6_GLOBAL_UNICAST or any(ip in n for n in _IPV6_SPECIAL)):
        return "an IPv6 address outside global unicast (site-local, NAT64, documentation or unassigned)"
    if ip.is_reserved or not ip.is_global:
        return "a reserved address"
    return None


def default_is_forbidden(ip: IPAddress) -> bool:
    return address_kind(ip) is not None


async def default_resolve(host: str) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class SafeFetcher:
    def __init__(
        self,
        *,
        allowed_hosts: Collection[str],
        max_bytes: int,
        timeout_seconds: float,
        user_agent: str,
        allowed_content_types: Collection[str] = DEFAULT_CONTENT_TYPES,
        max_redirects: int = 5,
        trusted_networks: Collection[str] = (),
        before_hop: BeforeHop | None = None,
        resolve: Resolver = default_resolve,
        is_forbidden_address: Callable[[IPAddress], bool] = default_is_forbidden,
        host_ports: Mapping[str, Collection[int]] | None = None,
    ):
        """`trusted_networks`: CIDRs whose addresses may be contacted although the address policy forbids them
        (a private EDGAR mirror, a test's loopback server); the host allowlist still applies. `before_hop` is
        awaited before each connection (a rate-limit slot, say); the time it takes is not charged to the
        timeout. An empty string in `allowed_content_types` allows a response without a Content-Type.
        `host_ports`: hosts that may be contacted on these ports only (a private mirror's service, not its
        whole machine); other allowlisted hosts take any port."""
        self.allowed_hosts = frozenset(normalize_host(h) for h in allowed_hosts)
        self.max_bytes = max_bytes
        self.timeout_seconds = timeout_seconds
        self.user_agent = user_agent
        self.allowed_content_types = frozenset(t.lower() for t in allowed_content_types)
        self.max_redirects = max_redirects
        self.trusted_networks = parse_networks(trusted_networks)
        self._before_hop = before_hop
        self._resolve = resolve
        self._is_forbidden = is_forbidden_address
        self.host_ports = {normalize_host(h): frozenset(p) for h, p in (host_ports or {}).items()}

    async def fetch(self, url: str) -> FetchedPage:
        """The page at `url`; raises FetchRefused or FetchFailed, never anything else."""
        first = hop = _Hop(url, _quoted(url))
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.timeout_seconds) as deadline:  # DNS, every hop and the body
                for number in range(self.max_redirects + 1):
                    target, host = self._check_url(hop)
                    addresses = await self._vetted_addresses(hop, host)
                    if self._before_hop is not None:  # the deadline stops while we queue: that is not network time
                        when = deadline.when()
                        assert when is not None  # a float timeout, and every reschedule below sets one
                        remaining = when - loop.time()
                        deadline.reschedule(None)
                        await self._before_hop(host, number)
                        deadline.reschedule(loop.time() + remaining)
                    result = await self._get(hop, target, host, addresses)
                    if isinstance(result, FetchedPage):
                        return result
                    hop = _Hop(result, f"{_quoted(result)} (redirected from {_quoted(hop.url)})")
        except FetchError:
            raise
        except TimeoutError:
            raise hop.failed(f"no complete response within {self.timeout_seconds:g} seconds.") from None
        except Exception as error:  # a bug or a library corner we did not foresee: still the agent's tool error
            log.warning("unexpected error fetching %s", hop.label, exc_info=True)
            raise hop.failed(f"unexpected {type(error).__name__} ({_quoted(str(error))}).") from None
        raise first.refused(f"it redirected more than {self.max_redirects} times.")

    def _check_url(self, hop: _Hop) -> tuple[httpx.URL, str]:
        if len(hop.url) > MAX_URL_CHARS:
            raise hop.refused(f"the URL is {len(hop.url)} characters long; the limit is {MAX_URL_CHARS}.")
        try:
            target = httpx.URL(hop.url)
            raw_host = target.raw_host.decode("ascii")
            port = target.port
        except (httpx.InvalidURL, TypeError, ValueError) as error:  # UnicodeError (bad IDNA) is a ValueError
            raise hop.refused(f"not a valid URL ({_quoted(str(error))}).") from None
        if target.scheme not in ("http", "https"):
            raise hop.refused(f"scheme {target.scheme!r} is not allowed; only http and https URLs can be fetched.")
        if target.userinfo:
            raise hop.refused("URLs with credentials (user@host) are not allowed; drop the part before '@'.")
        if port is not None and not 1 <= port <= 65535:
            raise hop.refused(f"port {port} is out of range (1-65535).")
        host = normalize_host(raw_host)
        if problem := host_name_problem(host):  # before the resolver, which would raise on some of these
            raise hop.refused(problem)
        literal = parse_ip(host)
        if literal is not None:  # judge a literal IP before the allowlist: its address is the clearer reason
            self._check_address(hop, literal, f"{_show(literal)} is")
        if not host_matches(host, self.allowed_hosts):
            allowed = ", ".join(sorted(self.allowed_hosts))
            raise hop.refused(f"host {host!r} is not on the allowlist ({allowed}); {_HINT}")
        ports = self.host_ports.get(host)
        if ports is not None and (used := port or DEFAULT_PORTS[target.scheme]) not in ports:
            listed = ", ".join(str(p) for p in sorted(ports))
            raise hop.refused(f"{host} may only be contacted on port {listed}, not {used}; {_HINT}")
        return target, host

    def _check_address(self, hop: _Hop, ip: IPAddress, subject: str) -> None:
        if in_networks(ip, self.trusted_networks):
            return  # the operator vouched for it (a private mirror, a test server)
        if self._is_forbidden(ip):
            raise hop.refused(f"{subject} {address_kind(ip) or 'an address this server may not contact'}; {_HINT}")

    async def _vetted_addresses(self, hop: _Hop, host: str) -> list[IPAddress]:
        literal = parse_ip(host)
        if literal is not None:
            return [literal]  # checked in _check_url
        try:
            found = await self._resolve(host)
        except (OSError, ValueError):  # gaierror; UnicodeError from the codec should the name slip past us
            found = []
        if not found:
            raise hop.failed(f"could not resolve host {host!r}.")
        addresses = []
        for raw in found:
            ip = parse_ip(raw)
            if ip is None:
                raise hop.refused(f"{host} resolved to {raw!r}, which is not an IP address.")
            # ANY bad answer refuses: a name mixing public and internal addresses is an attack, not a mirror.
            self._check_address(hop, ip, f"{host} resolves to {_show(ip)},")
            addresses.append(ip)
        return addresses

    async def _get(self, hop: _Hop, target: httpx.URL, host: str, addresses: list[IPAddress]) -> FetchedPage | str:
        """One hop: the page, or the absolute URL a redirect points to."""
        # Pinning: connect to an address we just vetted (the URL's host becomes that IP) and send the real
        # name in Host. For https, httpcore's "sni_hostname" extension makes TLS send SNI for, and verify the
        # certificate against, the real name. So neither scheme resolves the name a second time and there
        # is no DNS-rebinding window between check and connect. A fresh client per hop (no pool) stops a
        # connection verified for one name serving another; trust_env=False stops env proxies taking over.
        headers = {"User-Agent": self.user_agent, "Host": target.netloc.decode("ascii")}
        extensions = {"sni_hostname": host} if target.scheme == "https" else {}
        last_error: Exception | None = None
        for ip in addresses:
            pinned = target.copy_with(host=str(ip))
            client = httpx.AsyncClient(timeout=self.timeout_seconds, verify=_tls_context(), trust_env=False)
            # follow_redirects=False: each Location goes back through every check above. Leaving the block
            # closes the response mid-body if need be; unread bytes are dropped with the connection.
            stream = client.stream("GET", pinned, headers=headers, extensions=extensions, follow_redirects=False)
            try:
                async with client, stream as response:
                    return await self._read(hop, target, response)
            except httpx.ConnectError as error:  # includes TLS certificate failures
                last_error = error  # try the next vetted address
            except httpx.TimeoutException:
                raise hop.failed(f"timed out after {self.timeout_seconds:g} seconds.") from None
            # httpx reads a redirect's Location itself, even with follow_redirects=False: one it cannot parse
            # (RemoteProtocolError), or whose host has bad IDNA (a UnicodeError, so a ValueError), is the
            # server's final answer. A refusal, so the live source does not retry what would answer the same.
            except httpx.RemoteProtocolError as error:
                if "location header" not in str(error).lower():
                    raise hop.failed(f"{type(error).__name__}: {_quoted(str(error))}.") from None
                raise hop.refused(f"it redirected to a URL that cannot be used ({_quoted(str(error))}).") from None
            except (httpx.HTTPError, httpx.InvalidURL) as error:  # InvalidURL is not an HTTPError
                raise hop.failed(f"{type(error).__name__}: {_quoted(str(error))}.") from None
            except ValueError as error:
                raise hop.refused(f"the server's response could not be used ({_quoted(str(error))}).") from None
        raise hop.failed(f"could not connect ({last_error}).")

    async def _read(self, hop: _Hop, target: httpx.URL, response: httpx.Response) -> FetchedPage | str:
        status = response.status_code
        if status in _REDIRECT_STATUSES:
            try:
                return str(target.join(response.headers["Location"]))
            except (KeyError, httpx.InvalidURL, ValueError):  # ValueError: bad IDNA in the Location's host
                raise hop.failed(f"HTTP {status} redirect without a valid Location header.", status) from None
        if not 200 <= status < 300:
            raise hop.failed(
                f"the server answered HTTP {status} {response.reason_phrase}.", status, retry_after(response.headers)
            )
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type not in self.allowed_content_types:
            allowed = ", ".join(sorted(t or "missing" for t in self.allowed_content_types))
            raise hop.refused(f"content type {content_type or 'missing'!r} is not a web page (allowed: {allowed}).")
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise hop.refused(f"the response is {declared} bytes, over the {self.max_bytes}-byte limit.")
        body = bytearray()
        async for chunk in response.aiter_bytes():  # decoded bytes: a gzip bomb hits the cap too
            body += chunk
            if len(body) > self.max_bytes:
                raise hop.refused(f"the response body exceeds the {self.max_bytes}-byte limit.")
        return FetchedPage(str(target), status, content_type, bytes(body), response.charset_encoding)


@dataclass(frozen=True)
class _Hop:
    url: str
    label: str  # the URL as messages name it (shortened), with the URL that redirected here

    def refused(self, why: str) -> FetchRefused:
        return FetchRefused(self.url, f"Refused to fetch {self.label}: {why}")

    def failed(self, why: str, status: int | None = None, retry_after: float | None = None) -> FetchFailed:
        return FetchFailed(self.url, f"Failed to fetch {self.label}: {why}", status, retry_after)


def retry_after(headers) -> float | None:
    """A response's Retry-After in seconds (the delay form; an HTTP date counts as no hint)."""
    try:
        return max(0.0, float(headers.get("Retry-After", "")))
    except ValueError:
        return None


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()  # shared: loading the CA bundle is slow, and would be paid per client


def _quoted(text: str) -> str:
    return shown(text, _SHOWN_URL_CHARS)


def _show(ip: IPAddress) -> str:
    if isinstance(ip, IPv6Address) and ip.ipv4_mapped:
        return f"::ffff:{ip.ipv4_mapped}"  # 3.11 prints ::ffff:127.0.0.1 as ::ffff:7f00:1
    return str(ip)
