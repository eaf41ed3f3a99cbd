"""Durable marks in Redis (`mark_store_url: redis://host:port/db`, `rediss://` for TLS; a password in the URL):
for clusters, and the store that outlives the Ray cluster, its head included.

- A record is one key with native expiry at its drop time: nothing needs sweeping. A record that is its head alone
  (a fence, an expired mark, a seed with nothing stored yet) is a string, the smallest; one with documents or
  verdicts is a hash whose fields are its parts (`records.py`), each named by its name as JSON (`"m"` the head), so
  a document or verdict sets its own field, never the whole record again (a string becomes a hash at its first
  part). A record an earlier version wrote whole (a string holding its documents) is read the same way.
- Reads are per ID (one script reads them all), always: a shard over Redis never settles (`lists_marks` is
  False), so it keeps no index to list. An index per partition cost more than the marks themselves: a sorted-set
  entry took Redis several times the CPU of the SET (docs/benchmarks.md), and a settle of a shard's
  share at the largest scale blocked its loop. A read of an ID the shard does not know is cheap for Redis.
- A shard batch's changes go out as one command (group commit): a server-side script that sets or deletes each
  mark. One command, not one per mark, because the client's cost is per command (packing it and awaiting its
  reply), where Redis's own per mark is small.
- Reads and writes are packed by hiredis (C), which redis-py's asyncio client does not use: its Python packer
  cost noticeably more CPU a mark.
- A change with owners is checked in the same script: the record's owner (the fifth field of its head's JSON,
  `open_in`) must be one of them, else the change is skipped and reported superseded.
- Keys are `finsec:<app namespace>:{<partition>}:m:<id>`: the hash tag keeps a partition's keys in one slot,
  ready for Redis Cluster. The marker (`finsec:<app namespace>:store`, no expiry) is read in the same script as
  the records.
- A Redis that may forget is refused (`durability_problem`): marks need `maxmemory-policy noeviction` (every
  mark has an expiry, so the volatile-* policies evict them as readily as allkeys-*) and an append-only file
  fsynced at least every second (`appendonly yes`, `appendfsync everysec` or `always`); snapshots alone lose
  every fence written since the last one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from typing import Any

import hiredis

from ..core import HEAD, Mark
from ..routing import PARTITIONS, partition
from .base import Beginning, Owners, StoreForgot, Written, marker
from .records import decode, joined, parts_of

__all__ = ["durability_problem", "RedisMarkStore"]

_PURGE_BATCH = 500  # keys unlinked at once

# KEYS: the marker, then the records. Returns the marker, then per record its hash as field/value pairs, or its
# value in one piece (a record that is its head alone, or one an earlier version wrote whole), or nil.
_READ = """
local out = {redis.call('GET', KEYS[1])}
for i = 2, #KEYS do
  local kind = redis.call('TYPE', KEYS[i]).ok
  if kind == 'hash' then
    out[i] = redis.call('HGETALL', KEYS[i])
  elseif kind == 'string' then
    out[i] = redis.call('GET', KEYS[i])
  else
    out[i] = false
  end
end
return out
"""
# KEYS: the marker, then the records. ARGV: per record a JSON object: `a` the owners its head may name (absent:
# any), `d` delete it, `h` replace it whole with this head alone (a string), `w` replace it whole with the fields `s`,
# else set the fields `s` ([field, value] pairs) and remove the fields `r` (a string becomes a hash whose head it is
# first); `x` its expiry (ms since the epoch). Returns whether the marker is gone (then an absent record's owner is
# not checked: the writer's memory is the proof), then the indices of the records skipped: another owner, or parts
# of a record that is not there.
_GROUP_COMMIT = """
local forgot = redis.call('EXISTS', KEYS[1]) == 0
local out = {forgot and 1 or 0}
for i = 2, #KEYS do
  local key, change = KEYS[i], cjson.decode(ARGV[i - 1])
  local kind = redis.call('TYPE', key).ok
  local apply = change.w or change.d or kind ~= 'none'
  if apply and change.a and not (forgot and kind == 'none') then
    local owner, held = '', false
    if kind == 'hash' then
      held = redis.call('HGET', key, '"m"')
    elseif kind == 'string' then
      held = redis.call('GET', key)
    end
    if held then
      local ok, record = pcall(cjson.decode, held)
      if ok and type(record) == 'table' and type(record[5]) == 'string' then owner = record[5] end
    end
    apply = false
    for _, accepted in ipairs(change.a) do
      if accepted == owner then apply = true end
    end
  end
  if not apply then
    out[#out + 1] = i - 1
  elseif change.d then
    redis.call('DEL', key)
  elseif change.h then
    redis.call('SET', key, change.h, 'PXAT', change.x)
  else
    if change.w then
      redis.call('DEL', key)
    elseif kind == 'string' then
      local head, left = redis.call('GET', key), redis.call('PTTL', key)
      redis.call('DEL', key)
      redis.call('HSET', key, '"m"', head)
      if left > 0 then redis.call('PEXPIRE', key, left) end
    end
    for _, pair in ipairs(change.s) do redis.call('HSET', key, pair[1], pair[2]) end
    if #change.r > 0 then redis.call('HDEL', key, unpack(change.r)) end
    if change.x then redis.call('PEXPIREAT', key, change.x) end
  end
end
return out
"""
_READ_SHA, _GROUP_COMMIT_SHA = (hashlib.sha1(script.encode()).hexdigest() for script in (_READ, _GROUP_COMMIT))


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
                self._url, socket_timeout=self._timeout, socket_connect_timeout=self._timeout
            )
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

    async def _script(self, script: str, sha: str, keys: list[str], args: list) -> Any:
        """EVALSHA of a script; loads it when the server does not know it (a new or restarted Redis)."""
        from redis.exceptions import NoScriptError

        command = ("EVALSHA", sha, len(keys), *keys, *args)
        try:
            return await self._execute(*command)
        except NoScriptError:
            await self._client().script_load(script)
            return await self._execute(*command)

    def _key(self, sid: str) -> str:
        return f"{self._prefix}{{{partition(sid):03x}}}:m:{sid}"

    @property
    def _marker(self) -> str:
        return self._prefix + "store"

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        present, *values = await self._script(_READ, _READ_SHA, [self._marker, *(self._key(sid) for sid in sids)], [])
        marks = {sid: _record(raw) for sid, raw in zip(sids, values, strict=False) if raw is not None}
        found = {sid: mark for sid, mark in marks.items() if mark is not None}
        if present is None:
            raise StoreForgot(found)
        return found

    async def write(
        self,
        changes: dict[str, Mark | None],
        owners: dict[str, Owners] | None = None,
        parts: dict[str, frozenset[str] | None] | None = None,
    ) -> Written:
        """All or nothing as far as the caller knows: a failed command is retried whole, and each change is
        idempotent, so a partly applied one does no harm (a retried change with owners finds its own)."""
        if not changes:
            return Written()
        args = [
            json.dumps(_change(mark, (owners or {}).get(sid), (parts or {}).get(sid)), separators=(",", ":"))
            for sid, mark in changes.items()
        ]
        try:
            forgot, *skipped = await self._script(
                _GROUP_COMMIT, _GROUP_COMMIT_SHA, [self._marker, *(self._key(sid) for sid in changes)], args
            )
        except Exception:
            return Written(failed=set(changes))
        ids = list(changes)
        superseded = {ids[i - 1] for i in skipped}
        if forgot and superseded and parts:  # parts of records the store forgot: the writer's memory writes them whole
            again = await self.write(
                {sid: changes[sid] for sid in superseded},
                {sid: owners[sid] for sid in superseded if sid in owners} if owners else {},
            )
            return Written(again.failed, again.superseded, forgot=True)
        return Written(superseded=superseded, forgot=bool(forgot))

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
                    return (
                        f"its eviction policy and persistence could not be read (CONFIG and INFO refused: "
                        f"{error}); if it never evicts and persists by other means, set "
                        "mark_store_durability_check to false"
                    )
                config = {
                    "maxmemory-policy": str(info.get("maxmemory_policy")),
                    "appendonly": "yes" if info.get("aof_enabled") else "no",
                }
        return durability_problem(config)

    def _sync_client(self):
        import redis

        return redis.Redis.from_url(self._url, socket_timeout=self._timeout, socket_connect_timeout=self._timeout)


def _change(mark: Mark | None, owners: Owners | None, changed: frozenset[str] | None) -> dict[str, Any]:
    """One record's change as the group-commit script reads it."""
    change: dict[str, Any] = {} if owners is None else {"a": ["" if owner is None else owner for owner in owners]}
    if mark is None:
        return {**change, "d": 1}
    written = parts_of(mark, changed)
    if changed is None and written.keys() == {HEAD}:  # a fence or a bare seed: a string, smaller than a hash
        head = written[HEAD]
        assert head is not None  # parts_of always writes a head
        return {**change, "w": 1, "h": head.decode(), "x": int(mark.drop_at * 1000) + 1}
    change |= {
        "s": [[json.dumps(name), value.decode()] for name, value in written.items() if value is not None],
        "r": [json.dumps(name) for name, value in written.items() if value is None],
    }
    if changed is None:
        change["w"] = 1
    if changed is None or HEAD in changed:
        # Written with its drop time: Redis drops one already past it at once. Judging "past" here would take this
        # node's wall clock, which can step, where the shard's session clock does not.
        change["x"] = int(mark.drop_at * 1000) + 1
    return change


def _record(raw: bytes | list[bytes]) -> Mark | None:
    """A record as the read script returns it: a hash's field/value pairs, or an earlier version's one value."""
    if isinstance(raw, bytes):
        return decode(raw)
    fields = {json.loads(field): value for field, value in zip(raw[::2], raw[1::2], strict=False)}
    head = fields.pop(HEAD, None)
    return None if head is None else joined(head, fields)


def durability_problem(config: dict[str, str]) -> str | None:
    """What in a Redis's configuration lets it forget marks, and the setting that fixes it; None when nothing."""
    problems = []
    if config.get("maxmemory-policy", "noeviction") != "noeviction":
        problems.append(
            f"maxmemory-policy is {config['maxmemory-policy']}, which evicts marks under memory "
            "pressure: set it to noeviction"
        )
    if config.get("appendonly") != "yes":
        problems.append("appendonly is no, so a restart loses every mark since the last snapshot: set appendonly yes")
    elif config.get("appendfsync", "everysec") not in ("always", "everysec"):
        problems.append(f"appendfsync is {config['appendfsync']}: set it to everysec (or always)")
    return "; ".join(problems) or None
