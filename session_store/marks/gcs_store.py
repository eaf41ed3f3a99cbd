"""Durable marks in Ray's GCS key-value store: the embedded default, with no external dependency.

A record's head (`records.py`) is one key per ID, `mark:<partition>:<id>` in the application's KV namespace, so
a shard that settles lists only the prefixes of the partitions it owns; a durable session's documents and verdicts
are keys of their own under `part:<partition>:<id's length>:<id>`, so a document writes one key, not the record.
The GCS API has no multi-put and no expiry: a group commit is concurrent puts, and lapsed marks are deleted by
`sweep` (their parts with them), which the reaper runs (never a serving shard), in small batches. A record written
whole first deletes the parts it replaces.
A write with owners reads the heads first and skips those another life holds: the GCS has no compare-and-set,
so the check and the write are two steps (a life that takes a record over between them is not seen).
Its write rate is limited (docs/benchmarks.md): the head's one GCS process serves them, beside Ray's own
control plane.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

from ..core import HEAD, Mark
from ..gcs_kv import gcs_kv
from ..routing import PARTITIONS, hex_prefixes, partition
from .base import Beginning, Owners, StoreForgot, Written, marker, refused
from .records import decode, joined, parts_of

__all__ = ["GcsMarkStore"]

_MARK = b"mark:"
_PART = b"part:"
_BATCH = 500  # keys read or decoded between yields to the event loop


def _sid(key: bytes) -> str:
    return key[len(_MARK) + 4 :].decode("utf-8", "backslashreplace")


def _parts_prefix(mark_key: bytes) -> bytes:
    """Where the parts of the record whose head is at `mark_key` are: `part:<partition>:<id's length>:<id>`."""
    partition_and_id = mark_key[len(_MARK) :]
    sid = partition_and_id[4:]
    return b"%s%s%d:%s" % (_PART, partition_and_id[:4], len(sid), sid)


def _split_part(key: bytes) -> tuple[bytes, str]:
    """A part's key as (its head's key, its name)."""
    partition_, rest = key[len(_PART) : len(_PART) + 4], key[len(_PART) + 4 :]
    length, _, rest = rest.partition(b":")
    sid, name = rest[: int(length)], rest[int(length) :]
    return _MARK + partition_ + sid, json.loads(name)


def _may_have_parts(head: bytes | None) -> bool:
    """Whether the record whose head this is may have parts: a durable session's (or one not read: b"?")."""
    if head is None:
        return False
    mark = decode(head) if head != b"?" else None
    return mark is None or mark.session is not None


class GcsMarkStore:
    lists_marks = True

    def __init__(self, kv_namespace: bytes, timeout_seconds: float = 5.0):
        self._namespace = kv_namespace
        self._timeout = timeout_seconds

    @staticmethod
    def _key(sid: str) -> bytes:
        return b"%s%03x:%s" % (_MARK, partition(sid), sid.encode("utf-8", "backslashreplace"))

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        client = gcs_kv()
        keys = {self._key(sid): sid for sid in sids}
        found = await client.async_internal_kv_multi_get([_MARKER, *keys], self._namespace, timeout=self._timeout)
        heads = {key: raw for key, raw in found.items() if raw is not None and key in keys}
        marks = {}
        for key, head in heads.items():
            mark = decode(head)
            if mark is not None and mark.session is not None:  # a durable session: its parts too
                mark = joined(head, await self._parts(key))
            if mark is not None:
                marks[keys[key]] = mark
        if found.get(_MARKER) is None:
            raise StoreForgot(marks)
        return marks

    async def _parts(self, mark_key: bytes) -> dict[str, bytes]:
        client = gcs_kv()
        prefix = _parts_prefix(mark_key)
        keys = await client.async_internal_kv_keys(prefix, self._namespace, timeout=self._timeout)
        found = await client.async_internal_kv_multi_get(keys, self._namespace, timeout=self._timeout) if keys else {}
        return {json.loads(key[len(prefix) :]): raw for key, raw in found.items() if raw is not None}

    async def write(
        self,
        changes: dict[str, Mark | None],
        owners: dict[str, Owners] | None = None,
        parts: dict[str, frozenset[str] | None] | None = None,
    ) -> Written:
        client = gcs_kv()
        superseded: set[str] = set()
        forgot, current = False, {}
        if owners:
            try:
                current = await client.async_internal_kv_multi_get(
                    [_MARKER, *(self._key(sid) for sid in owners)], self._namespace, timeout=self._timeout
                )
            except Exception:
                return Written(failed=set(changes))
            forgot = current.get(_MARKER) is None
            superseded = refused({sid: current.get(self._key(sid)) for sid in owners}, owners, forgot)

        async def put(key: bytes, value: bytes | None) -> None:
            if value is None:
                await client.async_internal_kv_del(key, False, self._namespace, timeout=self._timeout)
            else:
                await client.async_internal_kv_put(key, value, True, self._namespace, timeout=self._timeout)

        async def one(sid: str, mark: Mark | None) -> None:
            key = self._key(sid)
            changed = (parts or {}).get(sid)
            if forgot and current.get(key) is None:  # the store forgot it: the writer's memory writes it whole
                changed = None
            if (mark is None or changed is None) and _may_have_parts(current.get(key, b"?")):
                # Deleted, or written whole: its parts go first (where the head read before says there may be any).
                await client.async_internal_kv_del(_parts_prefix(key), True, self._namespace, timeout=self._timeout)
            if mark is None:
                await put(key, None)
                return
            prefix = _parts_prefix(key)
            await asyncio.gather(
                *(
                    put(key if name == HEAD else prefix + json.dumps(name).encode(), value)
                    for name, value in parts_of(mark, changed).items()
                )
            )

        written = [sid for sid in changes if sid not in superseded]
        results = await asyncio.gather(*(one(sid, changes[sid]) for sid in written), return_exceptions=True)
        return Written(
            {sid for sid, result in zip(written, results, strict=False) if isinstance(result, BaseException)},
            superseded,
            forgot,
        )

    async def _each_batch(self, partitions: range, kind: bytes = _MARK):
        """(key, raw) batches of the heads (or parts) of these partitions, one prefix listing at a time."""
        client = gcs_kv()
        for prefix in hex_prefixes(partitions):
            keys = await client.async_internal_kv_keys(kind + prefix.encode(), self._namespace, timeout=30)
            for start in range(0, len(keys), _BATCH):
                found = await client.async_internal_kv_multi_get(
                    keys[start : start + _BATCH], self._namespace, timeout=30
                )
                yield list(found.items())

    async def scan(self, partitions: range) -> dict[str, Mark]:
        heads: dict[bytes, bytes] = {}
        async for batch in self._each_batch(partitions):
            heads.update((key, raw) for key, raw in batch if raw is not None)
            await asyncio.sleep(0)  # a shard settles while it serves: let requests through between batches
        parts: dict[bytes, dict[str, bytes]] = defaultdict(dict)
        async for batch in self._each_batch(partitions, _PART):
            for key, raw in batch:
                if raw is not None:
                    head_key, name = _split_part(key)
                    parts[head_key][name] = raw
            await asyncio.sleep(0)
        marks: dict[str, Mark] = {}
        for n, (key, head) in enumerate(heads.items(), 1):
            if (mark := joined(head, parts.get(key, {}))) is not None:
                marks[_sid(key)] = mark
            if n % _BATCH == 0:
                await asyncio.sleep(0)
        return marks

    async def sweep(self, now: float) -> int:
        client = gcs_kv()

        def lapsed(raw: bytes | None) -> bool:
            mark = decode(raw) if raw is not None else None
            return mark is None or mark.drop_at <= now

        swept = 0
        async for batch in self._each_batch(range(PARTITIONS)):
            candidates = [key for key, raw in batch if lapsed(raw)]
            if not candidates:
                continue
            # Read again just before deleting: a shard may have fenced the ID anew since the listing.
            current = await client.async_internal_kv_multi_get(candidates, self._namespace, timeout=30)
            for key, raw in current.items():
                if raw is not None and lapsed(raw):
                    await client.async_internal_kv_del(key, False, self._namespace, timeout=self._timeout)
                    await client.async_internal_kv_del(_parts_prefix(key), True, self._namespace, timeout=self._timeout)
                    swept += 1
        return swept

    async def purge(self) -> int:
        """Every key of the application's namespace: marks, the cookie secret, the active-actor record."""
        return await gcs_kv().async_internal_kv_del(b"", True, self._namespace, timeout=30)

    def kept_secret(self, generate) -> str:
        """The application's cookie secret, created by whoever asks first (synchronous: the builder's)."""
        from ray.experimental import internal_kv

        internal_kv._internal_kv_put(_SECRET, generate().encode(), overwrite=False, namespace=self._namespace)
        return internal_kv._internal_kv_get(_SECRET, namespace=self._namespace).decode()

    def begin(self) -> Beginning:
        from ray.experimental import internal_kv

        if internal_kv._internal_kv_exists(_MARKER, namespace=self._namespace):
            return "continued"
        if any(internal_kv._internal_kv_list(prefix, namespace=self._namespace) for prefix in (_MARK, _SECRET)):
            return "forgot"
        existed = internal_kv._internal_kv_put(
            _MARKER, marker("deployment"), overwrite=False, namespace=self._namespace
        )
        return "continued" if existed else "new"

    def acknowledge_loss(self) -> None:
        from ray.experimental import internal_kv

        internal_kv._internal_kv_put(_MARKER, marker("acknowledged"), overwrite=True, namespace=self._namespace)

    async def marker_present(self) -> bool:
        return await gcs_kv().async_internal_kv_exists(_MARKER, self._namespace, timeout=self._timeout)

    def durability_problem(self) -> str | None:
        return None  # the GCS's own fault tolerance (its Redis) is the cluster's to configure


_SECRET = b"cookie-secret"
_MARKER = b"store"
