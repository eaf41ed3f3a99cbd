"""The rollout's HTTP client: every request timed, bounded by a timeout, and recorded.

Cookies are handled explicitly rather than by a shared jar, because the two callers differ (contract §B.1): the
Environment Server sends the episode seed's cookies with every later request, while the legacy agent carries each
reply's cookies to its next request.

Every route of the contract is safe to repeat (a retried seed, a repeated close, a re-sent verify, stateless or
overwriting tools), so a 5xx or a dropped connection is retried (`Retries`), every attempt recorded. A busy
server's 503 or 429 with Retry-After (backpressure: the request was not started) is sent again for as long as the
deadline allows, each wait at least what the server asked and doubling while it stays busy, so thousands of
sessions back off instead of turning the server's time into refusals. A request that still gets no reply at all
(refused, reset, timed out) raises `TransportFailure`; any reply, whatever its status, is returned."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from finsec_client.window import SendWindow

__all__ = [
    "BUSY_STATUSES",
    "Call",
    "CLIENT_HEADERS",
    "Cookies",
    "describe",
    "Observer",
    "Reply",
    "RETRIED_STATUSES",
    "Retries",
    "ServerClient",
    "TransportFailure",
]

# Headers a client may send with every request: Serve's replica then does not watch the client for a disconnect
# (a receive task and a request task per request, raced), which saves replica CPU on every request
# (docs/benchmarks.md). A request whose client went away then runs to its end instead of being cancelled
# at an await, and its retry finds what it did (a seed's 409 and cookie, a cached verdict), as the contract's
# retries expect. The project's rollout client sends them; other clients may.
CLIENT_HEADERS = {"x-request-disconnect-disabled": "?1"}

RETRIED_STATUSES = frozenset({500, 502, 503, 504})
BUSY_STATUSES = frozenset({429, 503})  # with a Retry-After: backpressure


@dataclass(frozen=True)
class Retries:
    """How a request is sent again, all within `deadline` seconds.

    A failure (a 5xx without Retry-After, or no reply) is tried at most `attempts` times in all, waiting `initial`
    seconds doubled each time up to `longest`, plus up to `jitter`. Backpressure (a 503 or 429 with Retry-After)
    is not a failure: the server did nothing and says when to come back, so it is tried until the deadline,
    waiting the Retry-After doubled for each busy answer in a row (at most `longest_busy`, or the Retry-After if
    longer), times 1 to 2 so that the refusals of one burst come back spread out. `attempts=1` never retries."""

    attempts: int = 4
    deadline: float = 600.0  # a rollout would rather wait out a busy server than lose its episode
    initial: float = 0.2
    longest: float = 5.0
    jitter: float = 0.5
    longest_busy: float = 60.0

    def wait(self, failures: int, busy: int, retry_after: float | None) -> float | None:
        """Seconds before the next attempt after `failures` failures and `busy` busy answers so far (the last of
        them just now, with `retry_after` if it was busy), or None when none is left."""
        if self.attempts <= 1:
            return None
        if retry_after is not None:
            hint = max(retry_after, self.initial)  # a Retry-After of 0 must not become a tight loop
            return min(hint * 2 ** (busy - 1), max(hint, self.longest_busy)) * (1 + random.random())
        if failures >= self.attempts:
            return None
        return min(self.initial * 2 ** (failures - 1), self.longest) + random.uniform(0, self.jitter)


@dataclass
class Call:
    """One HTTP request of an episode, as the JSONL records it."""

    route: str
    status: int | None  # None: no reply
    ms: float
    error: str | None = None  # why there was no reply
    retried: bool = False  # this attempt failed (5xx or no reply) and the request was sent again
    body: str | None = None  # what was sent and what came back, as excerpts (`ServerClient(excerpts=...)`)
    reply: str | None = None

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"route": self.route, "status": self.status, "ms": round(self.ms, 3)}
        if self.error:
            row["error"] = self.error
        if self.retried:
            row["retried"] = True
        if self.body is not None:
            row["body"] = self.body
        if self.reply is not None:
            row["reply"] = self.reply
        return row


def _excerpt(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, saying how many more there were."""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters]"


class _Again(Exception):
    """An attempt to send again: a 5xx or no reply, or backpressure (`retry_after` set)."""

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
    """One per process (or Ray worker): a connection pool to the server, shared by concurrent episodes, and a
    window of requests in flight that a busy server narrows (`SendWindow`)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 180.0,
        connections: int = 256,
        observer: Observer | None = None,
        retries: Retries | None = None,
        trace_configs: Sequence[aiohttp.TraceConfig] = (),
        excerpts: int = 0,
    ):
        """`excerpts`: each call keeps that many characters of its body and reply (0: none), for the run file."""
        self.base_url = base_url.rstrip("/")
        self.excerpts = excerpts
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None
        self._trace_configs = list(trace_configs)  # aiohttp's request tracing, for whoever measures the client
        self.observer = observer
        self.retries = retries or Retries()
        self.window = SendWindow(connections)  # backpressure narrows it: see finsec_client/window.py

    async def __aenter__(self) -> ServerClient:
        connector = aiohttp.TCPConnector(limit=self._connections, limit_per_host=self._connections)
        # DummyCookieJar: the session shares no cookies between episodes; Cookies decides what each sends.
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=self.timeout,
            headers=CLIENT_HEADERS,
            trace_configs=self._trace_configs,
        )
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._session is not None:
            await self._session.close()

    async def post(self, route: str, body: Any, cookies: Cookies | None, calls: list[Call]) -> Reply:
        return await self._request("POST", route, body, cookies, calls)

    async def get(self, route: str, calls: list[Call] | None = None) -> Reply:
        return await self._request("GET", route, None, None, calls if calls is not None else [])

    async def _request(self, method: str, route: str, body: Any, cookies: Cookies | None, calls: list[Call]) -> Reply:
        """Send until a reply that is not a 5xx, or the retries are spent: then the last 5xx is returned, or
        `TransportFailure` raised when the last attempt got no reply."""
        policy, began = self.retries, time.monotonic()
        failures = busy = 0
        while True:
            sent_under, refused = await self.window.enter(), False
            try:
                return await self._attempt(method, route, body, cookies, calls)
            except _Again as again:
                refused = again.retry_after is not None
                busy += refused
                failures += again.retry_after is None
                wait = policy.wait(failures, busy, again.retry_after)
                if wait is None or time.monotonic() - began + wait > policy.deadline:
                    if again.reply is None:
                        # a call without a reply always has its error (_attempt); the fallback only types it
                        raise TransportFailure(route, again.call.error or "no reply") from None
                    return again.reply  # the last answer stands
                again.call.retried = True
            finally:
                self.window.leave(sent_under, busy=refused)
            await asyncio.sleep(wait)

    async def _attempt(self, method: str, route: str, body: Any, cookies: Cookies | None, calls: list[Call]) -> Reply:
        assert self._session is not None, "use `async with ServerClient(...)`"
        headers = cookies.header() if cookies else {}
        started = time.perf_counter()
        try:
            async with self._session.request(
                method, f"{self.base_url}/{route.lstrip('/')}", json=body, headers=headers
            ) as response:
                text = await response.text(errors="replace")
                reply = Reply(response.status, text, {k: m.value for k, m in response.cookies.items()})
                hint = _retry_after(response.headers)
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            call = Call(route, None, (time.perf_counter() - started) * 1000, describe(error))
            calls.append(call)
            self._observe(call, body, None)
            raise _Again(call, None, None) from None
        call = Call(route, reply.status, (time.perf_counter() - started) * 1000)
        if self.excerpts:
            call.body = None if body is None else _excerpt(json.dumps(body, ensure_ascii=False), self.excerpts)
            call.reply = _excerpt(reply.text, self.excerpts)
        calls.append(call)
        if cookies is not None and cookies.follow:
            cookies.take(reply)
        self._observe(call, body, reply)
        if reply.status in BUSY_STATUSES and hint is not None:
            raise _Again(call, reply, hint)
        if reply.status in RETRIED_STATUSES:
            raise _Again(call, reply, None)
        return reply

    def _observe(self, call: Call, body: Any, reply: Reply | None) -> None:
        if self.observer is not None:
            self.observer(call, body, reply)


def describe(error: BaseException) -> str:
    if isinstance(error, asyncio.TimeoutError):
        return "timed out"
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:300]
