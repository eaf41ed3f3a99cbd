"""The shard's side of the direct transport: `run(ops) -> outcomes` served on a TCP port of the shard's node.

One connection per replica (and per replica event loop). Frames of one connection are answered one after the
other, in order: a replica's coalescer has one batch in flight per shard anyway, and in-order answers keep its
guarantee (two operations on one ID from one replica are applied in the order they arrived) even if a client
ever sent more. Batches of different connections interleave on the shard's event loop at their awaits, exactly
as concurrent actor calls do.

Anything on the node's network can connect, so what a stranger can hold is capped: a connection that has not
shown the token within HANDSHAKE_SECONDS is dropped, and past MAX_HANDSHAKING of them the oldest is dropped for
each newcomer (a replica shows its token at once, so a flood of silent peers delays it by no more than its own
handshake). Connections with the token hold it: past MAX_CONNECTIONS a new one is refused (a bug or a leak,
since a replica keeps one per shard), and the replica gets a 503 it retries.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from .frames import ACK, TOKEN_BYTES, Endpoint, FrameTooLarge, encode, read_frame

__all__ = ["DirectServer", "HANDSHAKE_SECONDS", "MAX_CONNECTIONS", "MAX_HANDSHAKING"]

log = logging.getLogger(__name__)

HANDSHAKE_SECONDS = 5.0  # a connection that has not shown the token by then is dropped
MAX_HANDSHAKING = 64  # connections yet to show the token; the oldest goes first
MAX_CONNECTIONS = 4096  # connections that showed it: replicas x their event loops, with room to spare


class DirectServer:
    def __init__(self, run: Callable[[Any], Awaitable[Any]], host: str):
        self._run, self._host = run, host
        self._token = secrets.token_bytes(TOKEN_BYTES)
        self._started: asyncio.Task[Endpoint] | None = None
        self._connections: set[asyncio.StreamWriter] = set()  # those that showed the token
        self._handshaking: OrderedDict[asyncio.StreamWriter, None] = OrderedDict()

    @property
    def connections(self) -> int:
        return len(self._connections)

    async def start(self) -> Endpoint:
        """Listen (once; later calls return the same endpoint)."""
        if self._started is None:
            self._started = asyncio.create_task(self._listen())
        return await asyncio.shield(self._started)

    async def _listen(self) -> Endpoint:
        self._server = await asyncio.start_server(self._serve, self._host, 0)
        port = self._server.sockets[0].getsockname()[1]
        log.info("shard transport listening on %s:%d", self._host, port)
        return Endpoint(self._host, port, self._token)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._handshaking) >= MAX_HANDSHAKING:
            oldest, _ = self._handshaking.popitem(last=False)
            oldest.close()  # its pending read ends, and its own handler cleans up
        self._handshaking[writer] = None
        try:
            token = await asyncio.wait_for(reader.readexactly(TOKEN_BYTES), HANDSHAKE_SECONDS)
            self._handshaking.pop(writer, None)
            if not hmac.compare_digest(token, self._token):
                log.warning(
                    "shard transport: a connection from %s without the token, dropped",
                    writer.get_extra_info("peername"),
                )
                return
            if len(self._connections) >= MAX_CONNECTIONS:
                log.warning("shard transport: %d connections already; one more refused", len(self._connections))
                return
            self._connections.add(writer)
            writer.write(ACK)
            while True:
                request_id, ops = await read_frame(reader)
                writer.write(encode(request_id, await self._answer(ops)))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            pass  # the replica went away (or never finished the handshake)
        except FrameTooLarge as error:
            log.warning("shard transport: %s; connection dropped", error)
        except Exception:  # a frame that does not unpickle: drop this connection, keep serving the others
            log.exception("shard transport: an unreadable frame; connection dropped")
        finally:
            self._handshaking.pop(writer, None)
            self._connections.discard(writer)
            writer.close()

    async def _answer(self, ops: Any) -> tuple[bool, Any]:
        try:
            return True, await self._run(ops)
        except Exception as error:  # run answers every operation itself; this is a bug, not a session error
            log.exception("shard transport: a batch failed")
            return False, f"{type(error).__name__}: {error}"

    async def close(self) -> None:
        if (
            self._started is not None
            and self._started.done()
            and not self._started.cancelled()
            and not self._started.exception()
        ):
            self._server.close()
            for writer in [*self._connections, *self._handshaking]:
                writer.close()
            await self._server.wait_closed()
