"""Durable marks in Redis (`mark_store_url: redis://host:port/db`, `rediss://` for TLS; a password in the URL):
for clusters, and the store that outlives the Ray cluster, its head included.

- A mark is one string key with native expiry at its drop time (`SET ... PXAT`): nothing needs sweeping.
- Each partition also has a sorted set of its IDs by drop time, so a shard that settles reads only the
  partitions it owns (the members it lists are those not yet lapsed). The reaper's hourly sweep trims lapsed
  members (`ZREMRANGEBYSCORE`); writes do not, which would cost Redis a command more per mark.
- A shard batch's changes go out as one command (group commit): a server-side script that sets or deletes
  each mark and its index entry. One command, not two per mark, because the client's cost is per command
  (packing it and awaiting its reply: ~30 us each here), where Redis's own is ~1 us; and packed by hiredis
  (C), which redis-py's asyncio client does not use: its Python packer cost ~6 us a mark. Reads are one MGET.
- Keys are `finsec:<app namespace>:{<partition>}:...`: the hash tag keeps a partition's keys in one slot, ready
  for Redis Cluster.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Callable

import hiredis

from ..core import Mark
from ..routing import PARTITIONS, partition
from . import decode, encode

_BATCH = 500  # IDs fetched or decoded between yields to the event loop
_PARTITIONS_PER_ROUND = 16  # sorted sets listed in one pipeline (at 4M marks, ~16,000 IDs parsed at once)
# KEYS: n mark keys, then their n index keys. ARGV: per change its value ("" deletes), its expiry (ms since
# the epoch), its drop time and its ID, each as n values in that order.
_GROUP_COMMIT = """
local n = #KEYS / 2
for i = 1, n do
  if ARGV[i] == '' then
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[n + i], ARGV[3 * n + i])
  else
    redis.call('SET', KEYS[i], ARGV[i], 'PXAT', ARGV[n + i])
    redis.call('ZADD', KEYS[n + i], ARGV[2 * n + i], ARGV[3 * n + i])
  end
end
return n
"""
_GROUP_COMMIT_SHA = hashlib.sha1(_GROUP_COMMIT.encode()).hexdigest()


class RedisMarkStore:
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

    async def _group_commit(self, keys: list[str], args: list) -> None:
        """EVALSHA of the script, packed by hiredis on one of the client's pooled connections; loads the script
        when the server does not know it (a new or restarted Redis)."""
        from redis.exceptions import NoScriptError

        pool = self._client().connection_pool
        packed = hiredis.pack_command(("EVALSHA", _GROUP_COMMIT_SHA, len(keys), *keys, *args))
        for attempt in range(2):
            connection = await pool.get_connection()
            try:
                await connection.send_packed_command(packed)
                await connection.read_response()
                return
            except NoScriptError:
                if attempt:
                    raise
            except BaseException:
                await connection.disconnect()  # a reply may still be in flight: never reuse the connection
                raise
            finally:
                await pool.release(connection)
            await self._client().script_load(_GROUP_COMMIT)

    def _key(self, sid: str, part: int | None = None) -> str:
        return f"{self._prefix}{{{partition(sid) if part is None else part:03x}}}:m:{sid}"

    def _index(self, part: int) -> str:
        return f"{self._prefix}{{{part:03x}}}:i"

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        values = await self._client().mget([self._key(sid) for sid in sids])
        marks = {sid: decode(raw) for sid, raw in zip(sids, values) if raw is not None}
        return {sid: mark for sid, mark in marks.items() if mark is not None}

    async def write(self, changes: dict[str, Mark | None]) -> set[str]:
        """All or nothing as far as the caller knows: a failed command is retried whole, and each change is
        idempotent, so a partly applied one does no harm."""
        if not changes:
            return set()
        now = time.time()
        marks, indexes, values, expiries, drops = [], [], [], [], []
        for sid, mark in changes.items():
            part = partition(sid)
            marks.append(self._key(sid, part))
            indexes.append(self._index(part))
            live = mark is not None and mark.drop_at > now
            values.append(encode(mark) if live else b"")
            expiries.append(int(mark.drop_at * 1000) + 1 if live else 0)
            drops.append(mark.drop_at if live else 0)
        try:
            await self._group_commit(marks + indexes, [*values, *expiries, *drops, *changes])
        except Exception:
            return set(changes)
        return set()

    async def _ids(self, partitions: range, now: float) -> list[str]:
        ids: list[str] = []
        parts = list(partitions)
        for start in range(0, len(parts), _PARTITIONS_PER_ROUND):
            pipe = self._client().pipeline(transaction=False)
            for part in parts[start : start + _PARTITIONS_PER_ROUND]:
                pipe.zrangebyscore(self._index(part), now, "+inf")
            for members in await pipe.execute():
                ids.extend(m.decode() for m in members)
        return ids

    async def scan(self, partitions: range) -> dict[str, Mark]:
        ids = await self._ids(partitions, time.time())
        marks: dict[str, Mark] = {}
        for start in range(0, len(ids), _BATCH):
            marks.update(await self.read(ids[start : start + _BATCH]))
            await asyncio.sleep(0)  # a shard settles while it serves: let requests through between batches
        return marks

    async def sweep(self, now: float) -> int:
        """The marks expire by themselves; this trims the partitions' sorted sets of lapsed IDs."""
        trimmed = 0
        for start in range(0, PARTITIONS, _PARTITIONS_PER_ROUND):
            pipe = self._client().pipeline(transaction=False)
            for part in range(start, min(PARTITIONS, start + _PARTITIONS_PER_ROUND)):
                pipe.zremrangebyscore(self._index(part), "-inf", now)
            trimmed += sum(await pipe.execute())
        return trimmed

    async def purge(self) -> int:
        client, purged, keys = self._client(), 0, []
        async for key in client.scan_iter(match=self._prefix + "*", count=1000):  # the namespace has no glob chars
            keys.append(key)
            if len(keys) >= _BATCH:
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
