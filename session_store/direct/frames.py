"""Frames of the direct transport: a 12-byte header (payload length, request ID), then a pickled payload.

A connection opens with the client's token (TOKEN_BYTES raw bytes) and the server's one-byte ACK; nothing is
unpickled before the token matched. Pickle rather than msgpack: the payloads are the session store's own
dataclasses and errors, which pickle carries as they are (msgpack would need an encoder per type), and Ray
pickles the very same objects on its own hop. The trust boundary is Ray's too: only a holder of the shard's
actor handle learns the token.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from dataclasses import dataclass
from typing import Any

__all__ = ["ACK", "encode", "Endpoint", "FrameTooLarge", "HEADER", "MAX_FRAME", "read_frame", "TOKEN_BYTES"]

HEADER = struct.Struct("!IQ")  # payload bytes, request ID
MAX_FRAME = 64 * 1024 * 1024  # a batch is a few KB; anything near this is a bug or a stranger
TOKEN_BYTES = 32
ACK = b"\x01"


@dataclass(frozen=True)
class Endpoint:
    """Where a shard's process listens, and the token it accepts (a new one each process life)."""

    host: str
    port: int
    token: bytes

    def __repr__(self) -> str:  # never log the token
        return f"Endpoint({self.host}:{self.port})"


class FrameTooLarge(Exception):
    pass


def encode(request_id: int, payload: Any) -> bytes:
    body = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    if len(body) > MAX_FRAME:
        raise FrameTooLarge(f"a frame of {len(body)} bytes (at most {MAX_FRAME})")
    return HEADER.pack(len(body), request_id) + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, Any]:
    """The next frame's request ID and payload; IncompleteReadError at the end of the stream."""
    size, request_id = HEADER.unpack(await reader.readexactly(HEADER.size))
    if size > MAX_FRAME:
        raise FrameTooLarge(f"a frame of {size} bytes announced (at most {MAX_FRAME})")
    return request_id, pickle.loads(await reader.readexactly(size))
