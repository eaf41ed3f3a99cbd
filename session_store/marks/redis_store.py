"""Durable marks in Redis (`mark_store_url: redis://host:port/db`, `rediss://` for TLS; a password in the URL):
for clusters, and the store that outlives the Ray cluster, its head included.

- A mark is one string key with native expiry at its drop time (`SET ... PXAT`): nothing needs sweeping.
- Reads are per ID (one MGET), always: a shard over Redis never settles (`lists_marks` is False), so it keeps
  no index to list. An index per partition cost more than the marks themselves: a sorted-set entry took Redis
  several times the CPU of the SET (`bench/results/state_scale.md`), and a settle of a shard's share at the
  largest scale blocked its loop. A read of an ID the shard does not know is cheap for Redis.
- A shard batch's changes go out as one command (group commit): a server-side script that sets or deletes each
  mark. One command, not one per mark, because the client's cost is per command (packing it and awaiting its
  reply), where Redis's own per mark is small.
- Reads and writes are packed by hiredis (C), which redis-py's asyncio client does not use: its Python packer
  cost noticeably more CPU a mark.
- A change with owners is checked in the same script: the record's owner (the fifth field of its JSON,
  `open_in`) must be one of them, else the change is skipped and reported superseded.
- Keys are `finsec:<app namespace>:{<partition>}:m:<id>`: the hash tag keeps a partition's keys in one slot,
  ready for Redis Cluster. The marker (`finsec:<app namespace>:store`, no expiry) is read in the same MGET as
  the marks.
- A Redis that may forget is refused (`durability_problem`): marks need `maxmemory-policy noeviction` (every
  mark has an expiry, so the volatile-* policies evict them as readily as allkeys-*) and an append-only file
  fsynced at least every second (`appendonly yes`, `appendfsync everysec` or `always`); snapshots alone lose
  every fence written since the last one.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from typing import Any

import hiredis

from ..core import Mark
from ..routing import PARTITIONS, partition
from . import Beginning, Owners, StoreForgot, Written, decode, encode, marker

_PURGE_BATCH = 500  # keys unlinked at once
# KEYS: the marks. ARGV: per mark its value ("" deletes), then per mark its expiry (ms since the epoch), then per
# mark the owners its record may have, comma-separated ("" for none), or "*" for any. Returns the skipped indices.
_GROUP_COMMIT = """
local n = #KEYS
local skipped = {}
for i = 1, n do
  local accepted = ARGV[2 * n + i]
  local apply = accepted == '*'
  if not apply then
    local owner, held = '', redis.call('GET', KEYS[i])
    if held then
      local ok, record = pcall(cjson.decode, held)
      if ok and type(record) == 'table' and type(record[5]) == 'string' then owner = record[5] end
    end
    apply = string.find(',' .. accepted .. ',', ',' .. owner .. ',', 1, true) ~= nil
  end
  if not apply then
    skipped[#skipped + 1] = i
  elseif ARGV[i] == '' then
    redis.call('DEL', KEYS[i])
  else
    redis.call('SET', KEYS[i], ARGV[i], 'PXAT', ARGV[n + i])
  end
end
return skipped
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

    async def _group_commit(self, keys: list[str], args: list) -> list[int]:
        """EVALSHA of the script; loads the script when the server does not know it (a new or restarted Redis)."""
        from redis.exceptions import NoScriptError

        command = ("EVALSHA", _GROUP_COMMIT_SHA, len(keys), *keys, *args)
        try:
            return await self._execute(*command)
        except NoScriptError:
            await self._client().script_load(_GROUP_COMMIT)
            return await self._execute(*command)

    def _key(self, sid: str) -> str:
        return f"{self._prefix}{{{partition(sid):03x}}}:m:{sid}"

    @property
    def _marker(self) -> str:
        return self._prefix + "store"

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        present, *values = await self._execute("MGET", self._marker, *(self._key(sid) for sid in sids))
        marks = {sid: decode(raw) for sid, raw in zip(sids, values) if raw is not None}
        found = {sid: mark for sid, mark in marks.items() if mark is not None}
        if present is None:
            raise StoreForgot(found)
        return found

    async def write(self, changes: dict[str, Mark | None], owners: dict[str, Owners] | None = None) -> Written:
        """All or nothing as far as the caller knows: a failed command is retried whole, and each change is
        idempotent, so a partly applied one does no harm (a retried change with owners finds its own)."""
        if not changes:
            return Written()
        # Every mark is written with its drop time: Redis drops one already past it at once. Judging "past" here
        # would take this node's wall clock, which can step, where the shard's session clock does not.
        values = [b"" if mark is None else encode(mark) for mark in changes.values()]
        expiries = [0 if mark is None else int(mark.drop_at * 1000) + 1 for mark in changes.values()]
        accepted = ["*" if owners is None or sid not in owners else ",".join(o or "" for o in owners[sid])
                    for sid in changes]
        try:
            skipped = await self._group_commit([self._key(sid) for sid in changes], [*values, *expiries, *accepted])
        except Exception:
            return Written(failed=set(changes))
        ids = list(changes)
        return Written(superseded={ids[i - 1] for i in skipped})

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
        with self._sync_client() as client:
            key = self._prefix + "cookie-secret"
            client.set(key, generate(), nx=True)
            return client.get(key).decode()

    def begin(self) -> Beginning:
        with self._sync_client() as client:
            if client.exists(self._marker):
                return "continued"
            if next(client.scan_iter(match=self._prefix + "*", count=1000), None) is not None:
                return "forgot"
            return "new" if client.set(self._marker, marker("deployment"), nx=True) else "continued"

    def acknowledge_loss(self) -> None:
        with self._sync_client() as client:
            client.set(self._marker, marker("acknowledged"))

    async def marker_present(self) -> bool:
        return bool(await self._execute("EXISTS", self._marker))

    def durability_problem(self) -> str | None:
        """Read with CONFIG GET, or INFO where a managed Redis refuses CONFIG (synchronous: the builder's, and
        the reaper's in a thread)."""
        from redis.exceptions import ResponseError

        with self._sync_client() as client:
            try:
                config = client.config_get("maxmemory-policy", "appendonly", "appendfsync")
            except ResponseError:
                try:
                    info = {**client.info("memory"), **client.info("persistence")}
                except ResponseError as error:
                    return (f"its eviction policy and persistence could not be read (CONFIG and INFO refused: "
                            f"{error}); if it never evicts and persists by other means, set "
                            "mark_store_durability_check to false")
                config = {"maxmemory-policy": str(info.get("maxmemory_policy")),
                          "appendonly": "yes" if info.get("aof_enabled") else "no"}
        return durability_problem(config)

    def _sync_client(self):
        import redis

        return redis.Redis.from_url(self._url, socket_timeout=self._timeout, socket_connect_timeout=self._timeout)


def durability_problem(config: dict[str, str]) -> str | None:
    """What in a Redis's configuration lets it forget marks, and the setting that fixes it; None when nothing."""
    problems = []
    if config.get("maxmemory-policy", "noeviction") != "noeviction":
        problems.append(f"maxmemory-policy is {config['maxmemory-policy']}, which evicts marks under memory "
                        "pressure: set it to noeviction")
    if config.get("appendonly") != "yes":
        problems.append("appendonly is no, so a restart loses every mark since the last snapshot: set appendonly "
                        "yes")
    elif config.get("appendfsync", "everysec") not in ("always", "everysec"):
        problems.append(f"appendfsync is {config['appendfsync']}: set it to everysec (or always)")
    return "; ".join(problems) or None
