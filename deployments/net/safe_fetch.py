"""Fetch agent-named URLs without giving the agent a proxy into our network (SSRF guard).

Every hop (the first URL and each redirect) must: be http(s) with no userinfo, name an allowlisted
host, and resolve only to addresses the policy permits. We then connect to an address we checked,
never re-resolving the name, and stream the body under a size cap. Transport only: no HTML parsing.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

import httpx

IPAddress = IPv4Address | IPv6Address
Resolver = Callable[[str], Awaitable[list[str]]]

DEFAULT_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain", "application/xml", "text/xml"})
_HINT = "parse_html_page only fetches SEC filings and allowlisted hosts."
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CGNAT = ip_network("100.64.0.0/10")  # not in ipaddress.is_private on 3.11


class FetchError(Exception):
    def __init__(self, url: str, message: str):
        super().__init__(message)
        self.url = url


class FetchRefused(FetchError):
    """Our policy said no (scheme, host, address, size, type, redirects); retrying will not help."""


class FetchFailed(FetchError):
    """The network or the server said no (DNS, connect, timeout, non-2xx status)."""

    def __init__(self, url: str, message: str, status: int | None = None):
        super().__init__(url, message)
        self.status = status


@dataclass(frozen=True)
class FetchedPage:
    url: str  # final URL after redirects
    status: int
    content_type: str  # media type only, lower-cased, e.g. "text/html"
    body: bytes
    charset: str | None = None

    def text(self) -> str:
        # A declared charset can be wrong or unknown; fall back rather than fail. Latin-1 never fails.
        for encoding in (self.charset, "utf-8-sig"):
            if encoding:
                try:
                    return self.body.decode(encoding)
                except (LookupError, UnicodeDecodeError):
                    pass
        return self.body.decode("latin-1")


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
        resolve: Resolver = default_resolve,
        is_forbidden_address: Callable[[IPAddress], bool] = default_is_forbidden,
    ):
        self.allowed_hosts = frozenset(_normalize_host(h) for h in allowed_hosts)
        self.max_bytes = max_bytes
        self.timeout_seconds = timeout_seconds
        self.user_agent = user_agent
        self.allowed_content_types = frozenset(t.lower() for t in allowed_content_types)
        self.max_redirects = max_redirects
        self._resolve = resolve
        self._is_forbidden = is_forbidden_address

    async def fetch(self, url: str) -> FetchedPage:
        hop = _Hop(url, url)
        try:
            async with asyncio.timeout(self.timeout_seconds):  # one deadline for DNS, every hop and the body
                for _ in range(self.max_redirects + 1):
                    target, host = self._check_url(hop)
                    result = await self._get(hop, target, host, await self._vetted_addresses(hop, host))
                    if isinstance(result, FetchedPage):
                        return result
                    hop = _Hop(result, f"{result} (redirected from {hop.url})")
        except TimeoutError:
            raise hop.failed(f"no complete response within {self.timeout_seconds:g} seconds.") from None
        raise _Hop(url, url).refused(f"it redirected more than {self.max_redirects} times.")

    def _check_url(self, hop: _Hop) -> tuple[httpx.URL, str]:
        try:
            target = httpx.URL(hop.url)
        except (httpx.InvalidURL, TypeError) as error:
            raise hop.refused(f"not a valid URL ({error}).") from None
        if target.scheme not in ("http", "https"):
            raise hop.refused(f"scheme {target.scheme!r} is not allowed; only http and https URLs can be fetched.")
        if target.userinfo:
            raise hop.refused("URLs with credentials (user@host) are not allowed; drop the part before '@'.")
        host = _normalize_host(target.raw_host.decode("ascii"))
        if not host:
            raise hop.refused("the URL has no host.")
        literal = _parse_ip(host)
        if literal is not None:  # judge a literal IP before the allowlist: its address is the clearer reason
            self._check_address(hop, literal, f"{_show(literal)} is")
        if not self._host_allowed(host):
            allowed = ", ".join(sorted(self.allowed_hosts))
            raise hop.refused(f"host {host!r} is not on the allowlist ({allowed}); {_HINT}")
        return target, host

    def _host_allowed(self, host: str) -> bool:
        if host in self.allowed_hosts:
            return True
        # "*.sec.gov" covers www.sec.gov and a.b.sec.gov, not sec.gov itself (list that separately).
        parts = host.split(".")
        wildcards = ("*." + ".".join(parts[i:]) for i in range(1, len(parts)))
        return _parse_ip(host) is None and any(w in self.allowed_hosts for w in wildcards)

    def _check_address(self, hop: _Hop, ip: IPAddress, subject: str) -> None:
        if self._is_forbidden(ip):
            raise hop.refused(f"{subject} {address_kind(ip) or 'an address this server may not contact'}; {_HINT}")

    async def _vetted_addresses(self, hop: _Hop, host: str) -> list[IPAddress]:
        literal = _parse_ip(host)
        if literal is not None:
            return [literal]  # checked in _check_url
        try:
            found = await self._resolve(host)
        except OSError:
            found = []
        if not found:
            raise hop.failed(f"could not resolve host {host!r}.")
        addresses = []
        for raw in found:
            ip = _parse_ip(raw)
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
            except httpx.HTTPError as error:
                raise hop.failed(f"{type(error).__name__}: {error}.") from None
        raise hop.failed(f"could not connect ({last_error}).")

    async def _read(self, hop: _Hop, target: httpx.URL, response: httpx.Response) -> FetchedPage | str:
        status = response.status_code
        if status in _REDIRECT_STATUSES:
            try:
                return str(target.join(response.headers["Location"]))
            except (KeyError, httpx.InvalidURL):
                raise hop.failed(f"HTTP {status} redirect without a valid Location header.", status) from None
        if not 200 <= status < 300:
            raise hop.failed(f"the server answered HTTP {status} {response.reason_phrase}.", status)
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type not in self.allowed_content_types:
            allowed = ", ".join(sorted(self.allowed_content_types))
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
    label: str  # the URL as messages name it, with the redirect that led here

    def refused(self, why: str) -> FetchRefused:
        return FetchRefused(self.url, f"Refused to fetch {self.label}: {why}")

    def failed(self, why: str, status: int | None = None) -> FetchFailed:
        return FetchFailed(self.url, f"Failed to fetch {self.label}: {why}", status)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()  # shared: loading the CA bundle costs ~0.1 s per client


def _normalize_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    ip = _parse_ip(host.strip("[]"))
    return str(ip) if ip is not None else host


def _show(ip: IPAddress) -> str:
    if isinstance(ip, IPv6Address) and ip.ipv4_mapped:
        return f"::ffff:{ip.ipv4_mapped}"  # 3.11 prints ::ffff:127.0.0.1 as ::ffff:7f00:1
    return str(ip)


def _parse_ip(text: str) -> IPAddress | None:
    try:
        return ip_address(text)
    except ValueError:
        return None
