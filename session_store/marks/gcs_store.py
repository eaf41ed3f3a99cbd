"""Durable marks in Ray's GCS key-value store: the embedded default, with no external dependency.

One key per ID, `mark:<partition>:<id>` in the application's KV namespace, so a shard that settles lists only the
prefixes of the partitions it owns. The GCS API has no multi-put and no expiry: a group commit is concurrent
puts, and lapsed marks are deleted by `sweep`, which the reaper runs (never a serving shard), in small batches.
A write with owners reads the records first and skips those another life holds: the GCS has no compare-and-set,
so the check and the write are two steps (a life that takes a record over between them is not seen).
Its write rate is limited (bench/results/state_scale.md): the head's one GCS process serves them, beside Ray's own
control plane.
"""

from __future__ import annotations

import asyncio

from ..app_actors import gcs_kv
from ..core import Mark
from ..routing import PARTITIONS, hex_prefixes, partition
from . import Beginning, Owners, StoreForgot, Written, decode, encode, marker, refused

_MARK = b"mark:"
_BATCH = 500  # keys read or decoded between yields to the event loop


def _sid(key: bytes) -> str:
    return key[len(_MARK) + 4:].decode("utf-8", "backslashreplace")


class GcsMarkStore:
    lists_marks = True

    def __init__(self, kv_namespace: bytes, timeout_seconds: float = 5.0):
        self._namespace = kv_namespace
        self._timeout = timeout_seconds

    @staticmethod
    def _key(sid: str) -> bytes:
        return b"%s%03x:%s" % (_MARK, partition(sid), sid.encode("utf-8", "backslashreplace"))

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        keys = {self._key(sid): sid for sid in sids}
        found = await gcs_kv().async_internal_kv_multi_get([_MARKER, *keys], self._namespace, timeout=self._timeout)
        marks = {keys[key]: decode(raw) for key, raw in found.items() if raw is not None and key in keys}
        marks = {sid: mark for sid, mark in marks.items() if mark is not None}
        if found.get(_MARKER) is None:
            raise StoreForgot(marks)
        return marks

    async def write(self, changes: dict[str, Mark | None], owners: dict[str, Owners] | None = None) -> Written:
        client = gcs_kv()
        superseded: set[str] = set()
        if owners:
            try:
                current = await client.async_internal_kv_multi_get([self._key(sid) for sid in owners],
                                                                   self._namespace, timeout=self._timeout)
            except Exception:
                return Written(failed=set(changes))
            superseded = refused({sid: current.get(self._key(sid)) for sid in owners}, owners)

        async def one(sid: str, mark: Mark | None) -> None:
            if mark is None:
                await client.async_internal_kv_del(self._key(sid), False, self._namespace, timeout=self._timeout)
            else:
                await client.async_internal_kv_put(self._key(sid), encode(mark), True, self._namespace,
                                                   timeout=self._timeout)

        written = [sid for sid in changes if sid not in superseded]
        results = await asyncio.gather(*(one(sid, changes[sid]) for sid in written), return_exceptions=True)
        return Written({sid for sid, result in zip(written, results) if isinstance(result, BaseException)}, superseded)

    async def _each_batch(self, partitions: range):
        """(key, raw) batches of the marks of these partitions, one prefix listing at a time."""
        client = gcs_kv()
        for prefix in hex_prefixes(partitions):
            keys = await client.async_internal_kv_keys(_MARK + prefix.encode(), self._namespace, timeout=30)
            for start in range(0, len(keys), _BATCH):
                found = await client.async_internal_kv_multi_get(keys[start : start + _BATCH], self._namespace,
                                                                 timeout=30)
                yield list(found.items())

    async def scan(self, partitions: range) -> dict[str, Mark]:
        marks: dict[str, Mark] = {}
        async for batch in self._each_batch(partitions):
            for key, raw in batch:
                if raw is not None and (mark := decode(raw)) is not None:
                    marks[_sid(key)] = mark
            await asyncio.sleep(0)  # a shard settles while it serves: let requests through between batches
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
        existed = internal_kv._internal_kv_put(_MARKER, marker("deployment"), overwrite=False,
                                               namespace=self._namespace)
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
