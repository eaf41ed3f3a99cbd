"""Durable marks in Redis (`mark_store_url: redis://host:port/db`, `rediss://` for TLS; a password in the URL):
for clusters, and the store that outlives the Ray cluster, its head included.

- A mark is one string key with native expiry at its drop time (`SET ... PXAT`): nothing needs sweeping.
- Reads are per ID (one MGET), always: a shard over Redis never settles (`lists_marks` is False), so it keeps
  no index to list. An index per partition cost more than the marks themselves: a sorted-set entry took Redis
  ~12 us of CPU a mark against ~4 us for the SET (`bench/results/state_scale.md`), and a settle of a shard's
  share at 4M marks blocked its loop for ~60 ms. A read of an ID the shard does not know costs Redis ~1-2 us.
- A shard batch's changes go out as one command (group commit): a server-side script that sets or deletes each
  mark. One command, not one per mark, because the client's cost is per command (packing it and awaiting its
  reply: ~30 us each here), where Redis's own is a few us.
- Reads and writes are packed by hiredis (C), which redis-py's asyncio client does not use: its Python packer
  cost ~6 us a mark.
- Keys are `finsec:<app namespace>:{<partition>}:m:<id>`: the hash tag keeps a partition's keys in one slot,
  ready for Redis Cluster.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any, Callable

import hiredis

from ..core import Mark
from ..routing import PARTITIONS, partition
from . import decode, encode

_PURGE_BATCH = 500  # keys unlinked at once
# KEYS: the marks. ARGV: per mark its value ("" deletes), then per mark its expiry (ms since the epoch).
_GROUP_COMMIT = """
local n = #KEYS
for i = 1, n do
  if ARGV[i] == '' then
    redis.call('DEL', KEYS[i])
  else
    redis.call('SET', KEYS[i], ARGV[i], 'PXAT', ARGV[n + i])
  end
end
return n
"""
_GROUP_COMMIT_SHA = hashlib.sha1(_GROUP_COMMIT.encode()).hexdigest()


class RedisMarkStore:
    lists_marks = False  # reads per ID only: see the module's docstring

    def __init__(self, url: str, namespace: str, timeout_seconds: float = 5.0):
        import redis.asyncio

        self._url, self._timeout = url, timeout_seconds
        self._prefix = f"finsec:{namespace}:"
        # One client per event loop: an actor has one; tests may run several loops in turn.
        self._clients: dict[int, redis.asyncio.Redis] = {}

    def _client(self):
        import redis.asyncio

        loop = id(asyncio.get_running_loop())
        if loop not in self._clients:
            self._clients[loop] = redis.asyncio.Redis.from_url(
                self._url, socket_timeout=self._timeout, socket_connect_timeout=self._timeout)
        return self._clients[loop]

    async def _execute(self, *command) -> Any:
        """One command, packed by hiredis, on one of the client's pooled connections."""
        from redis.exceptions import ResponseError

        pool = self._client().connection_pool
        connection = await pool.get_connection()
        try:
            await connection.send_packed_command(hiredis.pack_command(command))
            return await connection.read_response()
        except ResponseError:  # an error reply: the connection is still in step
            raise
        except BaseException:
            await connection.disconnect()  # a reply may still be in flight: never reuse the connection
            raise
        finally:
            await pool.release(connection)

    async def _group_commit(self, keys: list[str], args: list) -> None:
        """EVALSHA of the script; loads the script when the server does not know it (a new or restarted Redis)."""
        from redis.exceptions import NoScriptError

        command = ("EVALSHA", _GROUP_COMMIT_SHA, len(keys), *keys, *args)
        try:
            await self._execute(*command)
        except NoScriptError:
            await self._client().script_load(_GROUP_COMMIT)
            await self._execute(*command)

    def _key(self, sid: str) -> str:
        return f"{self._prefix}{{{partition(sid):03x}}}:m:{sid}"

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        values = await self._execute("MGET", *(self._key(sid) for sid in sids))
        marks = {sid: decode(raw) for sid, raw in zip(sids, values) if raw is not None}
        return {sid: mark for sid, mark in marks.items() if mark is not None}

    async def write(self, changes: dict[str, Mark | None]) -> set[str]:
        """All or nothing as far as the caller knows: a failed command is retried whole, and each change is
        idempotent, so a partly applied one does no harm."""
        if not changes:
            return set()
        now = time.time()
        values, expiries = [], []
        for mark in changes.values():
            live = mark is not None and mark.drop_at > now
            values.append(encode(mark) if live else b"")
            expiries.append(int(mark.drop_at * 1000) + 1 if live else 0)
        try:
            await self._group_commit([self._key(sid) for sid in changes], [*values, *expiries])
        except Exception:
            return set(changes)
        return set()

    async def scan(self, partitions: range) -> dict[str, Mark]:
        raise NotImplementedError("the Redis mark store is read per ID: a shard over it never settles")

    async def sweep(self, now: float) -> int:
        """Redis expires the marks itself. What this removes is the per-partition index an earlier version kept
        (`{<partition>}:i`, a sorted set with no expiry), so that an upgraded application does not hold it for
        ever: a few UNLINKs an hour. Returns how many it found."""
        removed = 0
        for start in range(0, PARTITIONS, _PURGE_BATCH):
            stop = min(PARTITIONS, start + _PURGE_BATCH)
            removed += await self._client().unlink(*(f"{self._prefix}{{{p:03x}}}:i" for p in range(start, stop)))
        return removed

    async def purge(self) -> int:
        client, purged, keys = self._client(), 0, []
        async for key in client.scan_iter(match=self._prefix + "*", count=1000):  # the namespace has no glob chars
            keys.append(key)
            if len(keys) >= _PURGE_BATCH:
                purged, keys = purged + await client.unlink(*keys), []
        return purged + (await client.unlink(*keys) if keys else 0)

    def kept_secret(self, generate: Callable[[], str]) -> str:
        """The application's cookie secret, created by whoever asks first (synchronous: the builder's)."""
        import redis

        client = redis.Redis.from_url(self._url, socket_timeout=self._timeout,
                                      socket_connect_timeout=self._timeout)
        try:
            key = self._prefix + "cookie-secret"
            client.set(key, generate(), nx=True)
            return client.get(key).decode()
        finally:
            client.close()
