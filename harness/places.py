"""What must not hold one of admission's places, as scenarios shared by the one-process and Serve tests: an open MCP
event stream, and a body that arrives a byte at a time. Each runs against an app that works on `RUNNING` requests at
once and lets the others wait `WAIT_SECONDS`: if what it holds open took a place, the seeds sent meanwhile would
wait out the bound and get 503."""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit

import httpx

from harness.bodies import episode_seed, new_session_id

RUNNING = 2
WAIT_SECONDS = 8  # far beyond what a seed takes on a busy machine, short enough for a failing test
SETTINGS = {"admission_running": RUNNING, "admission_wait_seconds": WAIT_SECONDS}


async def _seeds(url: str, count: int) -> list[int]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        replies = await asyncio.gather(
            *(client.post("/seed_session", json=episode_seed(new_session_id())) for _ in range(count))
        )
    return [reply.status_code for reply in replies]


def assert_streams_hold_no_place(url: str, streams: int = 40, seeds: int = 32) -> None:
    """`streams` MCP sessions of the official SDK, each with its event stream (the GET it opens after
    `initialized`) open, and `seeds` REST seeds sent meanwhile: every seed is answered 200."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def scenario() -> list[int]:
        answered = asyncio.Event()
        stream_statuses: list[int] = []

        async def on_response(response: httpx2.Response) -> None:
            if response.request.method == "GET":
                stream_statuses.append(response.status_code)
                if len(stream_statuses) == streams:
                    answered.set()

        release = asyncio.Event()

        async def session() -> None:
            http = httpx2.AsyncClient(timeout=60, event_hooks={"response": [on_response]})
            async with (
                http,
                streamable_http_client(url + "/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as mcp,
            ):
                await mcp.initialize()
                await release.wait()

        held = [asyncio.create_task(session()) for _ in range(streams)]
        try:
            await asyncio.wait_for(answered.wait(), 60)
            assert stream_statuses == [200] * streams, stream_statuses  # every stream open, none waiting
            return await _seeds(url, seeds)
        finally:
            release.set()
            await asyncio.gather(*held, return_exceptions=True)

    statuses = asyncio.run(scenario())
    assert statuses == [200] * seeds, statuses


def assert_slow_body_holds_no_place(url: str) -> None:
    """As many seeds as there are places, their bodies arriving a byte a second, hold none: seeds sent meanwhile are
    answered 200, and the slow ones get 408 once the bound passes."""
    parts = urlsplit(url)
    body = b'{"resources_session_id": "slow"}'
    head = (
        f"POST {parts.path}/seed_session HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    slow = [socket.create_connection((parts.hostname, parts.port), timeout=60) for _ in range(RUNNING)]
    try:
        for connection in slow:
            connection.sendall(head + body[:1])
        assert asyncio.run(_seeds(url, 4 * RUNNING)) == [200] * 4 * RUNNING
        for connection in slow:
            reply = _trickle(connection, body[1:])
            assert reply.split(b" ", 2)[1:2] == [b"408"], reply[:300]
            assert b"admission_wait_seconds" in reply
    finally:
        for connection in slow:
            connection.close()


def _trickle(connection: socket.socket, rest: bytes) -> bytes:
    """Send `rest` a byte a second until the server answers; its whole reply."""
    reply = b""
    for byte in rest:
        try:
            connection.sendall(bytes([byte]))
        except OSError:
            break
        connection.settimeout(1)
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            continue
        reply += chunk
        if not chunk or b"\r\n\r\n" in reply:
            break
    connection.settimeout(10)
    head, _, body = reply.partition(b"\r\n\r\n")
    lengths = [line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
    length = int(lengths[0])
    while len(body) < length and (chunk := connection.recv(65536)):
        body += chunk
    return head + b"\r\n\r\n" + body
