"""The agent's tools over MCP's Streamable HTTP transport at `/mcp` (the `mcp` extra; docs/recipes/mcp.md).

The endpoint is a client of this app's own routes, in process: a `tools/call` is a POST to the tool's route through
the whole app (body checks, caps, time budget, session checks, the route prefix's mount), so every promise of the
contract holds on this path because it is the same path. MCP adds only which finsec session a call speaks for:

1. an episode, when the finsec cookie the HTTP request carries names one, on every call: the trainer seeded it over
   REST and gave the MCP client its cookie (that is how a client binds a `resources_session_id`);
2. otherwise, in an MCP session (the initialize handshake's `Mcp-Session-Id`), a fresh agent-run session seeded as
   it opens (once, however often the client initializes) and kept for its life, so a client that drops cookies
   still speaks for it. The client's DELETE releases it, on any replica (by the cookie, where another replica
   holds the MCP session). An idle timeout releases it once no stateful tool has named it for
   `mcp_session_idle_seconds`: its calls may go on through other replicas by the cookie, which this replica never
   sees, so it asks the shard and waits while they do. The server stopping leaves it to its TTL;
3. otherwise (the protocol's stateless revision), the cookie's agent-run session, seeded for a cookie that names
   none, which a cookie-keeping client then carries. A call with neither cookie nor MCP session speaks for no
   session: the search tools answer, the stateful ones 404 `session_lost`, as over REST.

Every reply sets the session's cookie, so the trainer verifies and closes over REST as before. A route's error
(404 `session_lost`, 409, 413, 422, 503) is the tool result `isError`, its text the route's JSON body. An MCP
session lives in the replica that opened it; a call naming one this replica does not hold goes on by its cookie,
which the handshake's reply already set.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from deployments.http import identity
from deployments.http.admission import ADMITTED
from deployments.http.prefixes import mount_path
from deployments.routes.tools import TOOL_NAMES, unknown_tool_result
from deployments.settings import Settings
from finsec.tools.catalog import DEFAULT_TOOLS, TOOLS, parameters
from session_store import SessionLost, StoreUnavailable

__all__ = ["McpEndpoint"]

log = logging.getLogger(__name__)
_BINDING = "finsec.binding"  # the connection state's key
# Why a release may not happen now: the shard is unavailable, or another life of it holds the session (its TTL,
# or its verify, releases it then).
_NOT_RETIRED = (StoreUnavailable, SessionLost)


class McpEndpoint:
    """The ASGI app at /mcp. The SDK's session manager runs once per instance, so each app lifespan (`run`) makes
    a fresh one; requests outside a lifespan get a 503."""

    def __init__(self, settings: Settings):
        self._settings = settings
        self._managers: tuple[StreamableHTTPSessionManager, StreamableHTTPSessionManager] | None = None
        names = TOOL_NAMES if settings.tavily_api_key is not None else DEFAULT_TOOLS
        self._tools = {name: parameters(name) for name in names}
        self._server = Server(
            "finsec-serve",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=self._tools.get,
        )
        self._server.middleware.append(self._opening)
        self._ended_by_client: set[str] = set()  # MCP sessions of this replica whose client sent DELETE
        self._idling: set[asyncio.Task] = set()  # ended MCP sessions' agent-run sessions, retired once idle

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        def manager(stateless: bool) -> StreamableHTTPSessionManager:
            return StreamableHTTPSessionManager(
                app=self._server,
                stateless=stateless,
                json_response=True,  # a reply is one JSON body, so a tool call can still set the session's cookie
                session_idle_timeout=self._settings.mcp_session_idle_seconds,
                max_sessions=self._settings.mcp_max_sessions,
                max_request_body_size=self._settings.max_request_bytes,
                # No Host/Origin allow-list: rollouts reach a cluster under names unknown here, and the REST routes
                # that hold the same sessions have none either.
                security_settings=None,
            )

        # In a task of their own: their task groups must end in the task that began them, and a lifespan may be
        # entered and left from different tasks (the in-process test harness drives it by hand).
        sessions, stateless = manager(False), manager(True)
        started, stop = asyncio.Event(), asyncio.Event()

        async def serve() -> None:
            async with sessions.run(), stateless.run():  # leaving ends every MCP session, releasing what it seeded
                self._managers = sessions, stateless
                started.set()
                try:
                    await stop.wait()
                finally:
                    self._managers = None

        task = asyncio.create_task(serve())
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait([task, waiting], return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if task.done():
            task.result()  # it failed to start: say why
        try:
            yield
        finally:
            for idling in self._idling:
                idling.cancel()
            stop.set()
            await task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._managers is None:
            await JSONResponse(
                {"detail": "The MCP endpoint is not running (the app is starting or stopping)."},
                status_code=503,
                headers={"Retry-After": "2"},
            )(scope, receive, send)
            return
        sessions, stateless = self._managers
        held = sessions._server_instances  # private in mcp 2.3 (pinned): the MCP sessions this replica holds
        named = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-session-id"), None)
        if named is not None and named not in held:
            # Another replica's MCP session, or one from before this replica restarted: its calls are served by
            # the cookie they carry (rule 1 or 3), where the SDK alone would answer 404 and strand the client. Its
            # event stream (GET) is not offered here; its end (DELETE) releases the cookie's agent-run session.
            if scope["method"] == "DELETE":
                await self._ended_elsewhere(Request(scope), send)
                return
            if scope["method"] != "POST":
                status = 405 if scope["method"] == "GET" else 404
                await JSONResponse(
                    {"detail": "This replica does not hold that MCP session."},
                    status_code=status,
                    headers={"Allow": "POST, DELETE"} if status == 405 else None,
                )(scope, receive, send)
                return
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"mcp-session-id"]}
            await stateless.handle_request(scope, receive, send)
            return
        if named is not None and scope["method"] == "DELETE":
            self._ended_by_client.add(named)
        await sessions.handle_request(scope, receive, send)

    # --- the MCP handlers ---

    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=TOOLS[name][1], input_schema=schema)
                for name, schema in self._tools.items()
            ]
        )

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        request: Request = ctx.request
        if params.name not in self._tools:  # never a path built from the name: only the tools' own routes
            return _text(unknown_tool_result(params.name, list(self._tools)))
        binding = _connection(ctx).state.get(_BINDING)
        if binding is None or request.session.get(identity.SEED_KIND) == "episode":  # rules 1 and 3
            try:
                binding = await self._cookie_binding(request)
            except _Refused as refused:
                return _result(refused.reply)
        arguments = json.dumps(params.arguments or {}).encode()
        reply = await _post(request, f"/{params.name}", arguments, binding.cookie)
        binding.cookie = reply.cookie or binding.cookie
        _set_cookie_session(request, reply)
        return _result(reply)

    async def _opening(self, ctx: Any, call_next: Any) -> Any:
        """Server middleware: an MCP session's `initialize` binds it (rules 1 and 2) before the handshake's reply,
        so that reply already carries the session's cookie and the client's calls to any replica name it."""
        connection = _connection(ctx) if ctx.method == "initialize" and ctx.request is not None else None
        if connection is not None and _BINDING not in connection.state:  # one binding, however often it initializes
            try:
                binding = await self._session_binding(ctx.request)
            except _Refused as refused:  # before call_next: the handshake fails, saying why
                raise MCPError(INTERNAL_ERROR, refused.reply.body.decode("utf-8", "replace")) from None
            binding.mcp_session = connection.session_id
            connection.state[_BINDING] = binding
            connection.exit_stack.push_async_callback(self._ended, binding, ctx.request.app)
        return await call_next(ctx)

    # --- which finsec session a call speaks for ---

    async def _session_binding(self, request: Request) -> _Binding:
        if request.session.get(identity.SEED_KIND) == "episode":
            return _Binding(request.headers.get("cookie"), identity.session_id(request), seeded_here=False)
        # A new MCP session is a new run: a fresh session, never one an earlier run's cookie still names.
        return await self._seed(request, cookie=None)

    async def _cookie_binding(self, request: Request) -> _Binding:
        cookie = request.headers.get("cookie")
        if request.session.get(identity.SEED_KIND) is not None:
            return _Binding(cookie, identity.session_id(request), seeded_here=False)
        if self._settings.cookie_name not in request.cookies:
            return _Binding(None, None, seeded_here=False)  # no cookie to keep a session in: speaks for none
        return await self._seed(request, cookie)

    async def _seed(self, request: Request, cookie: str | None) -> _Binding:
        reply = await _post(request, "/seed_session", b"{}", cookie)  # an agent-run seed (§C.3)
        if reply.status != 200:
            raise _Refused(reply)
        _set_cookie_session(request, reply)
        return _Binding(reply.cookie, reply.session.get(identity.SESSION_ID), seeded_here=True)

    async def _ended(self, binding: _Binding, app: Any) -> None:
        by_client = binding.mcp_session in self._ended_by_client
        self._ended_by_client.discard(binding.mcp_session)
        if not binding.seeded_here or binding.sid is None:
            return  # an episode is the trainer's to close (§C.4)
        # Retire, not close: a verify after the MCP session ended still grades the agent-run session (§C.5 step 8).
        store = app.state.services.store
        try:
            if by_client:
                await store.retire(binding.sid)
                return
            idle_in = await store.retire_if_idle(binding.sid, self._settings.mcp_session_idle_seconds)
        except _NOT_RETIRED as error:  # the session's TTL releases it instead (or another life holds it now)
            log.warning("MCP session ended; its agent-run session was not released now: %s", error)
            return
        if idle_in > 0 and self._managers is not None:  # in use through other replicas: ask again once idle
            idling = asyncio.create_task(self._retire_once_idle(store, binding.sid, idle_in))
            self._idling.add(idling)
            idling.add_done_callback(self._idling.discard)

    async def _retire_once_idle(self, store: Any, sid: str, idle_in: float) -> None:
        while idle_in > 0:
            await asyncio.sleep(idle_in)
            try:
                idle_in = await store.retire_if_idle(sid, self._settings.mcp_session_idle_seconds)
            except _NOT_RETIRED:
                return  # its TTL releases it

    async def _ended_elsewhere(self, request: Request, send: Send) -> None:
        """A DELETE of an MCP session another replica holds: the client ended it, so the agent-run session its
        cookie names is released here (an episode's is the trainer's to close)."""
        if request.session.get(identity.SEED_KIND) == "agent_run":
            try:
                await request.app.state.services.store.retire(identity.session_id(request))
            except _NOT_RETIRED as error:
                log.warning("MCP session ended elsewhere; its agent-run session was not released now: %s", error)
        await JSONResponse({"detail": "ended"}, status_code=200)(request.scope, request.receive, send)


@dataclass
class _Binding:
    cookie: str | None  # the Cookie header its calls carry
    sid: str | None
    seeded_here: bool  # an agent-run session this endpoint seeded, released when its MCP session ends
    mcp_session: str | None = None  # the MCP session it binds (Mcp-Session-Id)


@dataclass
class _Reply:
    status: int
    body: bytes
    cookie: str | None  # the finsec cookie it set, as a Cookie header
    session: dict[str, Any]  # the cookie's claims after the call


class _Refused(Exception):
    def __init__(self, reply: _Reply):
        self.reply = reply


def _connection(ctx: Any) -> Any:
    """The MCP connection a request came on: its `state` and `exit_stack` are the SDK's per-connection scratch and
    teardown, but mcp 2.3 reaches them only through a private attribute (pinned; tests/unit/deployments/test_mcp.py)."""
    return ctx.session._connection


async def _post(request: Request, route: str, body: bytes, cookie: str | None) -> _Reply:
    """POST `body` to `route` of this app, under the same mount, through its whole middleware stack."""
    outer = request.scope
    path = mount_path(outer).rstrip("/") + route
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k, v) for k, v in outer["headers"] if k == b"host"]
    if cookie:
        headers.append((b"cookie", cookie.encode("latin-1")))
    scope = {
        "type": "http",
        "asgi": outer.get("asgi", {"version": "3.0"}),
        "http_version": "1.1",
        "method": "POST",
        "scheme": outer.get("scheme", "http"),
        "path": path,
        "raw_path": path.encode(),
        "root_path": outer.get("root_path", ""),
        "query_string": b"",
        "headers": headers,
        "client": outer.get("client"),
        "server": outer.get("server"),
        "state": dict(outer.get("state", {})),
        ADMITTED: True,
    }  # inside the /mcp request's place
    set_cookies: list[str] = []
    chunks: list[bytes] = []
    status, done, sent = 500, asyncio.Event(), False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            set_cookies.extend(v.decode("latin-1") for k, v in message.get("headers", []) if k == b"set-cookie")
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await request.app(scope, receive, send)
    name = request.app.state.services.settings.cookie_name
    return _Reply(status, b"".join(chunks), _cookie_header(set_cookies, name), scope.get("session", {}))


def _cookie_header(set_cookies: list[str], name: str) -> str | None:
    for header in set_cookies:
        try:
            jar = SimpleCookie(header)
        except CookieError:
            continue
        if name in jar and jar[name].value:
            return f"{name}={jar[name].value}"
    return None


def _set_cookie_session(request: Request, reply: _Reply) -> None:
    """The /mcp reply sets the cookie the route's reply set: the client's jar then names the same session."""
    if reply.session:
        request.session.clear()
        request.session.update(reply.session)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _result(reply: _Reply) -> types.CallToolResult:
    """A route's reply as a tool result: its `results` text, or, for an HTTP error, its JSON body, flagged."""
    text = reply.body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if reply.status == 200 and isinstance(parsed, dict) and isinstance(parsed.get("results"), str):
        return _text(parsed["results"])
    structured = {"status_code": reply.status, **(parsed if isinstance(parsed, dict) else {})}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=True
    )
