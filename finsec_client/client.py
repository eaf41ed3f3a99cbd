"""The rollout's HTTP client: every request timed, bounded by a timeout, and recorded.

Cookies are handled explicitly rather than by a shared jar, because the two callers differ (contract §B.1): the
Environment Server sends the episode seed's cookies with every later request, while the legacy agent carries each
reply's cookies to its next request.

Every route of the contract is safe to repeat (a retried seed, a repeated close, a re-sent verify, stateless or
overwriting tools), so a 5xx or a dropped connection is retried (`Retries`: jittered exponential backoff, a 503's
Retry-After honoured, a total deadline), every attempt recorded. A request that still gets no reply at all
(refused, reset, timed out) raises `TransportFailure`; any reply, whatever its status, is returned."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import stamina

import finsec.net.retry  # noqa: F401  (quiets stamina's own retry log)

# Headers a client may send with every request: Serve's replica then does not watch the client for a disconnect
# (a receive task and a request task per request, raced), which saves replica CPU on every request
# (bench/results/serve_floor.md). A request whose client went away then runs to its end instead of being cancelled
# at an await, and its retry finds what it did (a seed's 409 and cookie, a cached verdict), as the contract's
# retries expect. The project's rollout client sends them; other clients may.
CLIENT_HEADERS = {"x-request-disconnect-disabled": "?1"}

RETRIED_STATUSES = frozenset({500, 502, 503, 504})


@dataclass(frozen=True)
class Retries:
    """How a request is retried: at most `attempts` tries within `deadline` seconds, waiting `initial` seconds
    doubled each time up to `longest`, plus up to `jitter`, or as long as a Retry-After says (within the
    deadline). `attempts=1` never retries."""

    attempts: int = 4
    deadline: float = 60.0
    initial: float = 0.2
    longest: float = 5.0
    jitter: float = 0.5


@dataclass
class Call:
    """One HTTP request of an episode, as the JSONL records it."""

    route: str
    status: int | None  # None: no reply
    ms: float
    error: str | None = None  # why there was no reply
    retried: bool = False  # this attempt failed (5xx or no reply) and the request was sent again

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"route": self.route, "status": self.status, "ms": round(self.ms, 3)}
        if self.error:
            row["error"] = self.error
        if self.retried:
            row["retried"] = True
        return row


class _Again(Exception):
    """An attempt to send again: a 5xx (with its Retry-After, if any) or no reply."""

    def __init__(self, call: Call, reply: Reply | None, retry_after: float | None):
        self.call, self.reply, self.retry_after = call, reply, retry_after


def _retry_after(headers: Any) -> float | None:
    """Retry-After in seconds (the delay form; an HTTP date is taken as no hint)."""
    try:
        return max(0.0, float(headers.get("Retry-After", "")))
    except ValueError:
        return None


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
                 observer: Observer | None = None, retries: Retries | None = None):
        self.base_url = base_url.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None
        self.observer = observer
        self.retries = retries or Retries(deadline=2 * timeout)

    async def __aenter__(self) -> ServerClient:
        connector = aiohttp.TCPConnector(limit=self._connections, limit_per_host=self._connections)
        # DummyCookieJar: the session shares no cookies between episodes; Cookies decides what each sends.
        self._session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                              timeout=self.timeout, headers=CLIENT_HEADERS)
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
        """Send until a reply that is not a 5xx, or the retries are spent: then the last 5xx is returned, or
        `TransportFailure` raised when the last attempt got no reply."""
        policy, began = self.retries, time.monotonic()

        def again(error: Exception) -> bool | float:
            if not isinstance(error, _Again):
                return False
            if error.retry_after is not None and error.retry_after > policy.deadline - (time.monotonic() - began):
                return False  # the server asks for longer than the deadline leaves: its answer stands
            error.call.retried = True
            return True if error.retry_after is None else error.retry_after

        try:
            async for attempt in stamina.retry_context(
                    on=again, attempts=policy.attempts, timeout=policy.deadline, wait_initial=policy.initial,
                    wait_max=policy.longest, wait_jitter=policy.jitter):
                with attempt:
                    reply = await self._attempt(method, route, body, cookies, calls)
            return reply
        except _Again as spent:
            spent.call.retried = False  # the last attempt: nothing was sent after it
            if spent.reply is None:
                raise TransportFailure(route, spent.call.error) from None
            return spent.reply

    async def _attempt(self, method: str, route: str, body: Any, cookies: Cookies | None,
                       calls: list[Call]) -> Reply:
        assert self._session is not None, "use `async with ServerClient(...)`"
        headers = cookies.header() if cookies else {}
        started = time.perf_counter()
        try:
            async with self._session.request(method, f"{self.base_url}/{route.lstrip('/')}", json=body,
                                             headers=headers) as response:
                text = await response.text(errors="replace")
                reply = Reply(response.status, text, {k: m.value for k, m in response.cookies.items()})
                hint = _retry_after(response.headers)
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            call = Call(route, None, (time.perf_counter() - started) * 1000, describe(error))
            calls.append(call)
            self._observe(call, body, None)
            raise _Again(call, None, None) from None
        call = Call(route, reply.status, (time.perf_counter() - started) * 1000)
        calls.append(call)
        if cookies is not None and cookies.follow:
            cookies.take(reply)
        self._observe(call, body, reply)
        if reply.status in RETRIED_STATUSES:
            raise _Again(call, reply, hint)
        return reply

    def _observe(self, call: Call, body: Any, reply: Reply | None) -> None:
        if self.observer is not None:
            self.observer(call, body, reply)


def describe(error: BaseException) -> str:
    if isinstance(error, asyncio.TimeoutError):
        return "timed out"
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:300]
