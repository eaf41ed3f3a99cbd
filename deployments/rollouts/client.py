"""The rollout's HTTP client: every request timed, bounded by a timeout, and recorded.

Cookies are handled explicitly rather than by a shared jar, because the two callers differ (contract §B.1): the
Environment Server sends the episode seed's cookies with every later request, while the legacy agent carries each
reply's cookies to its next request. A request that gets no reply at all (refused, reset, timed out) raises
`TransportFailure`; any reply, whatever its status, is returned."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import aiohttp


@dataclass
class Call:
    """One HTTP request of an episode, as the JSONL records it."""

    route: str
    status: int | None  # None: no reply
    ms: float
    error: str | None = None  # why there was no reply

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"route": self.route, "status": self.status, "ms": round(self.ms, 3)}
        if self.error:
            row["error"] = self.error
        return row


@dataclass
class Reply:
    status: int
    text: str
    cookies: dict[str, str]  # what Set-Cookie set

    def json(self) -> Any:
        return json.loads(self.text)

    def json_or_none(self) -> Any:
        try:
            return self.json()
        except ValueError:
            return None


class TransportFailure(Exception):
    """No reply from the server: the episode cannot go on."""

    def __init__(self, route: str, detail: str):
        super().__init__(f"{route}: {detail}")
        self.route = route
        self.detail = detail


@dataclass
class Cookies:
    """The cookies an episode sends. `follow` (the legacy agent) takes every reply's Set-Cookie; otherwise only
    what `take` is given (the Environment Server takes the seed reply's)."""

    follow: bool = False
    values: dict[str, str] = field(default_factory=dict)

    def take(self, reply: Reply) -> None:
        self.values.update(reply.cookies)

    def header(self) -> dict[str, str]:
        if not self.values:
            return {}
        return {"Cookie": "; ".join(f"{name}={value}" for name, value in self.values.items())}


# Called after each request with (call, request body, reply or None): --trace prints from it.
Observer = Callable[[Call, Any, "Reply | None"], None]


class ServerClient:
    """One per process (or Ray worker): a connection pool to the server, shared by concurrent episodes."""

    def __init__(self, base_url: str, *, timeout: float = 60.0, connections: int = 256,
                 observer: Observer | None = None):
        self.base_url = base_url.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None
        self.observer = observer

    async def __aenter__(self) -> "ServerClient":
        connector = aiohttp.TCPConnector(limit=self._connections, limit_per_host=self._connections)
        # DummyCookieJar: the session shares no cookies between episodes; Cookies decides what each sends.
        self._session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                              timeout=self.timeout)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._session is not None:
            await self._session.close()

    async def post(self, route: str, body: Any, cookies: Cookies | None, calls: list[Call]) -> Reply:
        return await self._request("POST", route, body, cookies, calls)

    async def get(self, route: str, calls: list[Call] | None = None) -> Reply:
        return await self._request("GET", route, None, None, calls if calls is not None else [])

    async def _request(self, method: str, route: str, body: Any, cookies: Cookies | None,
                       calls: list[Call]) -> Reply:
        assert self._session is not None, "use `async with ServerClient(...)`"
        headers = cookies.header() if cookies else {}
        started = time.perf_counter()
        try:
            async with self._session.request(method, f"{self.base_url}/{route.lstrip('/')}", json=body,
                                             headers=headers) as response:
                text = await response.text(errors="replace")
                reply = Reply(response.status, text, {k: m.value for k, m in response.cookies.items()})
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            call = Call(route, None, (time.perf_counter() - started) * 1000, describe(error))
            calls.append(call)
            self._observe(call, body, None)
            raise TransportFailure(route, call.error) from None
        call = Call(route, reply.status, (time.perf_counter() - started) * 1000)
        calls.append(call)
        if cookies is not None and cookies.follow:
            cookies.take(reply)
        self._observe(call, body, reply)
        return reply

    def _observe(self, call: Call, body: Any, reply: Reply | None) -> None:
        if self.observer is not None:
            self.observer(call, body, reply)


def describe(error: BaseException) -> str:
    if isinstance(error, asyncio.TimeoutError):
        return "timed out"
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:300]
