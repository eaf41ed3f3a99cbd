"""The shard's side of the direct transport: `run(ops) -> outcomes` served on a TCP port of the shard's node.

One connection per replica (and per replica event loop). Frames of one connection are answered one after the
other, in order: a replica's coalescer has one batch in flight per shard anyway, and in-order answers keep its
guarantee (two operations on one ID from one replica are applied in the order they arrived) even if a client
ever sent more. Batches of different connections interleave on the shard's event loop at their awaits, exactly
as concurrent actor calls do.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from typing import Any, Awaitable, Callable

from .frames import ACK, TOKEN_BYTES, Endpoint, FrameTooLarge, encode, read_frame

log = logging.getLogger(__name__)

HANDSHAKE_SECONDS = 5.0  # a connection that has not shown the token by then is dropped


class DirectServer:
    def __init__(self, run: Callable[[Any], Awaitable[Any]], host: str):
        self._run, self._host = run, host
        self._token = secrets.token_bytes(TOKEN_BYTES)
        self._started: asyncio.Task[Endpoint] | None = None
        self._connections: set[asyncio.StreamWriter] = set()

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
        self._connections.add(writer)
        try:
            token = await asyncio.wait_for(reader.readexactly(TOKEN_BYTES), HANDSHAKE_SECONDS)
            if not hmac.compare_digest(token, self._token):
                log.warning("shard transport: a connection from %s without the token, dropped",
                            writer.get_extra_info("peername"))
                return
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
            self._connections.discard(writer)
            writer.close()

    async def _answer(self, ops: Any) -> tuple[bool, Any]:
        try:
            return True, await self._run(ops)
        except Exception as error:  # run answers every operation itself; this is a bug, not a session error
            log.exception("shard transport: a batch failed")
            return False, f"{type(error).__name__}: {error}"

    async def close(self) -> None:
        if self._started is not None and self._started.done() and not self._started.cancelled() \
                and not self._started.exception():
            self._server.close()
            for writer in list(self._connections):
                writer.close()
            await self._server.wait_closed()
