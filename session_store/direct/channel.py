"""The replica's side of the direct transport: one connection to one shard, opened on first use.

Every way a batch can fail to get its answer is `StoreUnavailable` (a 503 the caller may retry), as for an actor
call: the shard process died (its socket closes), it did not answer within the timeout, or it cannot be
reached. The connection is then dropped, and the next batch asks the shard actor where it listens now
(`resolve`, a Ray call that waits out a restart), so a restarted shard, or one on another node, is found again.
A connection that timed out is dropped too: a peer that vanished with its node sends no reset.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import StoreUnavailable
from .frames import ACK, Endpoint, FrameTooLarge, encode, read_frame

__all__ = ["CAUSE", "ShardChannel"]

CAUSE = "actor_unreachable"  # the same 503 cause as a failed actor call: to an operator it is the same fault


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, what: str):
        self._reader, self._writer, self._what = reader, writer, what
        self._pending: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self.loop = asyncio.get_running_loop()
        self.closed = False
        self._reading = self.loop.create_task(self._read())

    async def request(self, payload: Any) -> Any:
        if self.closed:
            raise StoreUnavailable(f"{self._what}: its connection closed; retry the request shortly.", CAUSE)
        request_id = next(self._ids)
        try:
            frame = encode(request_id, payload)
        except FrameTooLarge as error:  # a batch this size is a bug: refuse it, keep the connection
            raise StoreUnavailable(f"{self._what}: {error}.", "internal") from None
        answer = self._pending[request_id] = self.loop.create_future()
        try:
            self._writer.write(frame)
            await self._writer.drain()  # raises if the shard's side went away before the reader noticed
            ok, value = await answer
        except OSError as error:
            self.close(f"connection lost ({type(error).__name__})")
            raise StoreUnavailable(
                f"{self._what}: its connection was lost; it may be restarting. Retry the request shortly.", CAUSE
            ) from None
        finally:
            self._pending.pop(request_id, None)
        if not ok:
            raise StoreUnavailable(f"{self._what} failed on a batch ({value}).", "internal")
        return value

    async def _read(self) -> None:
        why = "closed its connection"
        try:
            while True:
                request_id, reply = await read_frame(self._reader)
                answer = self._pending.get(request_id)
                if answer is not None and not answer.done():
                    answer.set_result(reply)
        except asyncio.CancelledError:
            why = "connection dropped"
        except Exception as error:
            why = f"connection lost ({type(error).__name__})"
        finally:
            self.close(why, reading=False)

    def close(self, why: str, reading: bool = True) -> None:
        if self.closed:
            return
        self.closed = True
        self._writer.close()
        if reading:
            self._reading.cancel()
        for answer in self._pending.values():
            if not answer.done():
                answer.set_exception(
                    StoreUnavailable(f"{self._what}: {why}; it may be restarting. Retry the request shortly.", CAUSE)
                )


class ShardChannel:
    """`send(ops)` runs one batch on the shard and returns its outcomes, within `timeout` seconds in all."""

    def __init__(self, resolve: Callable[[], Awaitable[Endpoint]], *, timeout: float, what: str):
        self._resolve, self._timeout, self._what = resolve, timeout, what
        self._connection: _Connection | None = None
        self._connecting: asyncio.Task[_Connection] | None = None

    async def send(self, ops: list) -> list:
        connection = None
        try:
            async with asyncio.timeout(self._timeout):
                connection = await self._connected()
                return await connection.request(ops)
        except TimeoutError:
            if connection is not None:  # maybe half-open: look the shard up again next time
                connection.close("no answer in time")
            raise StoreUnavailable(
                f"{self._what} did not answer within {self._timeout:g} s; it may be "
                "restarting. Retry the request shortly.",
                CAUSE,
            ) from None

    async def _connected(self) -> _Connection:
        loop = asyncio.get_running_loop()
        connection = self._connection
        if connection is not None and not connection.closed and connection.loop is loop:
            return connection
        task = self._connecting
        if task is None or task.get_loop() is not loop:
            task = self._connecting = loop.create_task(self._connect())
            task.add_done_callback(self._connected_or_not)
        return await asyncio.shield(task)  # one waiter's timeout must not cancel everybody's connect

    def _connected_or_not(self, task: asyncio.Task) -> None:
        if self._connecting is task:
            self._connecting = None
        if not task.cancelled() and task.exception() is None:
            self._connection = task.result()

    async def _connect(self) -> _Connection:
        endpoint = await self._resolve()  # StoreUnavailable when the actor cannot be reached
        try:
            reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
        except OSError as error:
            raise StoreUnavailable(
                f"{self._what} refused a connection ({type(error).__name__}); it may be "
                "restarting. Retry the request shortly.",
                CAUSE,
            ) from None
        try:
            writer.write(endpoint.token)
            if await reader.readexactly(len(ACK)) != ACK:
                raise ConnectionError("bad handshake")
        except (OSError, asyncio.IncompleteReadError) as error:
            writer.close()
            raise StoreUnavailable(
                f"{self._what} closed a new connection ({type(error).__name__}); it may be "
                "restarting. Retry the request shortly.",
                CAUSE,
            ) from None
        return _Connection(reader, writer, self._what)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close("channel closed")
